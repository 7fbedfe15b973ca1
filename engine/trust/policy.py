"""The build's trust decisions, made in one place from what its sandbox promises: `TrustPolicy`.

The action cache (and the remote one) promise that an entry is the result of exactly its keyed
inputs and tools, so any later build may take it on trust. Each sandbox backend says what it
guarantees (`sandbox.Guarantees`, declared by the backend in sandbox/select.py's registry); every
decision below follows from those promises and the remote settings, never from a backend's
name. The namespace an action's result is keyed in (`Platform.namespace`):

- a backend that confines reads and writes (bwrap): every result is hermetic and shared (the
  namespace is empty);
- any other (dir, off): every result is keyed apart, by the promises the backend does not make.
  A checked depfile does not prove a compile's reads under dir: it names what the preprocessor
  opened, not the file an inline `.incbin` hands the assembler, the existence `__has_include`
  tests, or the plugin and specs files the driver loads; under dir each of those reaches the
  host. Only a backend where an undeclared file does not exist proves them all.

A result keyed apart is served only to builds whose backend makes the same promises: never to a
hermetic build (its key differs, so neither the action cache nor the record under `target/` is
fresh for it). It is never uploaded to a remote cache nor looked up there, and a host tool a
build that is not hermetic makes is published under a key of its own.

A backend that does not stage inputs runs actions in the real tree: an action there may read a
file another action is still to rewrite, so keys are not memoized within the build, no worker is
warmed up ahead, and no action is sent to a remote worker (its reads are this machine's).
"""
from __future__ import annotations

import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Callable

from mcpp.cas.action import Action, Platform
from mcpp.cas.remote.trust import Origin, local_entry_accepted, trusted_names
from mcpp.sandbox import Guarantees, guarantees_of, possible_guarantees

if TYPE_CHECKING:  # imported only by builds with a remote (engine/core/settings.py)
    from mcpp.cas.remote.config import RemoteSettings

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


class TrustPolicy:
    """The trust decisions of one build run with `--sandbox <sandbox>` (None: the default) and
    the remote settings `remote` (None: no remote). Made once per build and handed to each step
    that decides. The backend's promises are looked up on first use, and only where the
    backends the default may choose disagree: answering for the default may probe bwrap, which
    a no-op build never needs."""

    def __init__(self, sandbox: str | None, remote: RemoteSettings | None = None,
                 guarantees: Guarantees | None = None):
        self.sandbox = sandbox
        self._remote = remote
        self._guarantees = guarantees
        self._made: Callable[[], object] | None = None  # the build's sandbox, being made (`follow`)
        self._lock = threading.Lock()
        # the keys a result fetched from a remote must be signed with (None: none required)
        self._trusted = trusted_names(remote.trusted_keys) if remote is not None else None

    @property
    def guarantees(self) -> Guarantees:
        if self._guarantees is None:
            with self._lock:
                if self._guarantees is None:
                    self._guarantees = self._of_made() or guarantees_of(self.sandbox)
        return self._guarantees

    def follow(self, sandbox: Callable[[], object]) -> None:
        """The build's sandbox is being made ahead (engine/exec/sandbox_warm_up.py; `sandbox()`
        waits for it): for the default backend its promises are that sandbox's, so the first
        key waits for it instead of running the bwrap probe beside the worker starting up."""
        if self._guarantees is None and self.sandbox is None:
            self._made = sandbox

    def _of_made(self) -> Guarantees | None:
        made, self._made = self._made, None
        if made is None:
            return None
        try:
            guarantees = getattr(made(), "guarantees", None)
        except Exception:  # noqa: BLE001 - the first action reports it; the probe decides here
            return None
        return guarantees if isinstance(guarantees, Guarantees) else None

    def _promised(self, promise: str) -> bool:
        """Whether the build's sandbox makes `promise` (a `Guarantees` attribute), probing only
        when the backends it may be disagree."""
        if self._guarantees is None:
            answers = {getattr(g, promise) for g in possible_guarantees(self.sandbox)}
            if len(answers) == 1:
                return answers.pop()
        return getattr(self.guarantees, promise)

    @property
    def hermetic(self) -> bool:
        return self._promised("hermetic")

    @property
    def stages_inputs(self) -> bool:
        """Actions run in directories of their own: there is a sandbox worker to warm up."""
        return self._promised("stages_inputs")

    @property
    def memoizes_keys(self) -> bool:
        """Whether an action's key, once computed, holds for the rest of the build: not where an
        action may read a file no prerequisite of its writes (the real tree), which another
        action may still rewrite after the first key was computed."""
        return self.stages_inputs

    def executes_remotely(self, action: Action) -> bool:
        """Whether the sandbox lets `action` run on a remote worker: not when its actions read
        the real tree (the result depends on this machine)."""
        return self.stages_inputs

    def namespace(self, action: Action) -> str:
        return namespace(self.guarantees, action)

    def uploads(self, platform: Platform) -> bool:
        """Whether a result keyed under `platform` may go to the remote cache: a shared one only."""
        return shared(platform.namespace)

    def accepts_remote(self, platform: Platform) -> bool:
        """Whether a remote cache is asked for a result keyed under `platform`: none holds one
        keyed apart (it is never uploaded)."""
        return shared(platform.namespace)

    def accepts_cached(self, origin: Origin | None) -> bool:
        """Whether a local action cache entry with `origin` may be used: with trusted keys, one
        copied from a remote must have been signed by a key still trusted (cas/remote/trust.py)."""
        return local_entry_accepted(origin, self._trusted)

    @property
    def apart(self) -> str:
        """"" when the sandbox proves what an action read; else the tag (what it lacks) under which
        anything it produced is kept apart from what hermetic builds produce and read."""
        g = self.guarantees
        return "" if g.hermetic else apart(g)

    def tool_host(self, host: str) -> str:
        """The host part of a host tool's store key (engine/build/host_tools.py): a tool a build that
        is not hermetic makes (its link is not proven) is published apart, so no hermetic
        build runs it."""
        return f"{host} {self.apart}" if self.apart else host

    def remote(self, warn: Callable[[str], None]) -> RemoteSettings | None:
        """The remote settings the build uses: uploading turned off when the build is not
        hermetic (none of its results may be shared), saying so once when the user asked for it."""
        settings = self._remote
        if settings is None or not settings.upload or self.guarantees.hermetic:
            return settings
        shown = self.sandbox or "dir (the default here)"
        warn(f"--sandbox {shown}: results of a build that is not hermetic are not uploaded to the remote cache")
        return replace(settings, upload=False)


def shared(namespace_: str) -> bool:
    """True for a result keyed in the shared namespace (it may be uploaded)."""
    return namespace_ == SHARED
