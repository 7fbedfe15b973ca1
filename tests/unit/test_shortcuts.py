"""engine/core/shortcuts.py: every shortcut that skips work is registered with the check that makes it
valid, each check exists, and code shaped like a new shortcut cannot land unregistered."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from mcpp.engine.core.shortcuts import NOT_SHORTCUTS, SHORTCUTS, table

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("engine", "cas", "sandbox")
# What a shortcut looks like: a stat fingerprint, a cache or memo by name, an inotify watch.
SHAPE = re.compile(r"st_mtime|st_ino|st_ctime|^\s*(class|def) _?\w*([Cc]ache|[Mm]emo)\w*|inotify|read_events",
                   re.MULTILINE)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return "mcpp." + ".".join(parts)


def _shaped() -> dict[str, Path]:
    return {_module_name(p): p for root in ROOTS for p in sorted((REPO / root).rglob("*.py"))
            if SHAPE.search(p.read_text(encoding="utf-8"))}


def _resolve(name: str):
    module, _, qualname = name.partition(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def test_shortcut_names_are_unique_and_each_says_what_it_skips_and_what_ends_it():
    names = [s.name for s in SHORTCUTS]
    assert len(names) == len(set(names))
    for s in SHORTCUTS:
        assert s.skips and s.invalidated_by and s.checks, s.name


@pytest.mark.parametrize("shortcut", SHORTCUTS, ids=lambda s: s.name)
def test_every_registered_check_exists(shortcut):
    importlib.import_module(shortcut.module)
    for check in shortcut.checks:
        assert ":" in check, f"{check}: write checks as `module:qualified.name`"
        assert callable(_resolve(check)) or isinstance(_resolve(check), property), check


def test_every_module_shaped_like_a_shortcut_is_registered_or_says_why_not():
    registered = {s.module for s in SHORTCUTS} | {c.partition(":")[0] for s in SHORTCUTS for c in s.checks}
    unexplained = sorted(set(_shaped()) - registered - set(NOT_SHORTCUTS))
    assert not unexplained, (
        "these modules keep stats, a cache, a memo or a watch: register each shortcut in "
        f"engine/core/shortcuts.py with its check, or list the module in NOT_SHORTCUTS with why: {unexplained}")


def test_the_exemptions_name_modules_that_exist():
    for module in NOT_SHORTCUTS:
        importlib.import_module(module)


def test_the_architecture_document_shows_the_registry():
    doc = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert table() in doc, "docs/ARCHITECTURE.md's Shortcuts table differs: paste engine.core.shortcuts.table()"
