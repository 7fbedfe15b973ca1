"""Stale outputs moved out of an action's way at once, and deleted while it runs.

An action's old outputs must be gone before it runs (`action_runner.prepare_outputs`): an
archiver would append to an old archive, and an output restored from the store is a hard link
into it. Unlinking a large file frees its pages and blocks there and then: 1.5-3 ms for the
3-8 MB binary of an edit-one build's link, every one of them in front of the link the build
waits for. A rename into the build's discard directory (`target/<profile>/.mcpp/discarded`, on
the outputs' filesystem) costs what the unlink of a small file costs; a thread deletes what was
moved while the action runs, on a core the action leaves idle.

What a killed build left there is deleted by the next build that discards something (its
entries are named by the pid that moved them, and a live process's are left alone). Where a
rename cannot be made (an output directory on another filesystem), the output is deleted in
place, as before.
"""
from __future__ import annotations

import errno
import functools
import itertools
import os
import shutil

from mcpp.sandbox.pool import process_alive

from mcpp.cas.unwaited_thread import SerialThread

DISCARDED = "discarded"  # the directory's name in target/<profile>/.mcpp


class Discard:
    """The build's discard directory and the thread that empties it."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._names = itertools.count()
        # Each thread it starts first sweeps what killed builds left; `close` waits for what is
        # left to delete, not for the thread to end (cas/unwaited_thread.py).
        self._thread = SerialThread(first=functools.partial(_sweep, directory))
        self._made = False  # the directory was made (or found) this build

    def take(self, path: str) -> bool:
        """Move `path` (a file or a directory) out of the way; False where nothing is there.
        Raises the `OSError` an in-place delete would, where no rename can be made."""
        if not self._made:  # once a build: a clean build's renames then find no file, one syscall each
            os.makedirs(self.directory, exist_ok=True)
            self._made = True
        target = os.path.join(self.directory, f"{os.getpid()}-{next(self._names)}")
        try:
            os.rename(path, target)
        except FileNotFoundError:
            return False
        except OSError as e:
            if e.errno not in (errno.EXDEV, errno.EACCES, errno.EPERM, errno.EBUSY, errno.ENOTEMPTY, errno.EEXIST):
                raise
            delete(path)  # where no rename can be made: in place, as before
            return True
        # the action it moved a file for starts meanwhile; what cannot be deleted is left for
        # the next build's sweep
        self._thread.call(functools.partial(_delete_quietly, target))
        return True

    def close(self) -> None:
        """Wait until everything moved is deleted (once the build's last action ran, before its
        answer: nothing of the build touches target/ after it)."""
        self._thread.wait()


def delete(path: str) -> None:
    """Delete `path` where it is: a file (a link as a link), or a directory with what it holds."""
    try:
        os.unlink(path)
    except IsADirectoryError:  # an earlier run made a directory where the file is declared
        shutil.rmtree(path)
    except FileNotFoundError:
        pass


def _delete_quietly(path: str) -> None:
    try:
        delete(path)
    except OSError:
        pass  # left for the next build's sweep


def _sweep(directory: str) -> None:
    """Delete what builds that are gone left (killed before their thread was done)."""
    ours = os.getpid()
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        pid = name.split("-", 1)[0]
        if not pid.isdigit() or int(pid) == ours or process_alive(int(pid)):
            continue
        try:
            delete(os.path.join(directory, name))
        except OSError:
            pass

