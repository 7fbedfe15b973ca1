"""Maps the repository's top-level folders onto the installed `mcpp.` namespace.

`engine/`, `cas/`, `sandbox/` and `starlark_rules/` stay where a reader expects them, while the
installed import names are `mcpp.engine`, `mcpp.cas`, ...: a wheel that put a top-level `engine`
into site-packages would collide with any other distribution of that name. The metadata lives in
pyproject.toml; only the package list, computed from the tree, is here.
"""
from setuptools import find_packages, setup

TOP_LEVEL = ("engine", "cas", "sandbox", "starlark_rules")

setup(
    packages=[f"mcpp.{name}" for name in find_packages(include=[f"{t}*" for t in TOP_LEVEL])],
    package_dir={f"mcpp.{t}": t for t in TOP_LEVEL},
)
