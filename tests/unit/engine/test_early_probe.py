"""engine/toolchain/early_probe.py: a first build's compiler questions are asked before the engine
is imported, the probe takes their answers instead of asking again, and nothing is asked early
where the toolchain may be another or the home already knows it."""
from __future__ import annotations

import os
import stat

import pytest

from mcpp.cas.home import Home
from mcpp.engine.toolchain import early_probe
from mcpp.engine.toolchain.compilers import resolve_toolchain, which_driver

# A stand-in gcc: logs each question and answers its version from a file (read when asked).
FAKE = """#!/bin/sh
echo "$0 $1" >> "{log}"
case "$1" in
  -dumpfullversion) cat "{version}" ;;
  -dumpmachine) echo x86_64-linux-gnu ;;
  -print-search-dirs) echo "programs: =/fake/libexec/12/" ;;
esac
"""


@pytest.fixture
def first_build(tmp_path, monkeypatch):
    """A project (mcpp.toml naming no toolchain), an empty home and fake gcc/g++ on PATH.
    Returns (environ, home, log, version file)."""
    bindir, log, version = tmp_path / "bin", tmp_path / "asked.log", tmp_path / "version"
    bindir.mkdir()
    version.write_text("12.2.0\n")
    for name in ("gcc", "g++"):
        path = bindir / name
        path.write_text(FAKE.format(log=log, version=version))
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    project = tmp_path / "p"
    project.mkdir()
    (project / "mcpp.toml").write_text('[package]\nname = "p"\nversion = "0.1.0"\n')
    monkeypatch.chdir(project)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    environ = {"PATH": os.environ["PATH"], "MCPP_HOME": str(tmp_path / "home")}
    return environ, Home(tmp_path / "home"), log, version


def _asked(log) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def test_the_probe_takes_the_answers_asked_before_the_engine_and_asks_nothing_again(first_build):
    environ, home, log, version = first_build
    early = early_probe.start(["-j", "2", "build", "-q"], environ)
    assert early is not None
    for proc in early.asked.values():
        proc.wait()
    assert len(_asked(log)) == 8  # four questions to each driver, asked before any probe
    version.write_text("13.1.0\n")  # a question asked now would answer this
    home.root.mkdir()
    tc = resolve_toolchain("gcc", home, early)
    assert (tc.cc.version, tc.cxx.version) == ("12.2.0", "12.2.0")  # the early answers
    assert tc.cxx.programs == ("/fake/libexec/12/",)
    assert len(_asked(log)) == 8 and early.asked == {}
    assert home.toolchains.exists()  # learned and kept as a probe of its own is


def test_a_driver_changed_since_its_early_questions_is_asked_again(first_build):
    """The early answers are of the binary as it was before the engine's import; one replaced
    meanwhile (another stat) is asked again, so its identity and its answers stay one binary's."""
    environ, home, log, version = first_build
    early = early_probe.start(["build"], environ)
    assert early is not None
    for proc in early.asked.values():
        proc.wait()
    gxx = next(p for p in early.stats if p.endswith("g++"))
    version.write_text("13.1.0\n")
    with open(gxx, "a") as f:  # the same driver, other bytes: a compiler upgraded in place
        f.write("# upgraded\n")
    home.root.mkdir()
    tc = resolve_toolchain("gcc", home, early)
    assert (tc.cc.version, tc.cxx.version) == ("12.2.0", "13.1.0")
    assert len(_asked(log)) == 12  # g++'s four questions again
    early.close()


@pytest.mark.parametrize("argv", [
    ["build", "--toolchain", "clang"], ["build", "--toolchain=gcc-12"], ["build", "--target", "aarch64-linux-gnu"],
    ["--manifest-path", "other/mcpp.toml", "build"], ["build", "--help"], ["clean"], ["install", "--prefix", "x"],
    ["metadata"], [],
])
def test_nothing_is_asked_early_for_a_command_that_may_choose_another_toolchain_or_builds_nothing(first_build, argv):
    environ, _home, log, _version = first_build
    assert early_probe.start(argv, environ) is None
    assert _asked(log) == []


def test_nothing_is_asked_early_where_the_home_knows_its_compilers_or_a_manifest_names_a_toolchain(
        first_build, tmp_path):
    environ, home, log, _version = first_build
    home.root.mkdir()
    home.toolchains.write_text("{}")
    assert early_probe.start(["build"], environ) is None
    home.toolchains.unlink()
    (tmp_path / "mcpp.toml").write_text('[workspace]\nmembers = ["p"]\ntoolchain = "clang"\n')  # above the package
    assert early_probe.start(["build"], environ) is None
    assert _asked(log) == []


def test_nothing_is_asked_early_where_there_is_no_package(first_build, tmp_path, monkeypatch):
    environ, _home, log, _version = first_build
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert early_probe.start(["build"], environ) is None
    assert _asked(log) == []


def test_questions_no_probe_takes_are_ended(first_build):
    environ, _home, _log, _version = first_build
    early = early_probe.start(["run"], environ)
    assert early is not None
    procs = list(early.asked.values())
    early.close()
    assert all(p.returncode is not None for p in procs) and early.asked == {}
    assert early.take(tuple(procs[0].args)) is None


@pytest.mark.skipif(not os.path.exists("/usr/bin/gcc"), reason="needs gcc")
def test_the_early_questions_are_the_probes_own(tmp_path):
    """The same driver paths and command lines as the probe asks, and the same cache file: a
    mismatch would leave every early answer untaken."""
    for name in early_probe.DEFAULT_DRIVERS:
        assert early_probe._which(name, os.environ) == which_driver(name, "gcc")
    assert Home(tmp_path).toolchains.name == early_probe.PROBE_CACHE
