"""Putting declared inputs into an action directory and taking declared outputs out.

Inputs are *hard links* (a copy when the source is on another filesystem or cannot be linked),
never symlinks: a symlink would lead the compiler back into the real tree, where ``#include
"x.h"`` resolves relative to the *link target's* directory and finds undeclared neighbours, and
``realpath``-ing tools (gcc's header canonicalisation, ``__FILE__``) would leak real paths into
outputs. A hard link is the same inode, so staging costs one ``link(2)`` per file and no bytes.
The price: an action that writes *into* an input file in place would modify the source too;
compilers never do, and the CAS's materialised files are read-only.

Only declared outputs leave the directory (a ``rename``); everything else the action wrote is
removed with the directory.
"""
from __future__ import annotations

import errno
import os
import posixpath
import shutil
from typing import Iterable, Mapping

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


def _make_parents(root: str, rel: str, made: set[str]) -> None:
    parent = posixpath.dirname(rel)
    if parent and parent not in made:
        os.makedirs(f"{root}/{parent}", exist_ok=True)
        while parent and parent not in made:
            made.add(parent)
            parent = posixpath.dirname(parent)


def parent_dirs(rels: Iterable[str]) -> set[str]:
    """Every directory (relative, normalised) that must exist to hold ``rels``."""
    out: set[str] = set()
    for rel in rels:
        parent = posixpath.dirname(posixpath.normpath(rel))
        while parent and parent not in out:
            out.add(parent)
            parent = posixpath.dirname(parent)
    return out


def stage_inputs(inputs: Mapping[str, str], root: str, label: str = "",
                 existing: set[str] | None = None) -> set[str]:
    """Hard-link each input into ``root``; return the set of normalised relative paths.
    ``existing``: directories already present under ``root`` (not created again)."""
    made: set[str] = set(existing or ())
    staged: set[str] = set()
    for rel, src in inputs.items():
        rel = relpath(rel, "input", label)
        if rel in staged:
            continue
        _make_parents(root, rel, made)
        try:
            _link_or_copy(src, f"{root}/{rel}")
        except FileNotFoundError:
            who = f"action {label}: " if label else ""
            msg = f"{who}input {rel!r}: its source {src!r} does not exist"
            raise SandboxSpecError(msg) from None
        staged.add(rel)
    return staged


def prepare_dirs(root: str, rels: Iterable[str], existing: set[str] | None = None) -> None:
    """Create the parent directories of the declared outputs (gcc does not create ``obj/``)."""
    made: set[str] = set(existing or ())
    for rel in rels:
        _make_parents(root, rel, made)


def collect_flat(outputs: Iterable[str], root: str, results: str, tag: str) -> dict[str, str]:
    """Move each produced output to ``<results>/<tag>-<i>-<basename>``; absent ones are left
    out. ``tag`` (the action directory's name) makes the names unique across actions."""
    collected: dict[str, str] = {}
    for i, rel in enumerate(outputs):
        dst = f"{results}/{tag}-{i}-{posixpath.basename(rel)}"
        try:
            os.rename(f"{root}/{rel}", dst)
        except FileNotFoundError:
            continue
        collected[rel] = dst
    return collected


def collect_outputs(outputs: Iterable[str], root: str, out_dir: str) -> dict[str, str]:
    """Move each produced output from ``root`` to ``out_dir``; absent ones are left out."""
    collected: dict[str, str] = {}
    made: set[str] = set()
    ready = False
    for rel in outputs:
        src, dst = f"{root}/{rel}", f"{out_dir}/{rel}"
        if not os.path.lexists(src):
            continue
        if not ready:
            os.makedirs(out_dir, exist_ok=True)
            ready = True
        _make_parents(out_dir, rel, made)
        try:
            os.rename(src, dst)
        except OSError as e:
            if e.errno != errno.EXDEV:
                raise
            shutil.move(src, dst)
        collected[rel] = dst
    return collected
