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
import itertools
import os
import queue
import shutil
import threading

from mcpp.sandbox.pool import process_alive

from mcpp.cas.unwaited_thread import start_unwaited

DISCARDED = "discarded"  # the directory's name in target/<profile>/.mcpp


class Discard:
    """The build's discard directory and the thread that empties it."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._names = itertools.count()
        self._pending: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._emptying = False  # its thread started (and not yet told to end)
        self._lock = threading.Lock()
        self._made = False  # the directory was made (or found) this build
        # What the thread has still to delete (the sweep counts as one): `close` waits for it to
        # reach 0, not for the thread to end, whose wake-up and exit it would otherwise wait for
        # too, after the build's last action (0.1-2 ms on two busy cores).
        self._left = 0
        self._done = threading.Condition()

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
        self._start()
        with self._done:
            self._left += 1
        self._pending.put(target)
        return True

    def close(self) -> None:
        """Wait until everything moved is deleted (once the build's last action ran, before its
        answer: nothing of the build touches target/ after it)."""
        with self._lock:
            emptying, self._emptying = self._emptying, False
        if not emptying:
            return
        self._pending.put(None)  # the thread ends after the last deletion, on its own
        with self._done:
            while self._left:
                self._done.wait()

    def _start(self) -> None:
        with self._lock:
            if not self._emptying:
                with self._done:
                    self._left += 1  # the sweep
                try:
                    start_unwaited(self._empty)  # the action it moved a file for starts meanwhile
                except BaseException:  # no thread (a Ctrl-C, no resources): `close` waits for none
                    with self._done:
                        self._left -= 1
                    raise
                self._emptying = True

    def _empty(self) -> None:
        try:
            _sweep(self.directory)
        except Exception:  # noqa: BLE001 - only a sweep: what is left waits for the next build's
            pass
        finally:
            self._deleted()
        while (target := self._pending.get()) is not None:
            try:
                delete(target)
            except OSError:
                pass  # left for the next build's sweep
            finally:
                self._deleted()

    def _deleted(self) -> None:
        with self._done:
            self._left -= 1
            if not self._left:
                self._done.notify_all()


def delete(path: str) -> None:
    """Delete `path` where it is: a file (a link as a link), or a directory with what it holds."""
    try:
        os.unlink(path)
    except IsADirectoryError:  # an earlier run made a directory where the file is declared
        shutil.rmtree(path)
    except FileNotFoundError:
        pass


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

