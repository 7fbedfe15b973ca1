"""Console-script entry point: `mcpp = engine.entry:main`.

Imports nothing heavy before the no-op fast path has had its chance (see `engine/noop.py`).
"""
from __future__ import annotations

import sys


def main() -> None:
    from .noop import try_fast_noop

    try:
        done = try_fast_noop(sys.argv[1:])
    except Exception:  # noqa: BLE001 - only a shortcut: anything odd takes the full build, which says why
        done = False
    if done:
        sys.exit(0)
    from .cli import main as cli_main

    cli_main()
