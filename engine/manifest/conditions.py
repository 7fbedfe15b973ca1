"""`[target.<selector>.<section>]`: reading and validating every conditional block.

Every block is validated whether or not it applies to this build: a malformed entry under
`cfg(windows)` is a mistake on Linux too, and a manifest must not be valid on one machine and
invalid on another. Only the sections of `schema.CONDITIONAL_SECTIONS` are accepted, any other is
refused by name; `[target.<selector>.build]` takes only additive keys; `runner` and `sysroot`
describe one exact target and so live under a triple only. Which blocks apply is decided later,
per build context, by `fold.py`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from . import deps, schema, selectors, shape, xlings
from .reader import Reader, header, toml_key, type_name

_SECTION_NAMES = tuple(s.split(".")[0] for s in schema.CONDITIONAL_SECTIONS)


@dataclass(frozen=True)
class Block:
    """One `[target.<selector>]` table of a manifest and its selector."""
    key: str  # the selector as written (the TOML key under [target])
    selector: selectors.Selector
    body: dict  # section name -> its table, as parsed


def accepted_sections() -> str:
    return ", ".join(schema.CONDITIONAL_SECTIONS)


def read_blocks(r: Reader, doc: dict, features: dict, read_build, read_runtime, host_os: str) -> list[Block]:
    """Validate `[target.*]`; `features` is the unconditional feature registry; `read_build` and
    `read_runtime` validate a section's body with the same code as the unconditional one."""
    table = doc.get("target")
    if table is None:
        return []
    r.expect(table, dict, ("target",))
    blocks = []
    for key, body in table.items():
        kp = ("target", key)
        selector = _selector(r, kp, key)
        if type(body) is not dict:
            raise r.fail(kp, f"[target.{toml_key(key)}] must be a table of sections "
                             f"({accepted_sections()}), found {type_name(body)}")
        for name, value in body.items():
            skp = kp + (name,)
            if name in ("xlings", "feature-xlings"):
                _no_resolved_layers(r, kp, selector, value, name)
            elif name in _SECTION_NAMES:
                _no_layers_elsewhere(r, kp, selector)
            if name in schema.TRIPLE_KEYS:
                _triple_key(r, skp, name, value, selector)
            elif name not in _SECTION_NAMES:
                _refuse_section(r, skp, name, selector)
            elif name == "build":
                _additive_only(r, skp, value)
                read_build(value, skp)
            elif name in deps.DEP_SECTIONS:
                deps.read_table(r, value, skp, check_paths=False, root=_root(r))
            elif name == "feature-deps":
                for f, sub in _gated(r, skp, value, features):
                    deps.read_table(r, sub, skp + (f,), check_paths=False, root=_root(r), feature=f)
            elif name == "runtime":
                read_runtime(value, skp)
            elif name == "xlings":
                xlings.read_xlings(r, value, skp, key, host_os)
            elif name == "feature-xlings":
                for f, sub in _gated(r, skp, value, features):
                    xlings.read_payload_table(r, sub, skp + (f,), key, host_os, feature=f)
        blocks.append(Block(key, selector, body))
    return blocks


def _root(r: Reader) -> str:
    return os.path.dirname(r.path)


def _selector(r: Reader, kp: tuple, key: str) -> selectors.Selector:
    try:
        return selectors.parse_selector(key)
    except selectors.SelectorError as e:
        raise r.fail_at(r.pos_inside(kp, e.offset, prefer="key"), str(e)) from None


def _triple_key(r: Reader, kp: tuple, name: str, value: Any, selector: selectors.Selector) -> None:
    if not selector.is_triple:
        raise r.fail(kp, f"`{name}` describes one exact target and belongs under a triple, "
                         f"[target.<triple>] {name} = ...; a cfg(...) selector may match many targets",
                     prefer="key")
    if name == "runner":
        argv = r.expect(value, list, kp)
        if not argv:
            raise r.fail(kp, "`runner` is empty; write the argv that runs the artifact, e.g. "
                             "[\"qemu-aarch64\", \"-L\", \"/usr/aarch64-linux-gnu\"] (the artifact goes where `{}` "
                             "is, else at the end)")
        for i, item in enumerate(argv):
            r.expect(item, str, kp + (i,))
    else:
        r.expect(value, str, kp)


def _refuse_section(r: Reader, kp: tuple, name: str, selector: selectors.Selector) -> None:
    known = _SECTION_NAMES + (schema.TRIPLE_KEYS if selector.is_triple else ())
    right = schema.did_you_mean(name, known)
    if right is not None:
        raise r.fail(kp, f"unknown section `{name}` under [target.{toml_key(kp[1])}]; did you mean `{right}`? "
                         f"({schema.CASE_RULE[schema.KEBAB]})", prefer="key")
    accepted = accepted_sections() + (f"; and under a triple the keys {', '.join(schema.TRIPLE_KEYS)}"
                                      if selector.is_triple else "")
    hint = schema.UNCONDITIONAL_HINTS.get(name)
    if hint is None and name in schema.BUILD.keys:
        hint = f"`{name}` is a [build] key: write it in [target.{toml_key(kp[1])}.build]"
    raise r.fail(kp, f"`{name}` cannot be conditioned under [target.{toml_key(kp[1])}]"
                     + (f": {hint}" if hint else "") + f"; accepted sections: {accepted}", prefer="key")


def _additive_only(r: Reader, kp: tuple, table: Any) -> None:
    r.expect(table, dict, kp)
    for key, value in table.items():
        if key in schema.ADDITIVE_BUILD_KEYS or shape.is_condition_key(key, value) or shape.is_platform_object(value):
            continue  # the build reader refuses a second condition with its own message
        right = schema.did_you_mean(key, schema.BUILD.keys)
        if right is not None and right in schema.ADDITIVE_BUILD_KEYS:
            continue  # the build reader names the right spelling
        raise r.fail(kp + (key,), f"`{key}` cannot be set under {header(kp)}: a conditional build section "
                                  f"takes only additive keys ({', '.join(schema.ADDITIVE_BUILD_KEYS)}), "
                                  f"which append after the unconditional [build] ones", prefer="key")


def _gated(r: Reader, kp: tuple, value: Any, features: dict) -> list[tuple[str, Any]]:
    """[target.<selector>.feature-deps.<f>]: legal only for a feature registered unconditionally."""
    r.expect(value, dict, kp)
    for f in value:
        if f not in features:
            declared = f"declared features: {', '.join(sorted(features))}" if features else "no features are declared"
            raise r.fail(kp + (f,), f"{header(kp + (f,))} gates on feature `{f}`, which [features] does not "
                                    f"declare; a feature is registered unconditionally in [features] (the "
                                    f"selector decides what it pulls in, not whether it exists); {declared}",
                         prefer="key")
    return list(value.items())


def _no_resolved_layers(r: Reader, kp: tuple, selector: selectors.Selector, table: Any, section: str) -> None:
    """A tool's selector must not name a layer that dependency resolution answers: the tools are
    chosen before resolution runs."""
    for leaf in selector.leaves():
        if leaf.is_layer:
            tool = _first_tool(table)
            raise r.fail_at(r.pos_inside(kp, leaf.offset, prefer="key"),
                            f"the selector of {header(kp + (section,))} names `{leaf.name}`, a layer answered by "
                            f"dependency resolution after tools are provisioned, so {tool} would be declared and "
                            f"never installed; condition it on the target ({', '.join(selectors.PREDICATES)}) "
                            f"or gate it with [feature-xlings.<f>]")


def _first_tool(table: Any) -> str:
    if isinstance(table, dict):
        for value in table.values():
            if isinstance(value, dict) and value:
                inner = next(iter(value))
                if isinstance(value[inner], dict) and value[inner]:
                    return f"`{next(iter(value[inner]))}`"
                return f"`{inner}`"
            if isinstance(value, list) and value:
                return f"`{value[0]}`"
    return "the tool"


def _no_layers_elsewhere(r: Reader, kp: tuple, selector: selectors.Selector) -> None:
    for leaf in selector.leaves():
        if leaf.is_layer:
            raise r.fail_at(r.pos_inside(kp, leaf.offset, prefer="key"),
                            f"predicate `{leaf.name}` names a layer answered by dependency resolution, which "
                            f"this engine does not evaluate in selectors; accepted predicates: "
                            f"{', '.join(selectors.PREDICATES)} and the aliases {', '.join(selectors.ALIASES)}")
