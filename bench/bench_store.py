"""Ingest throughput of the local CAS against its two ingredients.

    python bench/bench_store.py [--mb 256] [--runs 3] [--dir DIR] [--keep]

Generates about `--mb` MB of build-output-like files (4 KiB - 4 MiB, log-uniform sizes): most
are slices of real shared libraries and archives from the system library directory (what object
files and binaries look like to a compressor), the rest a mix of random bytes and
source/assembly-like text. It then times, on warm page cache, the median of `--runs` runs of:

- `LocalZstdStore.put_file` into an empty store (read + blake3 + zstd level 3 + atomic write),
- the same with one thread per CPU (an engine stores outputs of parallel actions concurrently),
- `put_file` again into the full store (the dedup path: read + blake3 + exists),
- blake3 alone (read + hash) and zstd level 3 alone (read + compress, output discarded).

Throughput is uncompressed MB (10^6 bytes) per second of wall time.
"""
from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import blake3  # noqa: E402
import zstandard  # noqa: E402

from mcpp.cas.digest import digest_file  # noqa: E402
from mcpp.cas.local_store import LocalZstdStore  # noqa: E402

LIB_DIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"]
MIN_SIZE, MAX_SIZE = 4 << 10, 4 << 20


def real_binaries(limit_bytes: int) -> list[bytes]:
    """Contents of system .so/.a/.o files, up to `limit_bytes` in total."""
    found: list[bytes] = []
    total = 0
    for top in LIB_DIRS:
        for d, _, names in os.walk(top):
            for n in sorted(names):
                if not (n.endswith((".a", ".o")) or ".so" in n):
                    continue
                p = os.path.join(d, n)
                try:
                    if os.path.islink(p) or os.path.getsize(p) < MIN_SIZE:
                        continue
                    with open(p, "rb") as f:
                        found.append(f.read(MAX_SIZE * 2))
                except OSError:
                    continue
                total += len(found[-1])
                if total >= limit_bytes:
                    return found
    return found


def synthetic(rng: random.Random, n: int) -> bytes:
    """Random bytes interleaved with repetitive source/assembly-like text."""
    words = [b"mov", b"rax", b"rbx", b"call", b"_ZNSt6vectorIiSaIiEE9push_backEOi", b"std::string",
             b"template<typename T>", b"return", b"#include <vector>", b"0x0000000000401000"]
    parts, size = [], 0
    while size < n:
        if rng.random() < 0.4:
            part = rng.randbytes(rng.randint(256, 8192))
        else:
            part = b" ".join(rng.choice(words) for _ in range(rng.randint(50, 800))) + b"\n"
        parts.append(part)
        size += len(part)
    return b"".join(parts)[:n]


def generate(directory: str, total_mb: int, seed: int = 1) -> tuple[list[str], int]:
    rng = random.Random(seed)
    target = total_mb * 10**6
    corpus = b"".join(real_binaries(min(target, 400 * 10**6)))
    paths, total, i = [], 0, 0
    while total < target:
        size = int(math.exp(rng.uniform(math.log(MIN_SIZE), math.log(MAX_SIZE))))
        if len(corpus) > size and rng.random() < 0.7:
            start = rng.randrange(len(corpus) - size)
            data = corpus[start : start + size]
        else:
            data = synthetic(rng, size)
        # Make every file distinct so the store cannot deduplicate the benchmark away.
        data = i.to_bytes(8, "little") + data[8:]
        p = os.path.join(directory, f"f{i:05d}.bin")
        with open(p, "wb") as f:
            f.write(data)
        paths.append(p)
        total += len(data)
        i += 1
    return paths, total


def timed(fn: Callable[[], object], runs: int, before: Callable[[], object] | None = None) -> float:
    times = []
    for _ in range(runs):
        if before:
            before()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def create_cost_us(directory: str, n: int = 200) -> float:
    """Per-file cost of the metadata a store write needs (mkstemp, write, close, rename)."""
    d = tempfile.mkdtemp(dir=directory)
    t0 = time.perf_counter()
    for i in range(n):
        fd, tmp = tempfile.mkstemp(dir=d)
        os.write(fd, b"x" * 4096)
        os.close(fd)
        os.replace(tmp, os.path.join(d, f"f{i}"))
    cost = (time.perf_counter() - t0) / n * 1e6
    shutil.rmtree(d)
    return cost


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=int, default=256, help="total data in MB (default 256)")
    ap.add_argument("--runs", type=int, default=3, help="runs per measurement; the median is shown")
    ap.add_argument("--dir", help="work directory (default: a temporary one, removed afterwards)")
    ap.add_argument("--keep", action="store_true", help="keep the generated data and store")
    args = ap.parse_args()

    work = args.dir or tempfile.mkdtemp(prefix="mcpp-bench-store-")
    data_dir, cas_dir = os.path.join(work, "data"), os.path.join(work, "cas")
    os.makedirs(data_dir, exist_ok=True)
    try:
        paths, total = generate(data_dir, args.mb)
        for p in paths:  # warm the page cache so every variant reads from memory
            with open(p, "rb") as f:
                while f.read(1 << 22):
                    pass
        jobs = os.cpu_count() or 1

        def fresh_store() -> None:
            # Empty the store but keep its 256 shard directories, as in any home in use.
            for d, _, names in os.walk(cas_dir):
                for n in names:
                    os.unlink(os.path.join(d, n))
            for i in range(256):
                os.makedirs(os.path.join(cas_dir, f"{i:02x}"), exist_ok=True)

        def put_all() -> None:
            store = LocalZstdStore(cas_dir)
            for p in paths:
                store.put_file(p)

        def put_all_parallel() -> None:
            store = LocalZstdStore(cas_dir)
            with ThreadPoolExecutor(jobs) as pool:
                list(pool.map(store.put_file, paths))

        def hash_all() -> None:
            for p in paths:
                digest_file(p)

        cctx = zstandard.ZstdCompressor(level=3)

        def compress_all() -> None:
            for p in paths:
                with open(p, "rb") as f:
                    cctx.compress(f.read())

        rows = [
            ("LocalZstdStore.put_file (new blobs)", timed(put_all, args.runs, fresh_store)),
            (f"LocalZstdStore.put_file, {jobs} threads", timed(put_all_parallel, args.runs, fresh_store)),
            ("LocalZstdStore.put_file (already stored)", timed(put_all, args.runs)),
            ("blake3 alone (read + hash)", timed(hash_all, args.runs)),
            ("zstd level 3 alone (read + compress)", timed(compress_all, args.runs)),
        ]
        stored = sum(
            os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(cas_dir) for n in ns
        )
        print(f"# bench_store  {datetime.datetime.now().isoformat(timespec='seconds')}  "
              f"nproc={jobs}  {platform.machine()}  python {platform.python_version()}  "
              f"blake3 {getattr(blake3, '__version__', '?')}  zstandard {zstandard.__version__}")
        print(f"# data: {len(paths)} files, {total / 1e6:.1f} MB, sizes 4 KiB-4 MiB; "
              f"stored {stored / 1e6:.1f} MB (ratio {total / max(stored, 1):.2f}x); "
              f"median of {args.runs} runs, warm page cache")
        print(f"# file system: creating + writing + renaming one 4 KiB file costs "
              f"{create_cost_us(work):.0f} us here")
        print(f"{'variant':<44} {'seconds':>8} {'MB/s':>8}")
        for name, secs in rows:
            print(f"{name:<44} {secs:>8.3f} {total / 1e6 / secs:>8.1f}")
    finally:
        if not args.keep and not args.dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
