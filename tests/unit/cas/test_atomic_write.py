"""cas/atomic.py: the one way mcpp replaces a file."""
from __future__ import annotations

import os
import stat

import pytest

from mcpp.cas.atomic import PRIVATE, PUBLIC, TMP_PREFIX, atomic_file, write_atomic, write_if_changed


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_write_atomic_creates_directories_and_replaces(tmp_path):
    path = tmp_path / "a" / "b" / "f"
    write_atomic(str(path), b"one")
    write_atomic(str(path), "twö")
    assert path.read_bytes() == "twö".encode()
    assert os.listdir(path.parent) == ["f"]  # no temp file left


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_file(str(path)) as f:
            f.write(b"half")
            raise RuntimeError("crash mid-write")
    assert path.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["f"]


def test_the_final_name_appears_only_once_written(tmp_path):
    path = tmp_path / "f"
    with atomic_file(str(path)) as f:
        f.write(b"x")
        (tmp,) = os.listdir(tmp_path)
        assert tmp.startswith(TMP_PREFIX) and not path.exists()
    assert path.read_bytes() == b"x"


def test_modes(tmp_path):
    old = os.umask(0o022)
    try:
        write_atomic(str(tmp_path / "private"), b"")
        write_atomic(str(tmp_path / "public"), b"", mode=PUBLIC)
        with atomic_file(str(tmp_path / "ro"), perms=0o444) as f:
            f.write(b"blob")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "private") == PRIVATE
    assert _mode(tmp_path / "public") == 0o644
    assert _mode(tmp_path / "ro") == 0o444


def test_write_if_changed_keeps_an_unchanged_file(tmp_path):
    path = tmp_path / "d" / "compile_commands.json"
    write_if_changed(str(path), b"[]")
    os.utime(path, ns=(1, 1))
    write_if_changed(str(path), b"[]")
    assert os.stat(path).st_mtime_ns == 1
    write_if_changed(str(path), b"[1]")
    assert path.read_bytes() == b"[1]" and os.stat(path).st_mtime_ns != 1


# -- publish: content-named files (blobs, materialized copies) ----------------------------------

from mcpp.cas import atomic  # noqa: E402


@pytest.mark.parametrize("tmpfile", [True, False], ids=["O_TMPFILE", "named-temp"])
def test_publish_creates_once_and_leaves_only_the_final_name(tmp_path, monkeypatch, tmpfile):
    monkeypatch.setattr(atomic, "_tmpfile_works", tmpfile and atomic._tmpfile_works)
    path = str(tmp_path / "ab" / "cdef")
    assert atomic.publish(path, [b"he", memoryview(b"llo")], perms=0o444) is True
    assert atomic.publish(path, [b"other writer, same name"], perms=0o444) is False  # first one stays
    assert open(path, "rb").read() == b"hello"
    assert _mode(path) == 0o444
    assert os.listdir(tmp_path / "ab") == ["cdef"]


def test_publish_never_shows_a_temporary_name(tmp_path, monkeypatch):
    """With O_TMPFILE the bytes are written into an inode without a name: a process killed
    mid-write leaves nothing in the directory for `gc` to sweep, and no rename is paid."""
    if not atomic._tmpfile_works:
        pytest.skip("no O_TMPFILE on this file system")
    seen = []
    real = os.fchmod

    def spy(fd, mode):  # called once the bytes are written, before the link
        seen.append(sorted(os.listdir(tmp_path)))
        real(fd, mode)

    monkeypatch.setattr(os, "fchmod", spy)
    renames = []
    monkeypatch.setattr(os, "replace", lambda *a: renames.append(a))
    assert atomic.publish(str(tmp_path / "blob"), [b"x" * 100], perms=0o444)
    assert seen == [[]] and renames == []
    assert os.listdir(tmp_path) == ["blob"]


def test_temp_file_names_are_unique_in_a_process_and_drawn_again_after_a_fork(tmp_path):
    """A temp file's name costs no system call (a per-process random part and a count): names never
    repeat within a process, across its threads, or between it and a child it forks."""
    import threading

    from mcpp.cas.atomic import temp_file

    names: list[str] = []

    def make() -> None:
        for _ in range(500):
            fd, path = temp_file(str(tmp_path))
            os.close(fd)
            names.append(path)

    threads = [threading.Thread(target=make) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(names)) == len(names) == 2000
    assert all(os.path.basename(n).startswith(TMP_PREFIX) for n in names)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its first name, to the parent
        fd, path = temp_file(str(tmp_path))
        os.write(write, path.encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = os.read(read, 4096).decode()
    os.close(read)
    fd, mine = temp_file(str(tmp_path))
    os.close(fd)
    prefix = lambda name: os.path.basename(name).rsplit("-", 1)[0]  # noqa: E731
    assert child not in names and prefix(child) != prefix(mine)


def test_a_symlink_planted_at_the_next_temp_file_name_is_skipped_not_written_through(tmp_path):
    """The attack on a guessable name: whoever saw one temp file's name plants a symlink under
    the next one, aimed at a file of their choosing. `temp_file` creates with O_EXCL: it takes
    another name, and neither the link nor its target is touched."""
    from mcpp.cas.atomic import temp_file

    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    work = tmp_path / "work"
    work.mkdir()
    fd, first = temp_file(str(work))
    os.close(fd)
    head, count = first.rsplit("-", 1)
    planted = f"{head}-{int(count, 16) + 1:x}"
    os.symlink(victim, planted)
    fd, second = temp_file(str(work))
    try:
        os.write(fd, b"attacker-chosen? no: mine")
    finally:
        os.close(fd)
    assert second not in (first, planted)
    assert victim.read_bytes() == b"precious" and os.path.islink(planted)


def test_temp_name_is_not_guessable_from_the_one_before(tmp_path):
    """`temp_name`'s caller may open the name without O_EXCL (a copy, an install): each name is
    random on its own, sharing nothing with the one before but the prefix."""
    from mcpp.cas.atomic import temp_name

    names = [os.path.basename(temp_name(str(tmp_path)))[len(TMP_PREFIX):] for _ in range(50)]
    assert len(set(names)) == 50
    assert len({n[:6] for n in names}) > 40  # no shared random part
