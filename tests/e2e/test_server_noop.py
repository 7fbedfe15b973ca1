"""The server answers a repeated `mcpp build` itself, and from inotify once a check has passed
(engine/server/noop_watch.py): each change a no-op must notice is made after the watch is armed,
and the next build must see it."""
from __future__ import annotations

import os
import time

import pytest

from e2e_support import write_tree

pytestmark = pytest.mark.one_mode  # sets the server mode per build itself: the server-on run leaves it out

ON = {"MCPP_NO_SERVER": "0", "MCPP_SERVER_IDLE": "60"}


def _project(tmp_path):
    """A program printing two headers; one has a second hard link outside the package."""
    root = write_tree(tmp_path / "app", {
        "mcpp.toml": """
            [package]
            name = "app"
            version = "0.1.0"
        """,
        "src/main.cpp": """
            #include <cstdio>
            #include "linked.hpp"
            #include "local.hpp"
            int main() { std::printf("%s %s\\n", LINKED, LOCAL); }
        """,
        "src/local.hpp": '#define LOCAL "local"\n',
        "src/linked.hpp": '#define LINKED "one"\n',
    })
    os.makedirs(tmp_path / "elsewhere")
    os.link(root / "src/linked.hpp", tmp_path / "elsewhere/linked.hpp")
    return root


def _status(mcpp, root) -> dict:
    res = mcpp("server", "status", cwd=root, env=ON)
    assert res.code == 0, res.err
    return dict(line.split(": ", 1) for line in res.out.splitlines()) if ": " in res.out else {}


def _counts(mcpp, root) -> tuple[int, int, int]:
    s = _status(mcpp, root)
    return int(s["builds"]), int(s["noops_answered"]), int(s["noops_from_watch"])


@pytest.fixture
def armed(tmp_path, mcpp):
    """A built project whose no-op the server has checked once and now answers from its watch."""
    root = _project(tmp_path)
    try:
        res = mcpp("run", cwd=root, env=ON)
        assert res.code == 0 and res.out.endswith("one local\n"), res.err
        assert mcpp("build", cwd=root, env=ON).code == 0  # the build that writes the no-op record
        time.sleep(0.05)  # past the record's timestamp tick (files as new as the record are doubted)
        assert mcpp("build", cwd=root, env=ON).code == 0  # checked by stat, then watched
        before = _counts(mcpp, root)
        res = mcpp("build", cwd=root, env=ON)
        assert res.code == 0 and res.err.startswith("    Finished dev"), res.err
        after = _counts(mcpp, root)
        assert after == (before[0], before[1] + 1, before[2] + 1), (before, after)  # no build process
        yield root, tmp_path, mcpp
    finally:
        mcpp("server", "stop", cwd=root, env=ON)


def _rewrite_in_place(path, text: str) -> None:
    with open(path, "r+") as f:  # same inode: what a write through another name does
        f.seek(0)
        f.truncate()
        f.write(text)


def _link_elsewhere_and_write(root, tmp, text: str) -> None:
    """A name made for a package header after the watch was armed, from a directory the
    server does not watch, and a write through it: no event in src/."""
    os.link(root / "src/local.hpp", tmp / "elsewhere/later.hpp")
    _rewrite_in_place(tmp / "elsewhere/later.hpp", text)


CHANGES = {
    "a package header": (lambda root, tmp: (root / "src/local.hpp").write_text('#define LOCAL "LOCAL"\n'),
                         "one LOCAL\n"),
    "a header written through its other hard link": (
        lambda root, tmp: _rewrite_in_place(tmp / "elsewhere/linked.hpp", '#define LINKED "two"\n'),
        "two local\n"),
    "a header written through a hard link made after the watch was armed": (
        lambda root, tmp: _link_elsewhere_and_write(root, tmp, '#define LOCAL "late"\n'), "one late\n"),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_change_after_the_watch_is_armed_is_built(armed, change):
    root, tmp, mcpp = armed
    make, expected = CHANGES[change]
    make(root, tmp)
    res = mcpp("build", cwd=root, env=ON)
    assert res.code == 0 and "Compiling app" in res.err, (change, res.out, res.err)
    res = mcpp("-q", "run", cwd=root, env=ON)
    assert res.code == 0 and res.out == expected, (change, res.out, res.err)


def test_a_deleted_output_is_rebuilt(armed):
    root, _tmp, mcpp = armed
    binary = root / "target/dev/app"
    assert binary.is_file()
    binary.unlink()
    res = mcpp("build", cwd=root, env=ON)
    assert res.code == 0 and binary.is_file(), res.err


def test_fast_path_off_takes_the_build_process(armed):
    root, _tmp, mcpp = armed
    builds = _counts(mcpp, root)[0]
    res = mcpp("build", cwd=root, env={**ON, "MCPP_NO_FAST_PATH": "1"})
    assert res.code == 0
    assert _counts(mcpp, root)[0] == builds + 1


def _settled(mcpp, root) -> None:
    """No build child left, and a moment for the server's idle tasks (arming the record)."""
    deadline = time.monotonic() + 20
    while _status(mcpp, root).get("running") != "0":
        assert time.monotonic() < deadline, "the build child did not end"
        time.sleep(0.05)
    time.sleep(0.2)


def test_a_json_build_leaves_its_record_armed_for_the_next_plain_build(armed):
    root, _tmp, mcpp = armed
    (root / "src/local.hpp").write_text('#define LOCAL "json"\n')
    res = mcpp("build", "--message-format", "json", cwd=root, env=ON)
    assert res.code == 0 and '"status": "executed"' in res.out, res.out
    _settled(mcpp, root)
    before = _counts(mcpp, root)
    res = mcpp("build", cwd=root, env=ON)
    assert res.code == 0 and res.err.startswith("    Finished dev"), res.err
    assert _counts(mcpp, root) == (before[0], before[1] + 1, before[2] + 1)  # from the watch, no build process


def test_a_json_build_sees_a_write_through_a_link_made_after_the_last_build(armed):
    """The full engine's proof of what the last build keyed (engine/server/known_watch.py): a
    link made after that build, and a write through it, are named by the file's inode watch,
    so the next JSON build compiles again instead of taking the header as proven."""
    root, tmp, mcpp = armed
    res = mcpp("build", "--message-format", "json", cwd=root, env=ON)
    assert res.code == 0 and '"status": "executed"' not in res.out, res.out
    _settled(mcpp, root)  # the proof refreshed after it
    _link_elsewhere_and_write(root, tmp, '#define LOCAL "json"\n')
    res = mcpp("build", "--message-format", "json", cwd=root, env=ON)
    assert res.code == 0 and '"status": "executed"' in res.out, res.out
    res = mcpp("-q", "run", cwd=root, env=ON)
    assert res.code == 0 and res.out == "one json\n", (res.out, res.err)
    assert int(_status(mcpp, root)["files_watched"]) >= 4  # the sources, the object, the binary
