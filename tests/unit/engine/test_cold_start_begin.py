"""engine/build/cold_start.py: a first build in an empty home starts its sandbox's first worker
before the engine is imported; the build takes it only where it is the sandbox the build would
begin itself, and what it does not take is ended."""
from __future__ import annotations

import pytest

from mcpp.engine.build.cold_start import begin
from mcpp.engine.build.memory import NoMemory


@pytest.fixture
def first_build(tmp_path, monkeypatch):
    """A package's directory as the working directory, a home with nothing in it."""
    package = tmp_path / "p"
    package.mkdir()
    (package / "mcpp.toml").write_text('[package]\nname = "p"\nversion = "0.1.0"\n')
    monkeypatch.chdir(package)
    home = tmp_path / "home"
    monkeypatch.setenv("MCPP_HOME", str(home))
    return package, home


def _slots(home) -> list[str]:
    slots = home / "sandbox"
    return [p.name for p in slots.iterdir() if p.name.endswith(".slot")] if slots.exists() else []


def test_a_first_build_begins_the_sandbox_its_build_takes_once(first_build):
    _, home = first_build
    begun = begin(["build", "-j", "2"])
    assert begun is not None
    memory = NoMemory(begun)
    warm = memory.sandbox((None, str(home), ()))  # the settings compose.py's `_warm_up` gives it
    assert warm is not None and warm.get() is not None
    assert memory.sandbox((None, str(home), ())) is None  # handed over once
    warm.close()
    begun.close()
    assert _slots(home) == []


def test_a_sandbox_begun_for_other_settings_is_ended_unused(first_build):
    _, home = first_build
    begun = begin(["build"])
    assert begun is not None
    assert begun.sandbox(("dir", str(home), ())) is None
    assert begun.sandbox(None) is None  # asked once: it is gone
    begun.close()
    assert _slots(home) == []


def test_one_the_build_does_not_take_ends_while_the_build_goes_on(first_build):
    """Ended as soon as the build asks for another sandbox, not when the command exits."""
    import time

    _, home = first_build
    begun = begin(["run"])
    assert begun is not None
    assert begun.sandbox(("dir", str(home), ())) is None
    deadline = time.monotonic() + 20
    while _slots(home) and time.monotonic() < deadline:  # its worker's slot goes with it
        time.sleep(0.01)
    assert _slots(home) == []
    begun.close()


def test_one_the_build_never_asks_for_is_ended_too(first_build):
    _, home = first_build
    begun = begin(["run"])
    assert begun is not None
    begun.close()  # the build failed before it wanted a sandbox
    assert _slots(home) == []


@pytest.mark.parametrize("argv", [["metadata"], ["build", "--sandbox=dir"], ["build", "--toolchain", "clang"],
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
    (package / "target").rmdir()
    monkeypatch.chdir(package)
    begun = begin(["build"])  # none of those: begun
    assert begun is not None
    begun.close()
    monkeypatch.setenv("MCPP_HOME", "relative/home")  # compose.py would spell it otherwise
    assert begin(["build"]) is None
