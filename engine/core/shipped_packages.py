"""Packages shipped with mcpp itself, named under the reserved namespace `mcpp`.

`[build-dependencies.mcpp] plugins = { version = "0.3.0", features = ["rules-cuda"], host-module = true }`
names the rule package `mcpp:plugins` without a `path`: its manifest and Starlark files are part of
the installed engine (`starlark_rules/plugins/`), so a project that wants a CUDA island writes one
edge and nothing else. Everything else about such an entry (its version requirement, its features,
`host-module`) is read exactly as for a path dependency; only where the package lives differs.
"""
from __future__ import annotations

import os

from mcpp import starlark_rules

NAMESPACE = "mcpp"
_LIBRARY = os.path.dirname(os.path.abspath(starlark_rules.__file__))
# (namespace, name) -> the package's root inside the installed engine.
SHIPPED = {(NAMESPACE, "plugins"): os.path.join(_LIBRARY, "plugins")}


def shipped_root(namespace: str | None, name: str) -> str | None:
    """The root of the shipped package `namespace:name`, or None when mcpp ships no such package."""
    return SHIPPED.get((namespace, name)) if namespace is not None else None


def names() -> list[str]:
    return sorted(f"{ns}:{name}" for ns, name in SHIPPED)


def is_shipped(root: str) -> bool:
    return root in SHIPPED.values()
