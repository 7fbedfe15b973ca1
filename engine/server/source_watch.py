"""Whether the server's own sources may have changed since it started.

A client must never have its build run by other code than its own (protocol.py). Digesting
every installed `.py` file costs a millisecond or two per request; inotify on the source
directories, set up before the server takes its digest, says for free that nothing was
written there since, and only then is the digest skipped. Without inotify every request pays.
"""
from __future__ import annotations

import os

from .watcher import EVERY_CHANGE, IN_ISDIR, Descriptor, inotify_open, read_events


class SourceWatch(Descriptor):
    def __init__(self, dirs: list[str]):
        self.fd = None
        self.touched = False
        try:
            libc, fd = inotify_open()
        except (OSError, AttributeError):
            return
        for d in dirs:
            if libc.inotify_add_watch(fd, os.fsencode(d), EVERY_CHANGE) < 0:
                os.close(fd)
                return
        self.fd = fd

    def drain(self) -> None:
        if self.fd is not None:
            for _wd, mask, name in read_events(self.fd):
                # the interpreter's own byte-code caches come and go; anything else may be code
                if name != "__pycache__" and (name.endswith(".py") or not name or mask & IN_ISDIR):
                    self.touched = True

    def quiet(self) -> bool:
        """True when certainly nothing was written to the sources since the watch began."""
        if self.fd is None:
            return False
        self.drain()
        return not self.touched
