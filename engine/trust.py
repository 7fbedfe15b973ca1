"""Which results the shared caches may take: only those of a hermetic run.

The action cache (and the remote one) promise that an entry is the result of exactly its keyed
inputs and tools, so any later build may take it on trust. `--sandbox off` cannot keep that
promise: the action runs in the project directory and may read anything (an undeclared header,
a file outside the build's root), none of which is in its key. Its results are therefore keyed
in a namespace of their own (`Platform.namespace`): only another `off` build can be served
one, and a `bwrap` or `dir` build after an `off` build runs the action again (its key differs,
so the record under `target/` is not fresh either). They are never uploaded to a remote cache, and
a host tool an `off` build makes is published under a key of its own.
"""
from __future__ import annotations

from dataclasses import replace

from mcpp.cas.action import Platform

# Sandbox modes whose results are not hermetic, with the key namespace they are kept under.
_NON_HERMETIC = {"off": "sandbox-off"}


def platform_for(toolchain: str, host: str, sandbox: str | None) -> Platform:
    """The key platform of a build run with `--sandbox <sandbox>` (None: the hermetic default)."""
    return Platform(toolchain, host, _NON_HERMETIC.get(sandbox or "", ""))


def tool_host(host: str, sandbox: str | None) -> str:
    """The host part of a host tool's store key (engine/host_tools.py): a tool built by an `off`
    build is published apart, so no hermetic build runs it."""
    namespace = _NON_HERMETIC.get(sandbox or "", "")
    return f"{host} {namespace}" if namespace else host


def upload_allowed(sandbox: str | None) -> bool:
    return (sandbox or "") not in _NON_HERMETIC


def without_upload(settings, sandbox: str | None, warn):
    """`settings` (cas.remote.config.RemoteSettings), with uploading turned off for a
    non-hermetic build, saying so once when the user asked for it."""
    if settings is None or not settings.upload or upload_allowed(sandbox):
        return settings
    warn(f"--sandbox {sandbox}: results of a build that is not hermetic are not uploaded to the remote cache")
    return replace(settings, upload=False)
