"""Running one action hermetically: bwrap namespaces, a directory fallback, or nothing.

Public API: ``make_sandbox`` picks one by name (``NAMES``: the accepted ones); each has ``run(spec) -> SandboxResult``,
``release(result)``, ``shutdown()`` and ``guarantees`` (what it promises; ``guarantees_of(name)``
answers without making one). ``parse_depfile``, ``read_depfile`` and ``prefix_map_flags`` are for the
engine; ``EXECROOT_PLACEHOLDER`` is what it writes in argv for "the action's root".
Never imports ``engine`` or ``cas``.
"""
from .bwrap import BwrapSandbox, find_bwrap, probe_bwrap
from .depfile_syntax import parse_depfile, read_depfile
from .directory import DirSandbox
from .errors import SandboxClosed, SandboxError, SandboxSpecError, SandboxUnavailable
from .placeholder import EXECROOT_PLACEHOLDER, prefix_map_flags
from .pool import SandboxPool, reclaim_stale
from .select import NAMES, BegunSandbox, begin_sandbox, guarantees_of, make_sandbox, possible_guarantees
from .spec import Guarantees, Sandbox, SandboxResult, SandboxSpec
from .unsandboxed import LocalSandbox

__all__ = [
    "BwrapSandbox", "DirSandbox", "LocalSandbox", "Sandbox", "SandboxSpec", "SandboxResult",
    "SandboxPool", "SandboxError", "SandboxSpecError", "SandboxUnavailable", "SandboxClosed",
    "Guarantees", "NAMES", "BegunSandbox", "begin_sandbox", "guarantees_of", "make_sandbox", "possible_guarantees", "reclaim_stale", "find_bwrap", "probe_bwrap", "parse_depfile", "read_depfile",
    "prefix_map_flags", "EXECROOT_PLACEHOLDER",
]
