"""The manifest a package is published with: the package's own, with what only its checkout has
taken out, keeping the user's layout and comments (tomlkit).

- A path dependency that states a `version` becomes an index dependency on that version (the
  `path` is dropped): a workspace publishes its members, each depending on the others' releases.
- A path dependency without a `version` in `[dev-dependencies]` is dropped (the tests that use
  it are not built by a consumer); anywhere else it is refused, since no consumer has the path.
- `[workspace]` is dropped: the members it lists are not in the archive.

Applies to `[dependencies]`, `[dev-dependencies]`, `[build-dependencies]`, `[feature-deps.<f>]`
and their `[target.<selector>.*]` forms, with entries keyed by name or `namespace.name`.
"""
from __future__ import annotations

from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import InlineTable

from ..core.errors import McppError, Position
from ..manifest import toml_text
from ..manifest.deps import DEP_SECTIONS
from ..manifest.reader import header

_DEP_KEYS = {"path", "version", "features", "default-features", "default_features", "tools", "host-module",
             "host_module", "reexport"}


def published_manifest(text: str, shown: str) -> str:
    """The text of the manifest `text` (read from `shown`) as it is packaged."""
    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as e:
        raise McppError(f"{shown}: not valid TOML ({e})") from None
    doc.pop("workspace", None)
    for where, table in _dependency_tables(doc):
        _rewrite(table, where, dev=where[-1] == "dev-dependencies", shown=shown, text=text)
    return tomlkit.dumps(doc)


def _dependency_tables(doc) -> list[tuple[tuple[str, ...], Any]]:
    out: list[tuple[tuple[str, ...], Any]] = []

    def from_section(prefix: tuple[str, ...], section) -> None:
        for name in DEP_SECTIONS:
            if isinstance(section.get(name), dict):
                out.append((prefix + (name,), section[name]))
        gated = section.get("feature-deps")
        if isinstance(gated, dict):
            for feature, table in gated.items():
                if isinstance(table, dict):
                    out.append((prefix + ("feature-deps", feature), table))

    from_section((), doc)
    target = doc.get("target")
    if isinstance(target, dict):
        for selector, section in target.items():
            if isinstance(section, dict):
                from_section(("target", selector), section)
    return out


def _is_namespace(spec) -> bool:
    return isinstance(spec, dict) and bool(spec) and not (set(spec) & _DEP_KEYS)


def _rewrite(table, where: tuple[str, ...], dev: bool, shown: str, text: str) -> None:
    for key in list(table):
        spec = table[key]
        if _is_namespace(spec):
            for sub in list(spec):
                if _drop(spec, sub, f"{key}.{sub}", where, dev, shown, text):
                    del spec[sub]
            if not spec:
                del table[key]
        elif _drop(table, key, key, where, dev, shown, text):
            del table[key]


def _drop(holder, key: str, name: str, where: tuple[str, ...], dev: bool, shown: str, text: str) -> bool:
    """Rewrite the entry `holder[key]` in place; True when it is left out of the published manifest."""
    spec = holder[key]
    if not isinstance(spec, dict) or "path" not in spec:
        return False
    if "version" in spec:
        if isinstance(spec, InlineTable):  # rewritten whole, so it stays spaced as written
            kept = [(k, v) for k, v in spec.unwrap().items() if k != "path"]
            holder[key] = tomlkit.parse(f"v = {toml_text.inline_table(kept)}\n")["v"]
        else:
            del spec["path"]
        return False
    if dev:
        return True
    raise McppError(
        f"dependency `{name}` in {header(where)} is a path dependency without a `version`; a published package "
        f"cannot depend on a path its consumers do not have",
        _position(shown, text, name),
        [f"help: publish `{name}` first and add its version: `{name} = {{ path = \"...\", version = \"X.Y\" }}`"])


def _position(shown: str, text: str, name: str) -> Position:
    """Where the entry `name` is written (its first line starting with the key), for the error."""
    leaf = name.rpartition(".")[2]
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if stripped.startswith((f"{name} ", f"{name}=", f"{leaf} ", f"{leaf}=")):
            return Position(shown, number, len(line) - len(stripped) + 1)
    return Position(shown)
