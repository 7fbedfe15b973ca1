"""The installed distribution keeps its import names under `mcpp.`: a wheel installed next to
another distribution that owns the top-level name `engine` works, and leaves that `engine` alone."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from e2e_support import REPO, copy_example

pytestmark = pytest.mark.one_mode  # installs the wheel, no build: the server-on run leaves it out


def run(*argv, **kw) -> subprocess.CompletedProcess:
    p = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=600, **kw)
    assert p.returncode == 0, f"{' '.join(map(str, argv))} failed:\n{p.stdout}\n{p.stderr}"
    return p


def dummy_engine_distribution(root: Path) -> Path:
    """A distribution named `engine` with a top-level package `engine`, as an unrelated project might ship."""
    (root / "engine").mkdir(parents=True)
    (root / "engine" / "__init__.py").write_text("WHO = 'the dummy engine distribution'\n")
    (root / "pyproject.toml").write_text(textwrap.dedent("""\
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "engine"
        version = "9.9.9"
        [tool.setuptools]
        packages = ["engine"]
        """))
    return root


@pytest.mark.heavy
def test_wheel_installs_beside_a_distribution_named_engine(tmp_path):
    wheels = tmp_path / "wheels"
    # Built from a copy of the sources: a wheel built in the checkout would reuse setuptools'
    # build/ directory there, which can hold modules the tree no longer has.
    source = tmp_path / "source"
    anywhere = shutil.ignore_patterns(".git", ".venv", "*.egg-info", "target", "work", "__pycache__")

    def ignore(directory: str, names: list[str]) -> set[str]:
        # setuptools' build/ is at the root only: engine/build/ is a package the wheel needs
        at_root = {"build", "tests", "examples"} if Path(directory) == REPO else set()
        return set(anywhere(directory, names)) | (at_root & set(names))

    shutil.copytree(REPO, source, ignore=ignore)
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, source)
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels,
        dummy_engine_distribution(tmp_path / "dummy"))
    venv = tmp_path / "fresh"
    run(sys.executable, "-m", "venv", venv)
    # mcpp's runtime dependencies come from this interpreter's site-packages (a plain path entry:
    # the editable install's finder there is not activated), so the test needs no network.
    fresh_site = run(venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    Path(fresh_site.stdout.strip(), "test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    mcpp_wheel = next(wheels.glob("mcpp-*.whl"))
    engine_wheel = next(wheels.glob("engine-*.whl"))
    run(venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", "--no-index", engine_wheel, mcpp_wheel)

    assert run(venv / "bin" / "mcpp", "--version").stdout.startswith("mcpp, version")
    who = run(venv / "bin" / "python", "-c", "import engine, mcpp.engine; print(engine.WHO); print(mcpp.engine.__file__)",
              cwd=tmp_path)
    dummy, ours = who.stdout.splitlines()
    assert dummy == "the dummy engine distribution"
    assert ours.startswith(str(venv)), ours  # the wheel's copy, not the repository's

    # The installed wheel carries what a build needs (the Starlark library included) and builds.
    home = tmp_path / "home"
    hello = copy_example("01-hello", tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "TERM"} | {"MCPP_HOME": str(home)}
    out = run(venv / "bin" / "mcpp", "run", cwd=hello, env=env)
    assert "Hello" in out.stdout, out.stdout
    star = run(venv / "bin" / "python", "-c",
               "import os, mcpp.starlark_rules as s; print(os.listdir(os.path.dirname(s.__file__)))")
    assert "paths.star" in star.stdout and "payload-index" in star.stdout
