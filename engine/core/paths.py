"""The three kinds of path the engine passes around, told apart by the type checker.

Each is a `str` at run time (`typing.NewType` costs nothing); only `Layout`
(engine/package/layout.py) converts one kind into another.
"""
from __future__ import annotations

from typing import NewType

AbsPath = NewType("AbsPath", str)
"""An absolute path on the host: a package root, a file under `target/`, a tool."""

ExecPath = NewType("ExecPath", str)
"""A path relative to the execroot, as an action names its inputs and outputs."""

PkgPath = NewType("PkgPath", str)
"""A path relative to its package's root, `/`-separated, as a manifest names its files."""
