"""Folding: one manifest plus one build context gives the effective manifest.

Every command reads its manifests through here, so `build`, `run`, `test` and `metadata` never
interpret one differently (docs/manifest.md, "Folding"). The effective document is the source
document with
`[target.<selector>.<section>]` removed and the blocks that apply appended into their sections:

- order: unconditional entries first, then matching `cfg(...)` blocks in source order, then
  matching exact-triple blocks (a triple is the more specific statement, so it comes last and
  wins where an entry is replaced);
- arrays (`build.cxxflags`, `runtime.artifacts`, ...) append; a dependency, a payload or an env
  var named again is replaced by the later, more specific statement; a payload is one package
  whatever its address spells (`xim:glibc` and `xim:glibc@2.40`: the version is a requirement,
  not part of the name), and a target-axis
  entry replacing a host-axis one is reported;
- host axis: a platform-key object in the top-level [xlings] resolves against the host;
- `{ glob, accel }` source entries stay only when their backend is in the build's accel set.

Every folded entry remembers where it is written (`Provenance`) and, when it came from a block or
an axis, a note saying which; the typed `Manifest` is then read from the effective document by the
same `Builder` that validated the file, with positions mapped back to the source.
"""
from __future__ import annotations

import os

from . import deps, schema, xlings
from ..core.accel import parse_accel
from ..core.conventions import DEFAULT_GLOBS
from .builder import Builder
from .context import BuildContext, host_context
from .load import ManifestSource, parse_manifest
from .model import Manifest
from .reader import Provenance, Reader, header, toml_key
from .sysroot import check_sysroot


class _T:
    """A document node with the source path it was read from and an optional origin note."""

    __slots__ = ("value", "src", "note")

    def __init__(self, value, src: tuple, note: str | None = None):
        self.value = value
        self.src = src
        self.note = note


def _track(value, src: tuple, note: str | None = None) -> _T:
    if isinstance(value, dict):
        return _T({k: _track(v, src + (k,), note) for k, v in value.items()}, src, note)
    if isinstance(value, list):
        return _T([_track(v, src + (i,), note) for i, v in enumerate(value)], src, note)
    return _T(value, src, note)


def _untrack(node: _T, path: tuple, prov: dict, notes: dict, parent_note: str | None = None):
    if node.src != path:
        prov[path] = node.src
    if node.note != parent_note and node.note is not None:
        notes[path] = node.note
    if isinstance(node.value, dict):
        return {k: _untrack(v, path + (k,), prov, notes, node.note) for k, v in node.value.items()}
    if isinstance(node.value, list):
        return [_untrack(v, path + (i,), prov, notes, node.note) for i, v in enumerate(node.value)]
    return node.value


def _child(parent: _T, key: str, src: tuple, kind=dict) -> _T:
    if key not in parent.value:
        parent.value[key] = _T(kind(), src)
    return parent.value[key]


def _replace(parent: _T, key: str, node: _T) -> None:
    parent.value.pop(key, None)
    parent.value[key] = node


def _merge(parent: _T, key: str, node: _T) -> None:
    """Arrays append, tables merge key by key, anything else is replaced."""
    have = parent.value.get(key)
    if have is None:
        parent.value[key] = node
    elif isinstance(have.value, list) and isinstance(node.value, list):
        have.value.extend(node.value)
    elif isinstance(have.value, dict) and isinstance(node.value, dict):
        for k, v in node.value.items():
            _merge(have, k, v)
    else:
        _replace(parent, key, node)


class _Folder:
    def __init__(self, source: ManifestSource, ctx: BuildContext):
        self.source = source
        self.ctx = ctx
        self.r = Reader(source.path, source.text, source.smap)
        self.doc = _track({k: v for k, v in source.doc.items() if k != "target"}, ())

    def run(self) -> _T:
        self._host_axis()
        blocks = [b for b in self.source.blocks if b.selector.matches(self.ctx.target, self.ctx.accel)]
        for b in sorted(blocks, key=lambda b: b.selector.is_triple):  # stable: triples last
            for name, body in b.body.items():
                self._apply(b.key, name, body)
        self._narrow_sources()
        return self.doc

    # -- the host axis ------------------------------------------------------------------------
    def _host_axis(self) -> None:
        """Top-level payload tables: note the axis, resolve platform-key objects for this host."""
        host_key = schema.PLATFORM_KEY_OF_OS.get(self.ctx.host.os)
        tables = []
        x = self.doc.value.get("xlings")
        if x is not None:
            x.note = "host axis"
            if isinstance(x.value, dict) and "workspace" in x.value:
                tables.append(x.value["workspace"])
        fx = self.doc.value.get("feature-xlings")
        if fx is not None:
            fx.note = "host axis"
            tables += list(fx.value.values())
        for table in tables:
            for address, node in list(table.value.items()):
                if isinstance(node.value, dict):
                    chosen = host_key if host_key in node.value else "default" if "default" in node.value else None
                    if chosen is None:
                        del table.value[address]
                        continue
                    picked = node.value[chosen]
                    picked.note = f"host axis: {chosen}"
                    table.value[address] = picked

    # -- one block's section ------------------------------------------------------------------
    def _apply(self, key: str, name: str, body) -> None:
        src = ("target", key, name)
        note = f"[target.{toml_key(key)}]"
        if name in ("xlings", "feature-xlings"):
            note = f"target axis: {note}"
        node = _track(body, src, note)
        if name in schema.TRIPLE_KEYS:
            _replace(_child(self.doc, "target", ("target", key)), name, node)
        elif name in ("build", "runtime"):
            _merge(self.doc, name, node)
        elif name in deps.DEP_SECTIONS:
            self._deps(_child(self.doc, name, src), node, body)
        elif name == "feature-deps":
            gates = _child(self.doc, name, src)
            for f, sub in body.items():
                self._deps(_child(gates, f, src + (f,)), node.value[f], sub)
        elif name == "xlings":
            x = _child(self.doc, "xlings", src)
            for k, v in node.value.items():
                if k == "workspace":
                    self._payloads(_child(x, "workspace", v.src), v)
                elif k == "deps":
                    self._payload_list(_child(x, "deps", v.src, list), v)
                else:
                    _merge(x, k, v)
        elif name == "feature-xlings":
            gates = _child(self.doc, name, src)
            for f, v in node.value.items():
                self._payloads(_child(gates, f, v.src), v)

    def _deps(self, into: _T, node: _T, plain: dict) -> None:
        """Entries keyed by name or namespace.name; a later statement of one replaces it."""
        for rel, _ in deps.entries(plain):
            entry = node.value[rel[0]] if len(rel) == 1 else node.value[rel[0]].value[rel[1]]
            parent = into if len(rel) == 1 else _child(into, rel[0], node.value[rel[0]].src)
            _replace(parent, rel[-1], entry)

    def _payloads(self, into: _T, node: _T) -> None:
        for address, entry in node.value.items():
            ident = xlings.identity(address)
            for old in [a for a in into.value if xlings.identity(a) == ident]:
                self._report_override(old, into.value.pop(old), entry)
            into.value[address] = entry

    def _payload_list(self, into: _T, node: _T) -> None:
        for entry in node.value:
            ident = xlings.identity(entry.value)
            for old in [n for n in into.value if xlings.identity(n.value) == ident]:
                into.value.remove(old)
                self._report_override(old.value, old, entry)
            into.value.append(entry)

    def _report_override(self, old_address: str, old: _T, new: _T) -> None:
        """Both axes name one payload: the target side is the more specific statement; say that it
        was used, so a top-level entry that silently stopped applying is not a surprise."""
        if old.src[:1] == ("target",):
            return  # two blocks of the target axis: the later, more specific one wins silently
        where = header(new.src[:-1] if isinstance(new.src[-1], str) else new.src[:-2])
        self.r.warn(new.src, f"`{old_address}` is declared on both axes; the target-axis entry in {where} is the "
                             f"more specific statement and replaces the top-level one", prefer="key")

    # -- accel-narrowed sources ----------------------------------------------------------------
    def _narrow_sources(self) -> None:
        build = self.doc.value.get("build")
        sources = build.value.get("sources") if build is not None and isinstance(build.value, dict) else None
        if sources is None or not isinstance(sources.value, list):
            return
        if "sources" not in self.source.doc.get("build", {}):
            # Conditional globs append to the unconditional ones, which here are the convention's.
            sources.value[:0] = [_T(g, ("build", "sources"), "convention: no [build] sources") for g in DEFAULT_GLOBS]
        names = self.ctx.accel.names
        sources.value = [n for n in sources.value
                         if not (isinstance(n.value, dict) and "accel" in n.value)
                         or parse_accel(n.value["accel"].value).names & names]


def fold(source: ManifestSource, ctx: BuildContext) -> Manifest:
    """The manifest `source` as this build context sees it."""
    folder = _Folder(source, ctx)
    tracked = folder.run()
    prov: dict = {}
    notes: dict = {}
    doc = _untrack(tracked, (), prov, notes)
    warnings = list(source.warnings)
    r = Reader(source.path, source.text, source.smap, strict=source.strict, provenance=Provenance(prov),
               warnings=warnings)
    m = Builder(r, doc, host_os=ctx.host.os, check_paths=True).build()
    for w in folder.r.warnings:
        if w not in warnings:
            warnings.append(w)
    target = doc.get("target", {})
    if "runner" in target:
        m.runner = _runner(source.root, target["runner"])
    if "sysroot" in target:
        m.sysroot = check_sysroot(source.root, target["sysroot"], ctx.target, r.pos(("target", "sysroot")))
    for key in ("cxx", "cc"):
        if key in target:
            setattr(m, f"cross_{key}", _runner(source.root, [target[key]])[0])
    m.warnings = warnings
    m.document, m.notes, m.context = doc, notes, ctx
    return m


def _runner(root: str, argv: list[str]) -> tuple[str, ...]:
    """A runner program written as a path resolves against the manifest's directory; a bare name
    is looked up on PATH when it runs."""
    first = argv[0]
    if os.sep in first and not os.path.isabs(first):
        first = os.path.normpath(os.path.join(root, first))
    return (first, *argv[1:])


def read_manifest(path: str, context: BuildContext | None = None, strict: bool = False) -> Manifest:
    """The manifest at `path` folded for `context` (default: the host, with the manifest's own
    [build] accel)."""
    source = parse_manifest(path, strict)
    return fold(source, context or host_context(source.base.build.accel))


__all__ = ["fold", "read_manifest"]
