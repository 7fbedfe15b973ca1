"""What the `mcpp` process begins for a first build before it imports the engine: its sandbox.

A first build in an empty home (a fresh machine, a CI job without a restored home) starts its
first compile ahead of the rest of the plan (engine/exec/head_start.py), in a sandbox whose first
worker (bwrap, a namespace and the executor's Python: 15-30 ms until it answers) the build would
begin once the engine is imported and the manifest read. Nothing of that needs the engine:
`begin` starts the worker right after the no-op fast path and the server have declined the
command, so that it comes up on the other core while the engine imports (~50 ms) on this one, and
the build takes it where it is the sandbox the build would begin itself (`Begun.sandbox`: the
same settings, engine/exec/sandbox_warm_up.py's `fits`); otherwise it is ended unused and the
build begins its own as before. A wrong guess costs one worker's start.

Begun only where the build is likely to want that sandbox, by what a few stats show: a `build`,
`run` or `test` in a package's directory, with no option that picks another sandbox, toolchain,
target or manifest; a home with no action cache (nothing to restore, so every action will run)
and no `target/` in the working directory. The compilers' probe is not begun here: its eight
processes, run beside the import on a 2-core machine, delayed the import more than they saved
(bench/RESULTS.md, 2026-12-03). Imports nothing that needs `dataclasses` before
engine/core/dataclass_code.py's `install()` has run.
"""
from __future__ import annotations

import os
import threading

from ..core.commands import SERVED, subcommand
from ..core.mcpp_home import home_root

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..exec.sandbox_warm_up import SandboxWarmUp

# options after which the guess would be wrong: another sandbox, toolchain (a cross one binds its
# sysroot), target or manifest
_OTHER_SETTINGS = ("--sandbox", "--toolchain", "--target", "--manifest-path")


class Begun:
    """The sandbox warm-up begun before the build, for the build to take (engine/build/memory.py's
    `NoMemory`); one the build does not take is ended as soon as it says so, on a thread of its
    own (its end waits for the worker's answer, which the build need not), and `close` sees the
    end through, or ends one the build never asked for."""

    def __init__(self, warm: SandboxWarmUp) -> None:
        self._warm: SandboxWarmUp | None = warm  # until handed over or ended
        self._asked = False
        self._ending: threading.Thread | None = None

    def sandbox(self, settings: tuple | None) -> SandboxWarmUp | None:
        """The warm-up, when the build's first ask is for a sandbox of its `settings` (None: one
        with no worker to start early); otherwise nothing, and it is ended now, meanwhile: an
        unused worker does not wait idle beside a long `mcpp run` or `mcpp test`."""
        from ..exec.sandbox_warm_up import fits

        asked, self._asked = self._asked, True
        warm = self._warm
        if warm is None or asked:
            return None
        self._warm = None
        if settings is None or not fits(warm, settings):
            self._ending = threading.Thread(target=warm.close, name="mcpp-unused-sandbox", daemon=True)
            self._ending.start()
            return None
        return warm

    def close(self) -> None:
        if self._warm is not None:
            self._warm.close()
            self._warm = None
        if self._ending is not None:
            self._ending.join()


def begin(argv: list[str]) -> Begun | None:
    """Begin the first build's sandbox where `argv` is likely one (see the module's docstring);
    None where nothing was begun."""
    home = home_root(os.environ)
    if not _likely_first_build(argv, home):
        return None
    from ..exec.sandbox_warm_up import SandboxWarmUp

    # the settings compose.py's `_warm_up` gives a build with no --sandbox, no payload and no
    # system library: (sandbox, the home's root, the roots bound read-only)
    return Begun(SandboxWarmUp((None, home, ())))


def _likely_first_build(argv: list[str], home: str) -> bool:
    # the commands that build (the server's); an option after which the guess would miss, anywhere
    if subcommand(argv)[0] not in SERVED or any(a.split("=", 1)[0] in _OTHER_SETTINGS for a in argv):
        return False
    # the home's root as compose.py spells it (`str(Path(...))`): absolute and normalized here
    if not os.path.isabs(home) or os.path.normpath(home) != home or home.startswith("//"):
        return False
    return os.path.isfile("mcpp.toml") and not os.path.isdir("target") and not os.path.isdir(os.path.join(home, "ac"))
