"""engine/build/cold_start.py and engine/toolchain/questions.py: a first build in an empty home
asks its compilers and starts its sandbox's worker before the engine is imported; the build takes
them only where they are what it would have begun, and what it does not take is ended."""
from __future__ import annotations

import os
import time

import pytest

from mcpp.cas.home import Home
from mcpp.engine.build.cold_start import begin
from mcpp.engine.toolchain.compilers import resolve_toolchain
from mcpp.engine.toolchain.questions import AskedAhead, stamp_of, stop

from test_toolchain_probe import fakes  # noqa: F401 - the stand-in gcc and g++ that log each question


def _asked_ahead(bindir) -> AskedAhead:
    asked = AskedAhead()
    for name in ("gcc", "g++"):
        asked.ask(str(bindir / name))
    return asked


def _lines(log, at_least: int = 1) -> list[str]:
    """The questions logged, once there are `at_least` (waiting up to 10 s)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (not log.exists() or len(log.read_text().splitlines()) < at_least):
        time.sleep(0.01)
    return log.read_text().splitlines()


def test_the_probe_takes_the_questions_asked_ahead_and_asks_nothing_itself(fakes, tmp_path):
    log = fakes()
    home = Home(tmp_path / "home")
    home.root.mkdir()
    asked = _asked_ahead(tmp_path / "bin")
    tc = resolve_toolchain("gcc", home, asked)
    assert (tc.cc.version, tc.cxx.version, tc.cxx.target) == ("12.2.0", "12.2.0", "x86_64-linux-gnu")
    assert len(_lines(log)) == 8  # four questions to each driver, asked once: ahead
    assert asked.take(tc.cc.path, (), stamp_of(tc.cc.path)) is None  # taken once


def test_a_driver_changed_since_it_was_asked_is_asked_again_and_its_early_answers_dropped(fakes, tmp_path):
    log = fakes()
    home = Home(tmp_path / "home")
    home.root.mkdir()
    asked = _asked_ahead(tmp_path / "bin")
    gxx = tmp_path / "bin" / "g++"
    _lines(log, 8)  # every question asked ahead has begun
    new = tmp_path / "g++.new"  # another build of the driver, put in place as a new file
    new.write_text(gxx.read_text().replace('echo "$0 $1"', 'echo "new $0 $1"'))
    new.chmod(gxx.stat().st_mode)
    os.replace(new, gxx)
    tc = resolve_toolchain("gcc", home, asked)
    assert tc.cxx.version == "12.2.0"
    lines = _lines(log)
    # gcc's four answers taken; g++'s dropped and its four questions asked again
    assert len(lines) == 12 and all(line.startswith(f"new {gxx} ") for line in lines[8:]), lines


def test_questions_no_probe_took_are_ended(fakes, tmp_path):
    fakes(wait_for=100)  # they wait (up to 10 s) for questions that never come
    asked = _asked_ahead(tmp_path / "bin")
    procs = [p for _, ps in asked._asked.values() for p in ps]
    assert len(procs) == 8 and all(p.poll() is None for p in procs)
    began = time.monotonic()
    asked.close()
    assert all(p.returncode is not None for p in procs) and time.monotonic() - began < 5


@pytest.fixture
def first_build(tmp_path, monkeypatch, fakes):
    """A package's directory as the working directory, a home with nothing in it."""
    fakes()
    package = tmp_path / "p"
    package.mkdir()
    (package / "mcpp.toml").write_text('[package]\nname = "p"\nversion = "0.1.0"\n')
    monkeypatch.chdir(package)
    home = tmp_path / "home"
    monkeypatch.setenv("MCPP_HOME", str(home))
    return package, home


def test_a_first_build_begins_its_questions_and_the_sandbox_it_will_take(first_build, tmp_path):
    _, home = first_build
    begun = begin(["build", "-j", "2"])
    assert begun is not None and begun.asked is not None
    gcc = str(tmp_path / "bin" / "gcc")
    procs = begun.asked.take(gcc, (), stamp_of(gcc))
    assert procs is not None and len(procs) == 4
    stop(procs)
    warm = begun.sandbox((None, str(home), ()))
    assert warm is not None and warm.get() is not None
    assert begun.sandbox((None, str(home), ())) is None  # handed over once
    warm.close()
    begun.close()


def test_a_sandbox_begun_for_other_settings_is_ended_unused(first_build):
    _, home = first_build
    begun = begin(["build"])
    assert begun is not None
    assert begun.sandbox(("dir", str(home), ())) is None
    assert begun.sandbox(None) is None  # asked once: it is gone
    begun.close()
    slots = home / "sandbox"
    assert not slots.exists() or not [p for p in slots.iterdir() if p.name.endswith(".slot")]


@pytest.mark.parametrize("argv", [["metadata"], ["build", "--toolchain", "clang"], ["build", "--sandbox=dir"],
                                  ["test", "--target", "aarch64-linux-gnu"], ["run", "--manifest-path", "x/mcpp.toml"]])
def test_nothing_is_begun_for_another_command_or_options_the_guess_would_miss(first_build, argv):
    assert begin(argv) is None


def test_nothing_is_begun_where_the_build_may_restore_or_outside_a_package(first_build, monkeypatch, tmp_path):
    package, home = first_build
    (home / "ac").mkdir(parents=True)
    assert begin(["build"]) is None  # the home's action cache may hold the build
    (home / "ac").rmdir()
    (package / "target").mkdir()
    assert begin(["build"]) is None  # an earlier build's state
    monkeypatch.chdir(tmp_path)
    assert begin(["build"]) is None  # no manifest here


def test_the_compilers_are_not_asked_where_the_home_knows_them_or_the_manifest_names_a_toolchain(first_build):
    package, home = first_build
    home.mkdir()
    (home / "toolchains.json").write_text("{}")
    begun = begin(["build"])
    assert begun is not None and begun.asked is None
    begun.close()
    os.unlink(home / "toolchains.json")
    (package / "mcpp.toml").write_text('[package]\nname = "p"\nversion = "0.1.0"\ntoolchain = "clang"\n')
    begun = begin(["build"])
    assert begun is not None and begun.asked is None
    begun.close()
