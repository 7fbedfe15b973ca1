"""Adding and removing one dependency entry in `mcpp.toml`, keeping everything else as written.

The manifest is edited with tomlkit, which keeps comments, blank lines, key order and the
spelling of every value it is not asked to change; the result is parsed again before it is
written, and written in one rename, so a manifest is never left half-edited.

An entry is keyed as the manifest spells dependencies (engine/manifest/deps.py): `name` for a
package of the default namespace `mcpplibs`, `namespace.name` (a dotted key) for another; an
entry already written as `mcpplibs.name` or under a `[dependencies.<ns>]` table is found too.
Adding an entry that is there updates it, as `cargo add` does: its requirement (or path) is
replaced, features requested now are added to those it has, and `default-features` follows the
flag; the rest of it stays.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from typing import Any

import tomlkit
from tomlkit.container import Container
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import InlineTable, Table

from mcpp.cas.atomic import PUBLIC, write_atomic

from ..core.errors import McppError
from ..manifest import toml_text
from ..manifest.deps import DEP_SECTIONS

DEFAULT_NAMESPACE = "mcpplibs"
_DEP_KEYS = {"path", "version", "features", "default-features", "default_features", "tools", "host-module",
             "host_module", "reexport"}


@dataclass(frozen=True)
class Wanted:
    """What `mcpp add` writes for one dependency."""
    namespace: str
    name: str
    version: str | None = None  # the requirement written (`1.2.0` means ^1.2.0)
    path: str | None = None  # a path dependency's directory, as written
    features: tuple[str, ...] = ()
    no_default_features: bool = False

    @property
    def display(self) -> str:
        return self.name if self.namespace == DEFAULT_NAMESPACE else f"{self.namespace}.{self.name}"


def _parse(text: str, shown: str):
    try:
        return tomlkit.parse(text)
    except TOMLKitError as e:
        raise McppError(f"{shown}: not valid TOML ({e}); fix it before editing it with mcpp") from None


def _is_namespace(spec) -> bool:
    return isinstance(spec, dict) and bool(spec) and not (set(spec) & _DEP_KEYS)


def _find(table: Any, namespace: str, name: str) -> tuple[Any, str] | None:
    """(the table holding the entry, its key there) for `namespace.name` in a dependency table."""
    if namespace == DEFAULT_NAMESPACE and name in table and not _is_namespace(table[name]):
        return table, name
    nested = table.get(namespace)
    if _is_namespace(nested) and name in nested:
        return nested, name
    return None


def _section(dev: bool) -> str:
    return DEP_SECTIONS[1] if dev else DEP_SECTIONS[0]


def _inline(text: str):
    """A TOML value item from its text, spaced as Cargo writes it (`{ version = "1" }`)."""
    return tomlkit.parse(f"v = {text}\n")["v"]  # the newline: the entry ends its line


def _value_text(w: Wanted, keep: dict | None = None) -> str:
    """The entry's value: a bare requirement string when that is all it says, else a table."""
    fields: list[tuple[str, object]] = []
    if w.path is not None:
        fields.append(("path", w.path))
    if w.version is not None:
        fields.append(("version", w.version))
    features = list((keep or {}).get("features", []))
    features += [f for f in w.features if f not in features]
    if features:
        fields.append(("features", features))
    default = (keep or {}).get("default-features", True)
    if w.no_default_features or default is False:
        fields.append(("default-features", False))
    for k, v in (keep or {}).items():
        if k not in ("path", "version", "features", "default-features", "default_features"):
            fields.append((k, v))
    if [k for k, _ in fields] == ["version"]:
        return toml_text.value(w.version)
    return toml_text.inline_table(fields)


def add_entry(text: str, shown: str, w: Wanted, dev: bool) -> tuple[str, bool]:
    """The manifest `text` with `w` added to (or updated in) `[dependencies]` or
    `[dev-dependencies]`; and whether an entry was there already."""
    doc = _parse(text, shown)
    section = _section(dev)
    table = doc.get(section)
    if table is None:
        table = tomlkit.table()
        doc.add(section, table)
    elif not isinstance(table, dict):
        raise McppError(f"{shown}: `{section}` is not a table")
    found = _find(table, w.namespace, w.name)
    if found is not None:
        holder, key = found
        old: Any = holder[key]
        keep = dict(old.unwrap()) if isinstance(old, Container | InlineTable | Table) else None
        holder[key] = _inline(_value_text(w, keep))
    elif w.namespace == DEFAULT_NAMESPACE:
        table.add(w.name, _inline(_value_text(w)))
    else:
        table.add(tomlkit.key([w.namespace, w.name]), _inline(_value_text(w)))
    return _checked(tomlkit.dumps(doc), shown), found is not None


def remove_entry(text: str, shown: str, namespace: str, name: str, dev: bool) -> str:
    doc = _parse(text, shown)
    section = _section(dev)
    table = doc.get(section)
    found = _find(table, namespace, name) if isinstance(table, dict) else None
    shown_name = name if namespace == DEFAULT_NAMESPACE else f"{namespace}.{name}"
    if found is None:
        other = doc.get(_section(not dev))
        hint = []
        if isinstance(other, dict) and _find(other, namespace, name) is not None:
            hint = [f"help: `{shown_name}` is in [{_section(not dev)}]; "
                    f"{'drop' if dev else 'pass'} `--dev`"]
        raise McppError(f"dependency `{shown_name}` is not in [{section}] of {shown}", notes=hint)
    holder, key = found
    del holder[key]
    if holder is not table and not holder:  # an emptied `[dependencies.<ns>]` / dotted namespace
        del table[namespace]
    return _checked(tomlkit.dumps(doc), shown)


def _checked(text: str, shown: str) -> str:
    """`text` (ending its last line), once a plain TOML parser reads it (what the engine will read)."""
    if text and not text.endswith("\n"):
        text += "\n"
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:  # pragma: no cover - tomlkit writes valid TOML
        raise McppError(f"{shown}: the edit would leave invalid TOML ({e}); nothing was written") from None
    return text


def write_manifest(path: str, text: str) -> None:
    write_atomic(path, text, mode=PUBLIC)
