"""engine/toolchain/compilers.py: a compiler's identity is asked of it once per change of its file, and a
first build asks every question of every compiler at once."""
from __future__ import annotations

import json
import os
import stat

import pytest

from mcpp.cas.home import Home
from mcpp.engine.core.errors import McppError
from mcpp.engine.toolchain.compilers import resolve_toolchain

# A stand-in compiler: answers like gcc 12, logs each question, and first waits (up to 10 s) until
# all eight questions of a probe (four to each driver) have been asked: asked one after another, the first never returns.
FAKE = """#!/bin/sh
echo "$0 $1" >> "{log}"
: > "{started}/$(basename "$0")$1"
i=0
while [ "$(ls "{started}" | wc -l)" -lt {wait_for} ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
[ $i -lt 200 ] || {{ echo "asked one at a time" >&2; exit 9; }}
case "$1" in
  -dumpversion) echo 12 ;;
  -dumpfullversion) {full} ;;
  -dumpmachine) {machine} ;;
  -print-search-dirs) echo "install: /fake/"; echo "programs: =/fake/libexec/12/:/fake/bin/" ;;
esac
"""


@pytest.fixture
def fakes(tmp_path, monkeypatch):
    bindir, started, log = tmp_path / "bin", tmp_path / "started", tmp_path / "asked.log"
    bindir.mkdir()
    started.mkdir()

    def make(full="echo 12.2.0", machine="echo x86_64-linux-gnu", wait_for=8):
        for name in ("gcc", "g++"):
            path = bindir / name
            path.write_text(FAKE.format(log=log, started=started, wait_for=wait_for, full=full, machine=machine))
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
        for f in started.iterdir():
            f.unlink()
        return log

    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return make


def test_a_first_probe_asks_both_compilers_everything_at_once_and_the_next_asks_nothing(fakes, tmp_path):
    log = fakes()
    home = Home(tmp_path / "home")
    home.root.mkdir()
    tc = resolve_toolchain("gcc", home)
    assert (tc.cc.version, tc.cxx.version, tc.cxx.target) == ("12.2.0", "12.2.0", "x86_64-linux-gnu")
    assert tc.cxx.programs == ("/fake/libexec/12/", "/fake/bin/")  # where it looks for its linker
    assert len(log.read_text().splitlines()) == 8  # four questions each: -dumpversion is not asked
    assert set(json.loads(home.toolchains.read_text())) == {tc.cc.path, tc.cxx.path}
    again = resolve_toolchain("gcc", home)
    assert again == tc and len(log.read_text().splitlines()) == 8  # from the cache: no process


def test_with_nothing_cached_the_drivers_are_hashed_while_they_answer(fakes, tmp_path, monkeypatch):
    """An empty home's probe starts every question before it hashes either driver (a ~1 MB
    binary each): the hashing runs while they answer, not before the second driver is asked."""
    from mcpp.engine.toolchain import compilers

    fakes()
    started: list[int] = []
    asked = []
    start, digest_file = compilers._start, compilers.digest_file
    monkeypatch.setattr(compilers, "_start", lambda argv: asked.append(argv) or start(argv))
    monkeypatch.setattr(compilers, "digest_file", lambda path: started.append(len(asked)) or digest_file(path))
    home = Home(tmp_path / "home")
    home.root.mkdir()
    tc = resolve_toolchain("gcc", home)
    assert (started, asked) == ([], [])  # nothing asked or hashed until an identity is read
    assert tc.cc.digest == digest_file(os.path.realpath(tc.cc.path)).hash
    assert started == [8, 8]


def test_with_nothing_cached_the_drivers_are_asked_when_their_identity_is_first_read(fakes, tmp_path):
    """A first build plans (and hands to the sandbox) its first compile, whose command line needs
    only the driver's path, before the questions' processes start; the first read of any
    driver's identity asks all of them, once, also when two threads read at once."""
    import threading

    log = fakes()
    home = Home(tmp_path / "home")
    home.root.mkdir()
    tc = resolve_toolchain("gcc", home)
    assert tc.cxx.path == str(tmp_path / "bin" / "g++") and not log.exists()
    assert not home.toolchains.exists()
    seen: list[str] = []
    readers = [threading.Thread(target=lambda c=c: seen.append(c.target)) for c in (tc.cc, tc.cxx, tc.cxx)]
    for r in readers:
        r.start()
    for r in readers:
        r.join()
    assert seen == ["x86_64-linux-gnu"] * 3
    assert len(log.read_text().splitlines()) == 8  # one round: four questions to each driver
    assert set(json.loads(home.toolchains.read_text())) == {tc.cc.path, tc.cxx.path}  # kept once answered
    assert "12.2.0" in tc.identity and len(log.read_text().splitlines()) == 8


def test_a_compiler_without_dumpfullversion_is_known_by_its_dumpversion(fakes, tmp_path):
    log = fakes(full="exit 1", wait_for=0)
    home = Home(tmp_path / "home")
    home.root.mkdir()
    assert resolve_toolchain("gcc", home).cxx.version == "12"
    asked = log.read_text().splitlines()
    assert len(asked) == 10 and sum(line.endswith(" -dumpversion") for line in asked) == 2  # after it


def test_clang_is_asked_its_version_once_by_the_question_it_knows(tmp_path, monkeypatch):
    """clang answers `-dumpversion` with its whole version and knows no `-dumpfullversion`."""
    bindir, started, log = tmp_path / "bin", tmp_path / "started", tmp_path / "asked.log"
    bindir.mkdir()
    started.mkdir()
    for name in ("clang-19", "clang++-19"):
        path = bindir / name
        path.write_text(FAKE.format(log=log, started=started, wait_for=8, full="exit 1",
                                    machine="echo x86_64-pc-linux-gnu").replace("echo 12 ;;", "echo 19.1.7 ;;"))
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    home = Home(tmp_path / "home")
    home.root.mkdir()
    tc = resolve_toolchain("clang-19", home)
    assert (tc.cc.version, tc.cxx.version) == ("19.1.7", "19.1.7")
    asked = log.read_text().splitlines()
    assert len(asked) == 8 and not any("-dumpfullversion" in line for line in asked), asked


def test_a_question_a_compiler_fails_is_an_error_naming_it(fakes, tmp_path):
    # Every question logs itself and waits for the other seven before answering: the failing one
    # ends the round (those still running are killed) only once all eight were asked.
    log = fakes(machine="echo 'no target' >&2; exit 1")
    home = Home(tmp_path / "home")
    home.root.mkdir()
    tc = resolve_toolchain("gcc", home)
    for _ in range(2):  # every read fails the same way, asking once
        with pytest.raises(McppError, match=r"`.*/gcc -dumpmachine` failed: no target"):
            tc.identity
    assert len(log.read_text().splitlines()) == 8
    assert not home.toolchains.exists()  # nothing half-learned is kept


@pytest.mark.skipif(not os.path.exists("/usr/bin/gcc"), reason="needs gcc")
def test_the_probe_asks_in_the_actions_environment_not_the_users(tmp_path, monkeypatch):
    """`COMPILER_PATH` (or `GCC_EXEC_PREFIX`) in the user's shell changes what gcc says its
    program directories are, while no action (run in ACTION_ENV) searches there; the answer is
    cached by the binary alone, so it named a linker for every later link key."""
    evil = tmp_path / "evil"
    monkeypatch.setenv("COMPILER_PATH", str(evil))
    monkeypatch.setenv("GCC_EXEC_PREFIX", f"{evil}/")
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    home = Home(tmp_path / "home")
    home.root.mkdir()
    tc = resolve_toolchain("gcc", home)
    assert tc.cxx.programs and not any(str(evil) in d for d in tc.cxx.programs + tc.cc.programs), tc.cxx.programs


def test_a_cross_toolchains_identity_names_its_triple_and_flags(fakes, tmp_path):
    """The identity is in every action key: a cross toolchain's differs from the host's with the
    same drivers, and from another sysroot's."""
    import dataclasses

    fakes(wait_for=0)
    home = Home(tmp_path / "home")
    home.root.mkdir()
    host = resolve_toolchain("gcc", home)
    cross = dataclasses.replace(host, flags=("--sysroot=/srv/a",), triple="aarch64-linux-gnu")
    other = dataclasses.replace(cross, flags=("--sysroot=/srv/b",))
    assert len({host.identity, cross.identity, other.identity}) == 3
    assert "triple=aarch64-linux-gnu" in cross.identity and "--sysroot=/srv/a" in cross.identity


def test_the_same_bytes_under_another_stat_are_not_asked_again_and_other_bytes_are(fakes, tmp_path):
    """A toolchain reinstalled or copied back into place (a CI job's fresh machine with the home
    restored) keeps its answers; a driver with other content is asked again."""
    log = fakes(wait_for=0)
    home = Home(tmp_path / "home")
    home.root.mkdir()
    first = resolve_toolchain("gcc", home)
    assert first.cxx.version == "12.2.0" and len(log.read_text().splitlines()) == 8
    for name in ("gcc", "g++"):  # the same bytes, written again: a new inode and mtime
        path = tmp_path / "bin" / name
        copy = tmp_path / "bin" / f".{name}.new"
        copy.write_bytes(path.read_bytes())
        copy.chmod(path.stat().st_mode)
        os.replace(copy, path)
    again = resolve_toolchain("gcc", home)
    assert again == first and len(log.read_text().splitlines()) == 8  # hashed, not asked
    assert resolve_toolchain("gcc", home) == first  # restamped: not even hashed next time
    fakes(full="echo 12.3.0", wait_for=0)  # another compiler under the same path
    upgraded = resolve_toolchain("gcc", home)
    assert upgraded.cxx.version == "12.3.0" and upgraded.cxx.digest != first.cxx.digest
    assert len(log.read_text().splitlines()) == 16


def test_probes_of_two_builds_at_once_both_stay_in_the_cache(fakes, tmp_path):
    """Each build writes the whole file: the second writer keeps what the first one learned."""
    from mcpp.engine.toolchain.compilers import _ProbeCache

    fakes(wait_for=0)
    home = Home(tmp_path / "home")
    home.root.mkdir()
    one, other = _ProbeCache(str(home.toolchains)), _ProbeCache(str(home.toolchains))  # both read it empty
    gcc, gxx = (str(tmp_path / "bin" / n) for n in ("gcc", "g++"))
    for cache, driver in ((one, gcc), (other, gxx)):
        (compiler,) = cache.probe(driver)
        compiler.identity()  # asked, learned and saved
    one.save()
    other.save()
    assert set(json.loads(home.toolchains.read_text())) == {gcc, gxx}
