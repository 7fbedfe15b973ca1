"""Which files of a package are tests: every C or C++ source under `tests/`, in any
subdirectory, becomes one test binary, named by its path under `tests/` without the extension
(`tests/unit/strings.cpp` is the test `unit/strings`), so suites grouped in directories (a
doctest-style `tests/unit/`, `tests/regression/`) need no manifest entries.
"""
from __future__ import annotations

import os

from ..core.conventions import C_EXTS, CXX_EXTS, HEADER_EXTS, Role
from ..core.errors import McppError
from ..core.paths import PkgPath
from ..manifest import globs
from .model import Package
from .sources import Source
from .targets import owned_sources

TESTS_DIR = "tests"


def test_name(path: str) -> str:
    """`tests/unit/strings.cpp` -> `unit/strings`."""
    return os.path.splitext(path[len(TESTS_DIR) + 1:])[0]


def package_tests(pkg: Package, expand: globs.Expand = globs.expand) -> list[Source]:
    """The package's test sources, in a stable order. A source a declared target builds (a
    `kind = "test"` target's `main` or `sources`, compiled with that target's settings) is not a
    test of its own. A C and a C++ test of the same name would write one binary, so that is an
    error naming both."""
    root = os.path.join(pkg.root, TESTS_DIR)
    if not os.path.isdir(root):
        return []
    claimed = {s.path for t in pkg.manifest.targets for s in owned_sources(pkg, t, expand)}
    found: dict[str, Source] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for n in sorted(filenames):
            ext = os.path.splitext(n)[1]
            if ext not in C_EXTS and ext not in CXX_EXTS:
                continue
            rel = os.path.relpath(os.path.join(dirpath, n), pkg.root).replace(os.sep, "/")
            if rel in claimed:
                continue
            name = test_name(rel)
            if name in found:
                raise McppError(f"the tests `{found[name].path}` and `{rel}` of package `{pkg.name}` would both "
                                f"build the test binary `{name}`; rename one of them")
            found[name] = Source(PkgPath(rel), Role.C if ext in C_EXTS else Role.CXX)
    return list(found.values())


def test_headers(pkg: Package) -> list[str]:
    """Absolute paths of the headers under the package's `tests/` (a test framework's header, a
    suite's shared helpers): a test's compile may include them, nothing else of the package may."""
    root = os.path.join(pkg.root, TESTS_DIR)
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        out += [os.path.join(dirpath, n) for n in filenames if os.path.splitext(n)[1] in HEADER_EXTS]
    return sorted(out)
