"""Which files of a package are tests: every C or C++ source under a test directory (`tests/`
and `test/`, or those `[test] dirs` names), in any subdirectory, becomes one test binary, named
by its path under that directory without the extension (`tests/unit/strings.cpp` is the test
`unit/strings`), so suites grouped in directories (a doctest-style `tests/unit/`,
`tests/regression/`) need no manifest entries.

A source that looks like a test (under a directory named like one, or named `*_test.cc`,
`test_*.c`) that neither a test directory nor a target takes is named in a warning by
`mcpp test`: a suite that silently runs nothing passes CI.
"""
from __future__ import annotations

import fnmatch
import os

from ..core import containment
from ..core.conventions import C_EXTS, CXX_EXTS, HEADER_EXTS, Role
from ..core.errors import McppError
from ..core.paths import PkgPath
from ..manifest import globs
from .model import Package
from .sources import Source
from .targets import owned_sources

DEFAULT_TEST_DIRS = ("tests", "test")
# Directory names and file-name patterns of test sources, for the warning about undiscovered ones.
TEST_LIKE_DIRS = frozenset(("test", "tests", "testing", "unittest", "unittests", "unit_tests"))
TEST_LIKE_NAMES = ("*_test.*", "*_tests.*", "*_unittest.*", "test_*.*", "*-test.*")
# Never walked for the warning: the build's outputs, and vendored or version-control trees.
_SKIPPED = frozenset(("target", "node_modules", "third_party", "vendor", "build"))


def test_dirs(pkg: Package) -> tuple[str, ...]:
    """The package's test directories, package-relative: `[test] dirs`, else `tests` and `test`."""
    dirs = pkg.manifest.test_dirs
    return tuple(dirs) if dirs is not None else DEFAULT_TEST_DIRS


def test_name(path: str, dirs: tuple[str, ...] = DEFAULT_TEST_DIRS) -> str:
    """`tests/unit/strings.cpp` -> `unit/strings`: the path under its (deepest) test directory."""
    under = [d for d in dirs if path.startswith(d.rstrip("/") + "/")]
    base = max(under, key=len) if under else os.path.dirname(path)
    return os.path.splitext(os.path.relpath(path, base))[0].replace(os.sep, "/")


def package_tests(pkg: Package, expand: globs.Expand = globs.expand) -> list[Source]:
    """The package's test sources, in a stable order. A source a declared target builds (a
    `kind = "test"` target's `main` or `sources`, compiled with that target's settings) is not a
    test of its own. Two sources of one name (a C and a C++ test, or `tests/a.c` and `test/a.c`)
    would write one binary, so that is an error naming both."""
    dirs = test_dirs(pkg)
    roots = [d for d in dirs if os.path.isdir(os.path.join(pkg.root, d))]
    if not roots:
        return []
    for d in roots:  # a test directory that is a link leading out of the package is refused
        containment.check(os.path.join(pkg.root, d), pkg.root, shown=f"test directory `{d}` of `{pkg.name}`")
    claimed = {s.path for t in pkg.manifest.targets for s in owned_sources(pkg, t, expand)}
    found: dict[str, Source] = {}
    seen: set[str] = set()
    for d in roots:
        for rel in _sources_under(pkg.root, d):
            if rel in claimed or rel in seen:
                continue
            seen.add(rel)
            name = test_name(rel, dirs)
            if name in found:
                raise McppError(f"the tests `{found[name].path}` and `{rel}` of package `{pkg.name}` would both "
                                f"build the test binary `{name}`; rename one of them")
            ext = os.path.splitext(rel)[1]
            found[name] = Source(PkgPath(rel), Role.C if ext in C_EXTS else Role.CXX)
    return list(found.values())


def _sources_under(root: str, d: str) -> list[str]:
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, d)):
        dirnames.sort()
        for n in sorted(filenames):
            ext = os.path.splitext(n)[1]
            if ext in C_EXTS or ext in CXX_EXTS:
                out.append(os.path.relpath(os.path.join(dirpath, n), root).replace(os.sep, "/"))
    return out


def undiscovered_tests(pkg: Package, taken: set[str]) -> list[str]:
    """Package-relative C and C++ sources that look like tests (under a directory named like
    one, or named like one) and are not in `taken` (the package's tests, its targets' sources and
    its library sources). Walked once per `mcpp test`, skipping hidden directories and `target/`."""
    out = []
    for dirpath, dirnames, filenames in os.walk(pkg.root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIPPED
                             and not os.path.isfile(os.path.join(dirpath, d, "mcpp.toml")))
        rel_dir = os.path.relpath(dirpath, pkg.root).replace(os.sep, "/")
        in_test_dir = any(part in TEST_LIKE_DIRS for part in rel_dir.split("/"))
        for n in sorted(filenames):
            ext = os.path.splitext(n)[1]
            if ext not in C_EXTS and ext not in CXX_EXTS:
                continue
            rel = n if rel_dir == "." else f"{rel_dir}/{n}"
            if rel in taken:
                continue
            if in_test_dir or any(fnmatch.fnmatchcase(n, p) for p in TEST_LIKE_NAMES):
                out.append(rel)
    return out


def test_headers(pkg: Package) -> list[str]:
    """Absolute paths of the headers under the package's test directories (a test framework's
    header, a suite's shared helpers): a test's compile may include them, nothing else of the
    package may."""
    out = []
    for d in test_dirs(pkg):
        for dirpath, dirnames, filenames in os.walk(os.path.join(pkg.root, d)):
            out += [os.path.join(dirpath, n) for n in filenames if os.path.splitext(n)[1] in HEADER_EXTS]
    return sorted(set(out))
