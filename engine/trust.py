"""Which results the shared caches may take: only those the sandbox proves hermetic.

The action cache (and the remote one) promise that an entry is the result of exactly its keyed
inputs and tools, so any later build may take it on trust. Each sandbox backend says what it
guarantees (`sandbox.Guarantees`); the namespace an action's result is keyed in
(`Platform.namespace`) follows from those promises, never from the backend's name:

- a backend that confines reads and writes (bwrap): every result is hermetic and shared (the
  namespace is empty);
- any other (dir, off): every result is keyed apart, by the promises the backend does not make.
  A checked depfile does not prove a compile's reads under dir: it names what the preprocessor
  opened, not the file an inline `.incbin` hands the assembler, the existence `__has_include`
  tests, or the plugin and specs files the driver loads; under dir each of those reaches the
  host. Only a backend where an undeclared file does not exist proves them all.

A result keyed apart is served only to builds whose backend makes the same promises: never to a
hermetic build (its key differs, so neither the action cache nor the record under `target/` is
fresh for it). It is never uploaded to a remote cache, and a host tool a build that is not
hermetic makes is published under a key of its own.
"""
from __future__ import annotations

from dataclasses import replace

from mcpp.cas.action import Action
from mcpp.sandbox import Guarantees, guarantees_of

# the namespace of shared results: keys without a namespace part
SHARED = ""


def apart(guarantees: Guarantees) -> str:
    """The namespace of a backend's unproven results, named by the promises it does not make."""
    return "unconfined:" + ",".join(guarantees.missing)


def reads_proven(guarantees: Guarantees, action: Action) -> bool:
    """True when the backend proves that `action` read nothing but what its key covers: only
    one that confines reads does (see the module docstring), whatever the kind of action."""
    return guarantees.hermetic


def namespace(guarantees: Guarantees, action: Action) -> str:
    return SHARED if reads_proven(guarantees, action) else apart(guarantees)


class Trust:
    """The trust decisions of one build run with `--sandbox <name>` (None: the default). The
    backend's promises are looked up on first use: for the default that may probe bwrap."""

    def __init__(self, sandbox: str | None, guarantees: Guarantees | None = None):
        self.sandbox = sandbox
        self._guarantees = guarantees

    @property
    def guarantees(self) -> Guarantees:
        if self._guarantees is None:
            self._guarantees = guarantees_of(self.sandbox)
        return self._guarantees

    def namespace(self, action: Action) -> str:
        return namespace(self.guarantees, action)

    def tool_host(self, host: str) -> str:
        """The host part of a host tool's store key (engine/host_tools.py): a tool a build that
        is not hermetic makes (its link is not proven) is published apart, so no hermetic
        build runs it."""
        g = self.guarantees
        return host if g.hermetic else f"{host} {apart(g)}"

    def without_upload(self, settings, warn):
        """`settings` (cas.remote.config.RemoteSettings), with uploading turned off when the
        build is not hermetic (none of its results may be shared), saying so once when the
        user asked for it."""
        if settings is None or not settings.upload or self.guarantees.hermetic:
            return settings
        shown = self.sandbox or "dir (the default here)"
        warn(f"--sandbox {shown}: results of a build that is not hermetic are not uploaded to the remote cache")
        return replace(settings, upload=False)


def shared(namespace_: str) -> bool:
    """True for a result keyed in the shared namespace (it may be uploaded)."""
    return namespace_ == SHARED
