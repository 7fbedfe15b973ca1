"""Source globs for `[build] sources`: `src/**/*.cpp`, `{a,b}/*.cc`, `!src/legacy/**`.

Why our own: `glob.glob` has no `{a,b}` alternatives and no exclusions, walks each pattern
separately, and recurses into `.git` and `target/`. This expansion runs on every build of projects
with thousands of files, so each pattern is compiled once (cached) to a regex over the whole
relative path, every directory is read at most once per call (os.scandir), and only the directory
each pattern can match under is walked.

Syntax (patterns are relative to the root and `/`-separated):
  `*` any run of characters within a segment; `?` one character; `[abc]` `[a-z]` `[!a]` classes;
  `**` as a whole segment: zero or more directories (elsewhere it is just `*`);
  `{a,b,c}` alternatives, which may hold `/`, wildcards and nested braces;
  a leading `!` makes the pattern an exclusion.
Semantics:
  result = (files matched by any positive pattern) - (files matched by any exclusion), in any order;
  a wildcard never matches a leading `.` of a name (write the dot); walks never enter directories
  named `.*`, nor `target` directly under the root, unless the pattern names them literally;
  symlinks to files are followed; a symlinked directory is walked only if the directory it points to
  was not walked already (real paths win, loops end);
  a symlink that leads outside `boundary` (by default the root; the package for sources) is an
  error naming it, when the walk would enter it or the patterns select it: the engine reads what a
  glob returns outside any sandbox, so `src/x.cpp -> /etc/shadow` or `rootlink -> /` must never
  bring a host file or directory listing into a build (engine/core/containment.py);
  a directory the walk must list, or a file it selects, that cannot be read is an error naming it
  (a build that silently compiled nothing would pass, and be remembered as done);
  a selected name that is not a regular file (a FIFO, a socket, a device, or a link to one) is an
  error naming it: it is never opened (opening a FIFO blocks), and never silently left out;
  a selected name that is not UTF-8 (a file system holds bytes) is an error naming it with its
  bytes escaped: it could not be written into a command line, a key or a message as it is.
"""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence

from mcpp.engine.core.containment import check as check_inside
from mcpp.engine.core.errors import ManifestError

_MAGIC = re.compile(r"[*?]|\[.+?\]")


@dataclass(frozen=True)
class _Glob:
    """One glob pattern, parsed for matching relative paths."""
    # a regular expression (its text) full-matching the relative paths of the glob: compiled
    # where one glob is asked alone (`match`); `expand` compiles the union of its patterns only
    source: str
    literals: tuple[str, ...]  # brace alternatives without wildcards: file paths as written
    walks: tuple[tuple[str, int | None], ...]  # (directory, depth; None = unbounded) to list


def match(pattern: str, relpath: str) -> bool:
    """Whether `relpath` matches the glob. A leading `!` is ignored: this asks about the glob
    itself; how exclusions combine is `expand`'s business."""
    relpath = relpath[2:] if relpath.startswith("./") else relpath
    return re.fullmatch(_compile(pattern.removeprefix("!")).source, relpath) is not None


Expand = Callable[..., list[str]]  # `expand`'s signature: (root, patterns, boundary=None)


def expand(root: str, patterns: Sequence[str], boundary: str | None = None) -> list[str]:
    """The sorted, unique, `/`-separated relative paths of the regular files under `root` that the
    patterns select. Raises ManifestError for a pattern that is empty, absolute or uses `..`, for a
    selected or walked symlink that leads outside `boundary` (default: `root`), and for a directory
    or selected file that cannot be read."""
    return _expand(root, patterns, boundary)


def first(root: str, patterns: Sequence[str]) -> str | None:
    """One file `expand(root, patterns)` returns, found by walking only as far as the first one
    (each directory in name order, depth first): for a first build that starts one compile before
    the whole tree is listed (engine/plan/planner.py). None where the quick look cannot be sure:
    a pattern that walks nothing, a symlink on the way, a name that is not UTF-8, anything
    unreadable; `expand` then says what is wrong, as it always does."""
    try:
        globs = [_compile(p) for p in patterns if not p.startswith("!")]
        wanted = _union(tuple(p for p in patterns if not p.startswith("!")))
        negative = _union(tuple(p[1:] for p in patterns if p.startswith("!")))
        real_root = os.path.realpath(root)
        for g in globs:
            for base, depth in g.walks:
                if os.path.realpath(os.path.join(root, base)) != os.path.normpath(os.path.join(real_root, base)):
                    return None  # `base` is, or lies under, a symlink: `expand`'s walk decides
                found = _first_under(root, base, float("inf") if depth is None else depth, wanted, negative)
                if found is not None:
                    return found
    except (ManifestError, OSError):
        return None
    return None


def _first_under(root: str, d: str, left: float, wanted, negative) -> str | None:
    files, dirs = [], []
    with os.scandir(os.path.join(root, d) if d else root) as it:
        for e in it:
            rel = f"{d}/{e.name}" if d else e.name
            if e.is_symlink():
                raise OSError("a symlink: left to `expand`")
            if e.is_file(follow_symlinks=False):
                files.append(rel)
            elif e.is_dir(follow_symlinks=False) and left > 1 and not e.name.startswith(".") \
                    and (d or e.name != "target"):
                dirs.append(rel)
    for f in sorted(files):
        if wanted.fullmatch(f) and not (negative is not None and negative.fullmatch(f)):
            if not f.isascii() or not os.access(os.path.join(root, f), os.R_OK):
                return None
            return f
    for sub in sorted(dirs):
        found = _first_under(root, sub, left - 1, wanted, negative)
        if found is not None:
            return found
    return None


class Expansions:
    """`expand` for a warm build server's build child (engine/server/child_memory.py): it
    remembers each expansion it made (`made`, handed back to the server), and answers from
    those of the previous build of the same request (`given`) when the server's watcher saw no
    directory under the package roots change shape since that build began (no file created,
    deleted, renamed or re-moded): an expansion reads nothing else, so it is the same. Only
    expansions wholly inside a root watched all along (`watched`) are taken, and none whose
    patterns name a directory the watcher skips."""

    def __init__(self, given: dict | None = None, watched: frozenset[str] = frozenset()) -> None:
        self.given = given
        self.made: dict = {}
        self._roots = tuple(r.rstrip("/") + "/" for r in watched)

    def expand(self, root: str, patterns: Sequence[str], boundary: str | None = None) -> list[str]:
        key = (root, tuple(patterns), boundary)
        given = self.given
        if given is not None and key in given and self._covered(boundary or root) and _watched(patterns):
            found = given[key]
        else:
            found = _expand(root, patterns, boundary)
        self.made[key] = found
        return list(found)

    def _covered(self, path: str) -> bool:
        return (path.rstrip("/") + "/").startswith(self._roots)


def _watched(patterns: Sequence[str]) -> bool:
    """No pattern names a directory the server's watcher skips (dot directories, `target/`)."""
    for p in patterns:
        parts = p.removeprefix("!").split("/")
        if parts[0] == "target" or any(part.startswith(".") for part in parts):
            return False
    return True


def _expand(root: str, patterns: Sequence[str], boundary: str | None) -> list[str]:
    positive = [_compile(p) for p in patterns if not p.startswith("!")]
    if not positive:
        return []
    negative = _union(tuple(p[1:] for p in patterns if p.startswith("!")))
    walker = _Walker(root, boundary or root)
    walker.check("")
    found = set()
    literals = set()
    for g in positive:
        for p in g.literals:
            kind = _kind(os.path.join(root, p))
            if kind == "file":
                literals.add(p)
            elif kind is not None:
                walker.special[p] = kind
        for base, depth in g.walks:
            walker.check(base)
            walker.walk(base, depth)
    walker.finish()
    wanted = _union(tuple(p for p in patterns if not p.startswith("!")))
    found.update(f for f in walker.files if wanted.fullmatch(f))
    found |= literals
    if negative is not None:
        found = {f for f in found if not negative.fullmatch(f)}
    for f, kind in sorted(walker.special.items()):
        if (wanted.fullmatch(f) or f in literals) and not (negative is not None and negative.fullmatch(f)):
            raise ManifestError(f"`{f}` is not a regular file ({kind}); a source or header must be one")
    for f in found:  # literals may pass through a symlinked directory; walked files may be links
        if not f.isascii():
            try:
                f.encode()
            except UnicodeEncodeError:
                shown = os.fsencode(f).decode("utf-8", "backslashreplace")
                raise ManifestError(f"file name `{shown}` is not UTF-8; mcpp cannot write it into a command "
                                    f"line or a message as it is: rename the file") from None
        if f in literals or f in walker.linked_files:
            walker.check(f)
        if not os.access(os.path.join(root, f), os.R_OK):
            raise ManifestError(f"cannot read `{os.path.join(root, f)}`: permission denied")
    return sorted(found)


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"))


def _kind(path: str) -> str | None:
    """"file" for a regular file (or a link to one), None for nothing there or a directory, else
    what it is (`a FIFO`); found by `stat`, never by opening it."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


# A pattern's last segment that is any name with one literal extension (`*.cpp`).
_ANY_WITH_EXTENSION = re.compile(r"\*\.([A-Za-z0-9_+-]+)")


@lru_cache(maxsize=1024)
def _union(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """One expression full-matching what any of `patterns` matches. Patterns that differ only in
    the extension of a last segment `*.EXT` (the default source and header globs: fifteen and
    eleven of them) are one alternative ending in `\\.(?:c|cpp|...)`: the same paths, and an
    expression a fraction of the size to compile, which every build that expands them does."""
    if not patterns:
        return None
    alternatives: list[str] = []
    extensions: dict[str, list[str]] = {}  # what precedes the extension -> the extensions
    for p in patterns:
        source = _compile(p).source  # each pattern checked, as it is alone
        segs = [s for s in p.split("/") if s not in ("", ".")]
        last = _ANY_WITH_EXTENSION.fullmatch(segs[-1])
        if last is None or "{" in p:
            alternatives.append(source)
            continue
        escaped = re.escape(last.group(1))
        whole = _translate(segs)
        extensions.setdefault(whole[: len(whole) - len(escaped)], []).append(escaped)
    alternatives += [f"{head}(?:{'|'.join(exts)})" for head, exts in extensions.items()]
    return re.compile("|".join(f"(?:{a})" for a in alternatives))


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> _Glob:
    if not pattern:
        raise ManifestError("empty source pattern")
    if pattern.startswith("/"):
        raise ManifestError(f"source pattern `{pattern}` must be relative to the package root")
    regexes, literals, walks = [], [], []
    for alt in dict.fromkeys(_braces(pattern)):
        segs = [s for s in alt.split("/") if s not in ("", ".")]
        if ".." in segs:
            raise ManifestError(f"source pattern `{pattern}` must not leave the root (`..`)")
        if not segs:
            raise ManifestError(f"source pattern `{pattern}` names no file")
        regexes.append(_translate(segs))
        magic = [i for i, s in enumerate(segs) if _MAGIC.search(s)]
        if not magic:
            literals.append("/".join(segs))
            continue
        first = magic[0]
        rest = segs[first:]
        walks.append(("/".join(segs[:first]), None if "**" in rest else len(rest)))
    return _Glob("|".join(f"(?:{r})" for r in regexes), tuple(literals), tuple(walks))


def _braces(p: str) -> list[str]:
    """Bash-style brace expansion; an unbalanced `{` is literal."""
    i = p.find("{")
    while i >= 0:
        depth, cuts = 0, [i]
        for j in range(i, len(p)):
            if p[j] == "{":
                depth += 1
            elif p[j] == "}":
                depth -= 1
                if depth == 0:
                    cuts.append(j)
                    tails = _braces(p[j + 1 :])
                    alts = [p[a + 1 : b] for a, b in zip(cuts, cuts[1:])]
                    return [p[:i] + x + t for alt in alts for x in _braces(alt) for t in tails]
            elif p[j] == "," and depth == 1:
                cuts.append(j)
        i = p.find("{", i + 1)
    return [p]


def _translate(segs: list[str]) -> str:
    out = []
    for i, seg in enumerate(segs):
        last = i == len(segs) - 1
        if seg == "**":
            out.append(r"(?:(?!\.)[^/]+/)*" + (r"(?!\.)[^/]+" if last else ""))
        else:
            out.append(_segment(seg) + ("" if last else "/"))
    return "".join(out)


def _segment(seg: str) -> str:
    out = [r"(?!\.)"] if seg[0] in "*?" else []
    i = 0
    while i < len(seg):
        c = seg[i]
        if c == "*":
            out.append("[^/]*")
            while i + 1 < len(seg) and seg[i + 1] == "*":
                i += 1
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (end := _class_end(seg, i)) > 0:
            body = seg[i + 1 : end]
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            body = re.sub(r"([\\\[\]&~|^])", r"\\\1", body)
            out.append(f"[^/{body}]" if negate else f"(?!/)[{body}]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _class_end(seg: str, i: int) -> int:
    """Index of the `]` closing the class opened at seg[i], or -1 (then `[` is literal)."""
    j = i + 1
    if j < len(seg) and seg[j] in "!^":
        j += 1
    if j < len(seg) and seg[j] == "]":  # a leading `]` is a member
        j += 1
    return seg.find("]", j)


class _Walker:
    """Lists files under root; each directory is read once, however many patterns need it."""

    def __init__(self, root: str, boundary: str):
        self.root = root
        self.boundary = boundary
        self.checked: set[str] = set()
        self.files: set[str] = set()
        self.linked_files: set[str] = set()  # files that are symlinks themselves
        self.special: dict[str, str] = {}  # names that are neither files nor directories -> what they are
        self.listed: dict[str, tuple[list[str], list[tuple[str, bool]]]] = {}
        self.depth: dict[str, float] = {}  # directory -> deepest walk done from it
        self.seen: dict[tuple[int, int], float] = {}  # (st_dev, st_ino) -> deepest walk done
        self.links: list[tuple[str, float]] = []  # symlinked directories, walked last

    def walk(self, base: str, depth: float | None, link: bool = False) -> None:
        """List `base` and its subdirectories down to `depth` levels (None: all). `link`: base is a
        symlinked directory; then it and everything below are skipped where already walked."""
        stack = [(base, float("inf") if depth is None else depth)]
        while stack:
            d, left = stack.pop()
            if self.depth.get(d, 0) >= left:
                continue
            try:
                st = os.stat(os.path.join(self.root, d))
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if link and self.seen.get(key, 0) >= left:
                continue
            self.seen[key] = max(self.seen.get(key, 0), left)
            self.depth[d] = left
            files, dirs = self.list(d)
            self.files.update(files)
            if left > 1:
                for sub, is_link in dirs:
                    (self.links if is_link else stack).append((sub, left - 1))

    def check(self, rel: str) -> None:
        """Refuse `rel` (relative to the root) when its symlinks lead outside the boundary."""
        if rel not in self.checked:
            self.checked.add(rel)
            path = os.path.join(self.root, rel) if rel else self.root
            check_inside(path, self.boundary, shown=f"`{rel or self.root}`")

    def list(self, d: str) -> tuple[list[str], list[tuple[str, bool]]]:
        if d not in self.listed:
            files, dirs, prefix = [], [], f"{d}/" if d else ""
            try:
                with os.scandir(os.path.join(self.root, d)) as it:
                    for e in it:
                        try:
                            if e.is_file():
                                files.append(prefix + e.name)
                                if e.is_symlink():
                                    self.linked_files.add(prefix + e.name)
                            elif e.is_dir():
                                if not e.name.startswith(".") and (d or e.name != "target"):
                                    dirs.append((prefix + e.name, e.is_symlink()))
                            else:  # a FIFO, socket or device (a stat only for these), or a broken link
                                kind = _kind(os.path.join(self.root, prefix + e.name))
                                if kind is not None and kind != "file":
                                    self.special[prefix + e.name] = kind
                        except OSError:
                            continue
            except PermissionError as e:
                raise ManifestError(f"cannot read directory `{os.path.join(self.root, d)}`: {e.strerror}; "
                                    "its files would be left out of the build") from None
            except OSError:
                pass
            self.listed[d] = (files, dirs)
        return self.listed[d]

    def finish(self) -> None:
        """Walk the symlinked directories met, in a stable order, skipping those already walked."""
        while self.links:
            self.links.sort(reverse=True)
            d, left = self.links.pop()
            self.check(d)
            self.walk(d, left, link=True)
