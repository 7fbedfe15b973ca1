"""Test data helpers for the storage-layer tests (imported by the test modules)."""
from __future__ import annotations

import os
import random


def pseudo_random(n: int, seed: int = 0) -> bytes:
    """Incompressible-ish bytes, reproducible and fast (os.urandom would do, but seeded helps)."""
    return random.Random(seed).randbytes(n)


def object_like(n: int, seed: int = 0) -> bytes:
    """A compressible mix of random and repeated text, like an object file."""
    chunk = pseudo_random(4096, seed) + b"_ZN4mcpp6engine5buildEv\x00" * 200
    return (chunk * (n // len(chunk) + 1))[:n]


def flip_byte(path: str | os.PathLike[str], offset: int) -> None:
    os.chmod(path, 0o644)
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0xFF]))
