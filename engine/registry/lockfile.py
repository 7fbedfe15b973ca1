"""`mcpp.lock`: the versions and archive digests a workspace's index dependencies resolved to.

It lies beside the root manifest (the workspace root's, in a workspace). TOML, written by mcpp
only, packages sorted by namespace and name, so the same resolution always writes the same bytes
and a change in review is a change in what is built:

```toml
# This file is written by mcpp (docs/dependencies.md); do not edit it.
version = 1

[[package]]
name = "greet"
namespace = "mcpplibs"
version = "1.2.0"
source = "index+https://example.org/index"
blake3 = "<the archive's blake3>"
dependencies = ["mcpplibs.shout 1.0.0"]
```

A lockfile is input that the user may have edited or merged badly: anything not of this shape
is an error at its `file:line:col` (exit 2), never a silently discarded pin.
"""
from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field

from ..core.errors import Position
from ..manifest.reader import display_path
from ..manifest.toml_positions import SourceMap
from .errors import RegistryError

LOCK_NAME = "mcpp.lock"
FORMAT = 1
HEADER = "# This file is written by mcpp (docs/dependencies.md); do not edit it.\n"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")


@dataclass(frozen=True)
class Locked:
    namespace: str
    name: str
    version: str
    source: str  # `index+<url>`
    blake3: str  # the archive's digest
    dependencies: tuple[str, ...] = ()  # `<namespace>.<name> <version>`, sorted

    @property
    def package(self) -> tuple[str, str]:
        return self.namespace, self.name

    @property
    def display(self) -> str:
        return f"{self.namespace}.{self.name} {self.version}"


@dataclass
class Lock:
    packages: dict[tuple[str, str], Locked] = field(default_factory=dict)

    def render(self) -> str:
        out = [HEADER, f"version = {FORMAT}\n"]
        for key in sorted(self.packages):
            p = self.packages[key]
            deps = ", ".join(_quote(d) for d in sorted(p.dependencies))
            out.append(f"\n[[package]]\nname = {_quote(p.name)}\nnamespace = {_quote(p.namespace)}\n"
                       f"version = {_quote(p.version)}\nsource = {_quote(p.source)}\nblake3 = {_quote(p.blake3)}\n"
                       f"dependencies = [{deps}]\n")
        return "".join(out)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def lock_path(workspace_root: str) -> str:
    return os.path.join(workspace_root, LOCK_NAME)


def read_lock(path: str) -> Lock | None:
    """The lockfile at `path`, or None when there is none."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise RegistryError(f"cannot read {display_path(path)}: {e.strerror}") from None
    shown = display_path(path)
    try:
        text = raw.decode("utf-8")
        doc = tomllib.loads(text)
    except UnicodeDecodeError as e:
        raise RegistryError("the lockfile is not UTF-8 text", Position(shown, 1, e.start + 1)) from None
    except tomllib.TOMLDecodeError as e:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
        pos = Position(shown, int(m.group(1)), int(m.group(2))) if m else Position(shown)
        raise RegistryError(f"the lockfile is not valid TOML ({str(e).split(' (at ')[0]})", pos,
                            notes=["help: delete it and build again to write a new one"]) from None
    smap = SourceMap(text)

    def fail(keypath: tuple, message: str) -> RegistryError:
        line, col = smap.nearest(keypath, prefer="value")
        return RegistryError(f"lockfile: {message}", Position(shown, line, col),
                             notes=["help: `mcpp update` writes it anew from the manifests and the index"])

    if doc.get("version") != FORMAT:
        raise fail(("version",), f"expected `version = {FORMAT}`")
    unknown = set(doc) - {"version", "package"}
    if unknown:
        raise fail((sorted(unknown)[0],), f"unknown key `{sorted(unknown)[0]}`")
    packages = doc.get("package", [])
    if not isinstance(packages, list):
        raise fail(("package",), "`package` must be an array of tables ([[package]])")
    lock = Lock()
    for i, entry in enumerate(packages):
        kp = ("package", i)
        if not isinstance(entry, dict):
            raise fail(kp, "each [[package]] is a table")
        values = {}
        for key in ("name", "namespace", "version", "source", "blake3"):
            v = entry.get(key)
            if not isinstance(v, str):
                raise fail(kp + ((key,) if key in entry else ()), f"[[package]] #{i + 1} needs `{key}`, a string")
            values[key] = v
        for key in ("name", "namespace", "version"):
            if not _WORD.match(values[key]):
                raise fail(kp + (key,), f"`{values[key]}` is not a package {key} (letters, digits, `.`, `+`, `-`, "
                                        f"`_`): it names a directory of the source cache")
        if not _HEX64.match(values["blake3"]):
            raise fail(kp + ("blake3",), "`blake3` must be 64 lowercase hex digits")
        if not values["source"].startswith("index+"):
            raise fail(kp + ("source",), "`source` must be `index+<url>`")
        deps = entry.get("dependencies", [])
        if not (isinstance(deps, list) and all(isinstance(d, str) for d in deps)):
            raise fail(kp + ("dependencies",), "`dependencies` must be a list of strings")
        extra = set(entry) - {"name", "namespace", "version", "source", "blake3", "dependencies"}
        if extra:
            raise fail(kp + (sorted(extra)[0],), f"unknown key `{sorted(extra)[0]}` in [[package]]")
        locked = Locked(values["namespace"], values["name"], values["version"], values["source"], values["blake3"],
                        tuple(sorted(deps)))
        if locked.package in lock.packages:
            raise fail(kp + ("name",), f"`{locked.namespace}.{locked.name}` is locked twice")
        lock.packages[locked.package] = locked
    return lock


def changes(old: Lock | None, new: Lock) -> list[str]:
    """What differs between two locks, one line per package: `greet 1.2.0 -> 1.3.0`, `+ ...`, `- ...`."""
    before = old.packages if old is not None else {}
    out = []
    for key in sorted(set(before) | set(new.packages)):
        a, b = before.get(key), new.packages.get(key)
        if a is None and b is not None:
            out.append(f"+ {b.display}")
        elif b is None and a is not None:
            out.append(f"- {a.display}")
        elif a is not None and b is not None and a != b:
            what = f"{a.version} -> {b.version}" if a.version != b.version else "digest or dependencies changed"
            out.append(f"{b.namespace}.{b.name} {what}")
    return out
