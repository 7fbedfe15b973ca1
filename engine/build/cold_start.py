"""What the `mcpp` process begins for a first build before it imports the engine.

A first build in an empty home (a fresh machine, a CI job without a restored home) waits, before
its first compile, for the compilers' answers to the probe (eight processes: ~15-20 ms with the
sandbox's worker starting beside them) and for that worker (bwrap and the executor's Python:
~15-30 ms), both begun once the engine is imported and the manifest read. Neither needs the
engine: `begin` starts them right after the no-op fast path and the server have declined the
command, so that they run on the other core while the engine imports (~50 ms) on this one. The
build takes them where they are what it would have begun (`Begun.sandbox`, the probe's
`AskedAhead.take`: the same settings, the same driver files); otherwise they are ended unused,
and the build begins its own as before. A guess costs nothing when wrong but its processes.

Begun only where the build is likely to want both, by what a few stats show: a `build`, `run` or
`test` in a package's directory, with no option that picks another toolchain, target, sandbox or
manifest; a home with no action cache (nothing to restore, so every action will run) and no
`target/` in the working directory; the compilers asked only when the home has no probe cache and
the manifest names no toolchain (the guess is the default, gcc and g++ from PATH). Imports only
what the build imports anyway, and nothing that needs `dataclasses` before
engine/core/dataclass_code.py's `install()` has run.
"""
from __future__ import annotations

import os

from ..core.mcpp_home import home_root

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..exec.sandbox_warm_up import SandboxWarmUp
    from ..toolchain.questions import AskedAhead

_COMMANDS = ("build", "run", "test")
# options after which the guess would be wrong: another toolchain, target, sandbox or manifest
_OTHER_SETTINGS = ("--toolchain", "--target", "--sandbox", "--manifest-path")
_DEFAULT_DRIVERS = ("gcc", "g++")  # engine/toolchain/compilers.py's `driver_names("gcc")`


class Begun:
    """The compilers' questions (`asked`) and the sandbox warm-up begun before the build, for
    the build to take (engine/build/memory.py's `NoMemory`); `close` ends what it did not."""

    def __init__(self, asked: AskedAhead | None, warm: SandboxWarmUp | None) -> None:
        self.asked = asked
        self._warm = warm
        self._unused: list[SandboxWarmUp] = []

    def sandbox(self, settings: tuple | None) -> SandboxWarmUp | None:
        """The warm-up, once, when the build wants a sandbox of its `settings` (None: one with no
        worker to start early); one begun for other settings is ended at `close`."""
        from ..exec.sandbox_warm_up import fits

        warm, self._warm = self._warm, None
        if warm is None or (settings is not None and fits(warm, settings)):
            return warm
        self._unused.append(warm)
        return None

    def close(self) -> None:
        if self.asked is not None:
            self.asked.close()
        if self._warm is not None:
            self._unused.append(self._warm)
            self._warm = None
        for warm in self._unused:
            warm.close()
        self._unused = []


def begin(argv: list[str]) -> Begun | None:
    """Begin the first build's compiler questions and sandbox, where `argv` is likely one (see
    the module's docstring); None where nothing was begun."""
    home = home_root(os.environ)
    if not _likely_first_build(argv, home):
        return None
    asked = None
    if not os.path.exists(os.path.join(home, "toolchains.json")) and _names_no_toolchain("mcpp.toml"):
        from ..toolchain.questions import AskedAhead

        asked = AskedAhead()
        for name in _DEFAULT_DRIVERS:
            path = _which(name)
            if path is not None:
                asked.ask(path)
    from ..exec.sandbox_warm_up import SandboxWarmUp

    # the settings compose.py's `_warm_up` gives a build with no --sandbox, no payload and no
    # system library: (sandbox, the home's root, the roots bound read-only)
    return Begun(asked, SandboxWarmUp((None, home, ())))


def _likely_first_build(argv: list[str], home: str) -> bool:
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in _COMMANDS or any(a.split("=", 1)[0] in _OTHER_SETTINGS for a in argv):
        return False
    # the home's root as compose.py spells it (`str(Path(...))`): absolute and normalized here
    if not os.path.isabs(home) or os.path.normpath(home) != home or home.startswith("//"):
        return False
    return os.path.isfile("mcpp.toml") and not os.path.isdir("target") and not os.path.isdir(os.path.join(home, "ac"))


def _names_no_toolchain(manifest: str) -> bool:
    try:
        with open(manifest, "rb") as f:
            return b"toolchain" not in f.read()
    except OSError:
        return False


def _which(name: str) -> str | None:
    """`shutil.which(name)` made absolute, as engine/toolchain/compilers.py's `_which` finds a
    driver (without importing `shutil` before the engine does)."""
    for d in os.environ.get("PATH", os.defpath).split(os.pathsep):
        path = os.path.join(d, name)
        if os.path.exists(path) and os.access(path, os.F_OK | os.X_OK) and not os.path.isdir(path):
            return os.path.abspath(path)
    return None
