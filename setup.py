"""Maps the repository's top-level folders onto the installed `mcpp.` namespace.

`engine/`, `cas/`, `sandbox/` and `starlark_rules/` stay where a reader expects them, while the
installed import names are `mcpp.engine`, `mcpp.cas`, ...: a wheel that put a top-level `engine`
into site-packages would collide with any other distribution of that name. The metadata lives in
pyproject.toml; only the package list, computed from the tree, is here.

The folders of `starlark_rules/` hold data (Starlark, TOML), no Python; to Python each is still an
importable namespace package, so each is listed (setuptools warns of any it would leave out) and
its files are package data (pyproject.toml).
"""
from setuptools import find_namespace_packages, find_packages, setup

TOP_LEVEL = ("engine", "cas", "sandbox", "starlark_rules")

CODE = find_packages(include=[f"{t}*" for t in TOP_LEVEL])
DATA = [p for p in find_namespace_packages(include=["starlark_rules.*"]) if all(s.isidentifier() for s in p.split("."))]

setup(
    packages=[f"mcpp.{name}" for name in sorted(set(CODE + DATA))],
    package_dir={f"mcpp.{t}": t for t in TOP_LEVEL},
)
