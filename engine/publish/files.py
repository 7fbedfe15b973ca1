"""Which files a package holds when it is packaged: the package's own tree, minus what is not
the package's.

The rule is the directory, not the manifest's references: a build program may `read_file` or
`glob` any file of its package, and a list derived from `[build] sources` and include directories
would drop exactly those (the verifying build of `mcpp package` would then fail, but the user
would have no way to add them). So every file below the package root is packaged, except:

- `target/` at the package root (build outputs);
- every name starting with `.`: VCS data (`.git`, `.hg`, `.svn`, `.jj`, ...), editor and tool
  state (`.vscode`, `.cache`), and the files that hold secrets by convention (`.env`, `.netrc`);
- a subdirectory holding its own `mcpp.toml`: another package (a workspace member, a path
  dependency kept inside), published by itself;
- devices, fifos and sockets;
- a symlink that leads out of the package, into an excluded place, or nowhere: it is never
  followed, so a link to `~/.ssh` publishes nothing. A link that stays inside is kept as a link,
  its text rewritten to the shortest relative path to what it names (the unpacker checks it again).

Skipped links are reported (a skipped link is a file the package may need). Nothing here reads a
file's content: the tarball writer opens each one without following links.
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass

from ..core.errors import McppError

MANIFEST_NAME = "mcpp.toml"


@dataclass(frozen=True)
class Entry:
    """One packaged path: `rel` is `/`-separated below the package root."""
    rel: str
    kind: str  # "file" | "symlink"
    size: int = 0  # file: bytes when listed
    executable: bool = False
    link: str = ""  # symlink: the text it is packaged with


@dataclass(frozen=True)
class Listing:
    entries: tuple[Entry, ...]  # sorted by `rel`
    skipped: tuple[str, ...]  # why each skipped link was left out, one sentence each

    @property
    def total_bytes(self) -> int:
        return sum(e.size for e in self.entries)


def _excluded_dir(root: str, rel: str, name: str) -> bool:
    if name.startswith("."):
        return True
    if not rel and name == "target":
        return True
    return os.path.isfile(os.path.join(root, rel, name, MANIFEST_NAME))


def package_files(root: str) -> Listing:
    """The files of the package whose manifest is `<root>/mcpp.toml`, sorted."""
    root = os.path.realpath(root)
    entries: list[Entry] = []
    skipped: list[str] = []
    links: list[str] = []
    for here, dirs, files in os.walk(root, followlinks=False, onerror=_raise):
        rel_here = os.path.relpath(here, root)
        rel_here = "" if rel_here == "." else rel_here.replace(os.sep, "/")
        kept_dirs = []
        for d in dirs:
            full = os.path.join(here, d)
            if os.path.islink(full):
                files.append(d)  # a link to a directory is a link like any other
            elif not _excluded_dir(root, rel_here, d):
                kept_dirs.append(d)
        dirs[:] = sorted(kept_dirs)
        for name in files:
            if name.startswith("."):
                continue
            rel = f"{rel_here}/{name}" if rel_here else name
            full = os.path.join(here, name)
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                links.append(rel)
            elif stat.S_ISREG(st.st_mode):
                entries.append(Entry(rel, "file", st.st_size, bool(st.st_mode & 0o111)))
    packaged = {e.rel for e in entries}
    for rel in links:
        text, why = _link_text(root, rel, packaged)
        if text is None:
            skipped.append(f"`{rel}` is a link {why}; it is not packaged")
        else:
            entries.append(Entry(rel, "symlink", link=text))
    if not any(e.rel == MANIFEST_NAME and e.kind == "file" for e in entries):
        raise McppError(f"{root}: no {MANIFEST_NAME} to package")
    return Listing(tuple(sorted(entries, key=lambda e: e.rel)), tuple(skipped))


def _raise(e: OSError) -> None:
    raise e


def _link_text(root: str, rel: str, packaged: set[str]) -> tuple[str | None, str]:
    """(the relative text a link inside the package is packaged with, "") or (None, why not)."""
    full = os.path.join(root, rel)
    target = os.path.realpath(full)
    shown = os.readlink(full)
    if target != root and not target.startswith(root + os.sep):
        return None, f"to `{shown}`, outside the package"
    inner = os.path.relpath(target, root).replace(os.sep, "/")
    if not os.path.exists(target):
        return None, f"to `{shown}`, which does not exist"
    if os.path.isdir(target):
        if not any(p == inner or p.startswith(inner + "/") for p in packaged) and inner != ".":
            return None, f"to `{shown}`, a directory that is not packaged"
    elif inner not in packaged:
        return None, f"to `{shown}`, a file that is not packaged"
    parent = os.path.dirname(rel)
    return os.path.relpath(inner, parent or ".").replace(os.sep, "/"), ""
