"""A reused action directory, one per worker: a bwrap worker's ``/execroot`` on the
host, or the directory the ``dir`` sandbox runs that thread's actions in.

A fresh action directory costs a ``mkdir`` per directory level of every input and output
(``target/dev/.mcpp/obj/pkg/src/...``), and creating a directory is far slower than making a hard
link (bench/RESULTS.md). A slot keeps its directories
from one action to the next and removes every *file* an action left. Before the next action
it removes the directories that action does not need and creates the ones it lacks, so the
action sees exactly the tree a fresh directory would hold: its inputs, and the parents of its
inputs, outputs and working directory.

The files go when the next action is prepared, not when the last one ends (`release`): a link
that staged a thousand objects leaves a thousand names to unlink, and after the last
action of a build nobody should wait for that. The pool removes the whole slot when it shuts
down (after the client has its answer, in a server's build child: engine/exec/after_reply.py).

Clearing lists every directory the action could write in, and only those. A bwrap worker mounts
the directories that hold only inputs read-only for the action (`inputs.readonly_paths`); once
it has run with them (`sealed`), nothing but the engine's own staging wrote there, so their
files are unlinked by name and they are not listed. Listing a directory is five system calls
(open, fstat, two getdents, close), and a compile's slot has a dozen directories, a third of
them under its sources and headers (bench/RESULTS.md).
"""
from __future__ import annotations

import itertools
import os
import posixpath
from typing import Iterable

from .input_tree import HeldTree
from .inputs import at_or_below, parent_dirs, relpath
from .pool import rmtree
from .spec import SandboxSpec

# A slot is `<pool base>/<pid>-<n>.slot`: it stays, without files between actions, until the pool
# shuts down (or a later engine reclaims it), so it is named apart from one-action directories.
SLOT_SUFFIX = ".slot"


class Slot:
    def __init__(self, path: str) -> None:
        self.path = path
        self.dirs: set[str] = set()  # relative directories present (and no file anywhere, unless `dirty`)
        self.dirty = False  # the last action's files are still here
        # the last action's inputs (relative), and the directories among them it had read-only
        self._inputs: list[str] = []
        self._sealed: frozenset[str] = frozenset()
        self._runs = itertools.count()

    def next_tag(self) -> str:
        """A name for one action's collected outputs, unique across every slot and action."""
        return f"{os.path.basename(self.path)}-{next(self._runs)}"

    def release(self) -> None:
        """The action that used the slot is over: its files go before the next one is prepared."""
        self.dirty = True

    def seal(self, readonly: Iterable[str]) -> None:
        """The action prepared last has run, and ended, with `readonly` (relative paths: the
        directories among them hold staged inputs only) mounted read-only for it: the next
        `clear` unlinks the inputs there by name instead of listing those directories. Only a
        sandbox that mounted them says so, after the action's last process is gone."""
        self._sealed = frozenset(d for d in readonly if d in self.dirs)

    def prepare(self, spec: SandboxSpec, tree: HeldTree | None = None) -> set[str]:
        """Make the directory tree exactly what `spec` needs; return it (relative paths). With
        `tree`, the inputs it holds need only the directories it is bound at."""
        if self.dirty:
            self.clear()
        if tree is None:
            inputs = [relpath(r, "input", spec.label) for r in spec.inputs]
            rels = list(inputs)
        else:
            inputs = list(tree.loose)
            rels = inputs + [f"{d}/x" for d in tree.mounts]  # d itself, empty
        self._inputs = inputs
        rels += [relpath(o, "output", spec.label) for o in spec.outputs]
        cwd = relpath(spec.cwd, "cwd", spec.label)
        needed = parent_dirs(rels + ([posixpath.join(cwd, "x")] if cwd != "." else []))
        for d in sorted(self.dirs - needed, key=len, reverse=True):  # children before parents
            os.rmdir(f"{self.path}/{d}")
        for d in sorted(needed - self.dirs, key=len):  # parents before children
            os.mkdir(f"{self.path}/{d}")
        self.dirs = set(needed)
        return needed

    def clear(self) -> None:
        """Remove every file the last action left (inputs, undeclared outputs, anything)."""
        sealed, self._sealed = self._sealed, frozenset()
        try:
            dirs: set[str] = set()
            if sealed:  # read-only for the action: what is there is what was staged
                dirs.update(d for d in self.dirs if at_or_below(d, sealed))
                for rel in self._inputs:
                    if at_or_below(rel, sealed):
                        try:
                            os.unlink(f"{self.path}/{rel}")
                        except FileNotFoundError:  # staged as a prepared tree's, or never staged
                            pass
            # One scandir per directory, its entries' types from the directory itself (no stat,
            # no relpath): this runs before every action.
            pending = [("", self.path)]
            while pending:
                rel, full = pending.pop()
                with os.scandir(full) as listing:  # unreadable: start over (below)
                    entries = list(listing)  # whole before any unlink: some file systems skip otherwise
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        name = rel + entry.name
                        dirs.add(name)
                        if name not in sealed:
                            pending.append((name + "/", entry.path))
                    else:  # a file, or a symlink (to a directory too): the name goes
                        os.unlink(entry.path)
            self.dirs = dirs
            self.dirty = False
        except OSError:  # an action changed permissions, say: start from nothing
            self.reset()

    def reset(self) -> None:
        for entry in os.scandir(self.path):
            if entry.is_dir(follow_symlinks=False):
                rmtree(entry.path)
            else:
                os.unlink(entry.path)
        self.dirs = set()
        self.dirty = False
        self._sealed = frozenset()
