"""Putting declared inputs into an action directory, and what the action may not change there.

Inputs are never symlinks: a symlink would lead the compiler back into the real tree, where
``#include "x.h"`` resolves relative to the *link target's* directory and finds undeclared
neighbours, and ``realpath``-ing tools (gcc's header canonicalisation, ``__FILE__``) would leak
real paths into outputs. They are *hard links* to the store's read-only files (one ``link(2)``
per file, no bytes), or private copies (``copy=True``):

- under bwrap a hard link is safe because every staged input is mounted read-only inside the
  action (``readonly_paths`` says which paths, see worker.py); an action owns the file, so the
  mode bits alone would not stop ``chmod u+w`` and a write that every later build would see;
- under ``dir`` nothing can be mounted, so inputs are private copies (``PrivateCopies``: made
  once per engine thread, hard-linked into each of its actions, never shared with the store or
  another thread): an action that writes into one changes that copy only, and
  ``changed_inputs`` finds it afterwards (the action then fails, as the same write fails under
  bwrap, and the copy is thrown away);
- an input that is also a declared output is always a copy (the action is meant to rewrite it).
"""
from __future__ import annotations

import errno
import os
import posixpath
import shutil
import stat
import threading
from typing import Callable, Collection, Iterable, Mapping

from .errors import SandboxSpecError

_COPY_ERRNOS = {errno.EXDEV, errno.EPERM, errno.EMLINK, errno.EACCES, errno.ENOTSUP}


def relpath(path: str, what: str, label: str = "") -> str:
    """Normalise an action-relative path; refuse absolute paths and ``..`` escapes."""
    norm = posixpath.normpath(path)
    escapes = norm.startswith("/") or norm == ".." or norm.startswith("../")
    if escapes or (norm == "." and what != "cwd"):
        who = f"action {label}: " if label else ""
        raise SandboxSpecError(
            f"{who}{what} {path!r} must be relative to the action's root and stay inside it"
        )
    return norm


def tree_relpath(path: str, what: str, label: str = "") -> str:
    """`relpath`, keeping the `/` that marks a tree output (a directory the action fills)."""
    return relpath(path, what, label) + ("/" if path.endswith("/") else "")


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError as e:
        if e.errno not in _COPY_ERRNOS:
            raise
        if os.path.isdir(src):
            shutil.copytree(src, dst, copy_function=_link_or_copy)
        else:
            shutil.copy2(src, dst)


def make_parents(root: str, rel: str, made: set[str]) -> None:
    """Create the directories above ``rel`` under ``root`` that ``made`` does not list yet."""
    parent = posixpath.dirname(rel)
    if parent and parent not in made:
        os.makedirs(f"{root}/{parent}", exist_ok=True)
        while parent and parent not in made:
            made.add(parent)
            parent = posixpath.dirname(parent)


def at_or_below(rel: str, dirs: Collection[str]) -> bool:
    """Whether the relative path `rel` is one of `dirs` or lies below one."""
    while rel:
        if rel in dirs:
            return True
        rel = posixpath.dirname(rel)
    return False


def parent_dirs(rels: Iterable[str]) -> set[str]:
    """Every directory (relative, normalised) that must exist to hold ``rels``."""
    out: set[str] = set()
    for rel in rels:
        parent = posixpath.dirname(posixpath.normpath(rel))
        while parent and parent not in out:
            out.add(parent)
            parent = posixpath.dirname(parent)
    return out


def _copy(src: str, dst: str) -> None:
    if os.path.isdir(src):
        shutil.copytree(src, dst, copy_function=_copy)
    else:
        shutil.copyfile(src, dst)  # sendfile(2): no bytes through Python
        os.chmod(dst, stat.S_IMODE(os.stat(src).st_mode))


class PrivateCopies:
    """Copies of input files that belong to one engine thread's actions, in ``path``.

    A fresh copy per input per action costs a file creation and its bytes each time; a
    thread's own copy, hard-linked into each of its actions, costs one ``link(2)`` after the
    first. Nobody else links it, so (inode, size, mtime, ctime) taken after staging change only
    if the action changed it; the caller then ``drop``s it and the next action gets a new copy.
    """

    def __init__(self, make_dir: Callable[[], str]) -> None:
        self._make_dir = make_dir  # called for the first copy: most actions of a thread have inputs
        self.path: str | None = None
        self._copies: dict[str, tuple[tuple[int, ...], str]] = {}  # source -> (its stat, copy)
        self._n = 0

    def stage(self, src: str, dst: str) -> None:
        st = os.stat(src)
        if stat.S_ISDIR(st.st_mode):
            _copy(src, dst)
            return
        sig = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        known = self._copies.get(src)
        if known is None or known[0] != sig:
            if self.path is None:
                self.path = self._make_dir()
            copy = f"{self.path}/{self._n}"
            self._n += 1
            _copy(src, copy)
            self._copies[src] = known = (sig, copy)
        try:
            os.link(known[1], dst)
        except FileNotFoundError:  # the copy was removed behind our back: make it again
            self._copies.pop(src, None)
            self.stage(src, dst)

    def drop(self, srcs: Iterable[str]) -> None:
        for src in srcs:
            known = self._copies.pop(src, None)
            if known is not None:
                try:
                    os.unlink(known[1])
                except OSError:
                    pass


def stage_inputs(inputs: Mapping[str, str], root: str, label: str = "",
                 existing: set[str] | None = None, *, copies: PrivateCopies | None = None,
                 outputs: Collection[str] = ()) -> set[str]:
    """Hard-link each input into ``root`` (from ``copies`` when given); return the set of
    normalised relative paths. ``existing``: directories already present under ``root`` (not
    created again); an input among ``outputs`` is always a copy of its own."""
    made: set[str] = set(existing or ())
    staged: set[str] = set()
    links: list[tuple[str, str, str]] = []  # (rel, src, dst): plain hard links, made together below
    for rel, src in inputs.items():
        rel = relpath(rel, "input", label)
        if rel in staged:
            continue
        make_parents(root, rel, made)
        dst = f"{root}/{rel}"
        if rel in outputs or copies is not None:
            try:
                if rel in outputs:
                    _copy(src, dst)
                elif copies is not None:
                    copies.stage(src, dst)
            except FileNotFoundError:
                raise _no_source(label, rel, src) from None
        else:
            links.append((rel, src, dst))
        staged.add(rel)
    link_all(links, label)
    return staged


# From this many links on, a second thread makes half of them: a link is one system call that
# lets go of the GIL, and a link action stages a thousand
# objects spread over several directories, whose links the kernel makes side by side.
PARALLEL_LINKS = 256


def link_all(links: list[tuple[str, str, str]], label: str,
             link: Callable[[str, str], None] = _link_or_copy) -> None:
    """Make each (rel, source, destination) with `link` (from `PARALLEL_LINKS` on, on two
    threads); a missing source is a `SandboxSpecError` naming it."""
    if len(links) < PARALLEL_LINKS:
        _link_each(links, label, link)
        return
    half = len(links) // 2
    failed: list[BaseException] = []

    def first_half() -> None:
        try:
            _link_each(links[:half], label, link)
        except BaseException as e:  # noqa: BLE001 - raised below, on the caller's thread
            failed.append(e)

    helper = threading.Thread(target=first_half, name="mcpp-stage")
    helper.start()
    try:
        _link_each(links[half:], label, link)
    finally:
        helper.join()
    if failed:
        raise failed[0]


def _link_each(links: list[tuple[str, str, str]], label: str, link: Callable[[str, str], None]) -> None:
    for rel, src, dst in links:
        try:
            link(src, dst)
        except FileNotFoundError:
            raise _no_source(label, rel, src) from None


def _no_source(label: str, rel: str, src: str) -> SandboxSpecError:
    who = f"action {label}: " if label else ""
    return SandboxSpecError(f"{who}input {rel!r}: its source {src!r} does not exist")


def prepare_dirs(root: str, rels: Iterable[str], existing: set[str] | None = None) -> None:
    """Create the parent directories of the declared outputs (gcc does not create ``obj/``)."""
    made: set[str] = set(existing or ())
    for rel in rels:
        make_parents(root, rel, made)


def writable_dirs(outputs: Collection[str], cwd: str) -> set[str]:
    """The directories an action may write in (``""`` its root): those above its outputs, its
    working directory and those above it."""
    writable = parent_dirs(outputs) | {""}
    if cwd != ".":
        writable |= {cwd} | parent_dirs([cwd])
    return writable


def readonly_paths(staged: Iterable[str], outputs: Collection[str], cwd: str) -> list[str]:
    """The fewest action-relative paths whose read-only mounts cover every staged input and
    nothing the action may write: the topmost directories that hold no output and are not the
    working directory or above it (they hold inputs only), and single input files elsewhere.
    An input that is also an output is left writable (it is staged as a copy)."""
    writable = writable_dirs(outputs, cwd)
    out: dict[str, None] = {}
    for rel in staged:
        if rel in outputs:
            continue
        parts = rel.split("/")
        for i in range(1, len(parts)):
            d = "/".join(parts[:i])
            if d not in writable:
                out.setdefault(d, None)
                break
        else:
            out.setdefault(rel, None)
    return list(out)


def snapshot(root: str, staged: Iterable[str]) -> dict[str, tuple[int, ...]]:
    """What ``changed_inputs`` compares: (inode, size, mtime, ctime, mode) of each staged file.
    ctime cannot be set back by an action: a ``chmod``, a write and a ``utime`` all move it."""
    out: dict[str, tuple[int, ...]] = {}
    for rel in staged:
        try:
            st = os.lstat(f"{root}/{rel}")
        except OSError:
            continue
        out[rel] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)
    return out


def changed_inputs(root: str, before: Mapping[str, tuple[int, ...]]) -> list[str]:
    """The staged inputs that the action changed, replaced or removed since ``snapshot``."""
    now = snapshot(root, before)
    return sorted(rel for rel, sig in before.items() if now.get(rel) != sig)


def changed_inputs_message(label: str, paths: Iterable[str]) -> bytes:
    lines = [f"error: action {label} modified its input {p}" for p in paths]
    lines.append("note: inputs are read-only; write a declared output instead (under bwrap the "
                 "same write fails)")
    return ("\n".join(lines) + "\n").encode()
