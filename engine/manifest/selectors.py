"""Selectors of `[target.<selector>.<section>]`: an exact triple, or `cfg(<predicate>)`.

Grammar (docs/manifest.md, "Selectors"):

    selector  := triple | "cfg(" predicate ")"
    predicate := name "=" "\"value\""          os, arch, env, family, accelerator
               | alias                          linux, macos, windows, unix
               | ("all" | "any" | "not") "(" [predicate ("," predicate)* [","]] ")"

Combinators nest at most `MAX_DEPTH` levels (`all(any(not(...)))` is three): a selector is written
by hand and needs a handful; the bound keeps the parser's and the evaluator's recursion far from
Python's limit, and a deeper one is an error at the combinator past it.

Every accepted word comes from a registry below (`PREDICATES`, `ALIASES`, `COMBINATORS`, and the
value tables of `triples`), and every error message lists them from the same registries. Errors
carry the offset in the selector text where parsing stopped, so the manifest loader can point at
the very character inside `[target.'cfg(os = linux)'.build]`.

`accelerator` is membership in the build's accelerator set (an open vocabulary: any backend
name), and `accelerator = "none"` holds exactly when the set is empty. The five layers that only
dependency resolution answers (`RESOLVED_LAYERS`) parse, so that a message can name them, but are
not evaluated by this engine (under `xlings` they are refused outright: which tools a build
provisions is decided before dependency resolution runs, so it cannot depend on its answers).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import triples
from ..core.accel import BACKEND_NAME, NONE, AccelSet
from ..core.lazy_re import lazy_compile

PREDICATES: dict[str, tuple[str, ...] | None] = {  # name -> accepted values (None: open)
    "os": triples.OSES,
    "arch": triples.ARCHES,
    "env": triples.ENVS,
    "family": triples.FAMILIES,
    "accelerator": None,
}
ALIASES = {"linux": ("os", "linux"), "macos": ("os", "macos"), "windows": ("os", "windows"),
           "unix": ("family", "unix")}
COMBINATORS = ("all", "any", "not")
RESOLVED_LAYERS = ("c-abi", "c++-abi", "compiler", "compiler-runtime", "kernel-abi")

MAX_DEPTH = 64
_IDENT = lazy_compile(r"[A-Za-z_][A-Za-z0-9_+-]*")


def expected_predicate() -> str:
    valued = ", ".join(p + ' = "..."' for p in PREDICATES)
    combined = ", ".join(c + "(...)" for c in COMBINATORS)
    return f"{valued}, the aliases {', '.join(ALIASES)}, or {combined}"


def expected_selector() -> str:
    return f"{triples.expected_triple()} or cfg(<predicate>)"


@dataclass(frozen=True)
class Pred:
    """One predicate of a target selector (`cfg(name = value)`)."""
    name: str  # a PREDICATES key, an alias, or a resolved layer
    value: str | None  # None for an alias
    offset: int  # where the predicate's name starts in the selector text

    @property
    def is_layer(self) -> bool:
        return self.name in RESOLVED_LAYERS


@dataclass(frozen=True)
class Combine:
    """`all(...)`, `any(...)` or `not(...)` of a target selector."""
    op: str  # one of COMBINATORS
    args: tuple
    offset: int


@dataclass(frozen=True)
class Selector:
    """A parsed `[target.<selector>]` key."""
    text: str
    triple: triples.Triple | None = None  # set for an exact-triple selector
    expr: Pred | Combine | None = None  # set for cfg(...)

    @property
    def is_triple(self) -> bool:
        return self.triple is not None

    def leaves(self) -> list[Pred]:
        out: list[Pred] = []

        def walk(node) -> None:
            if isinstance(node, Pred):
                out.append(node)
            elif isinstance(node, Combine):
                for a in node.args:
                    walk(a)

        walk(self.expr)
        return out

    def matches(self, target: triples.Triple, accel: AccelSet) -> bool:
        if self.triple is not None:
            return self.triple.same_target(target)
        return _eval(self.expr, target.facts(), accel)


def _eval(node, facts: dict[str, str], accel: AccelSet) -> bool:
    if isinstance(node, Combine):
        results = [_eval(a, facts, accel) for a in node.args]
        return all(results) if node.op == "all" else any(results) if node.op == "any" else not results[0]
    name, value = (ALIASES[node.name] if node.value is None else (node.name, node.value))
    if name == "accelerator":
        return accel.has(value)
    if node.is_layer:  # refused before evaluation (conditions.py); never true here
        return False
    return facts[name] == value


class SelectorError(ValueError):
    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset


def parse_selector(text: str) -> Selector:
    if text.startswith("cfg(") or text == "cfg" or text.startswith("cfg "):
        return Selector(text, expr=_CfgParser(text).parse())
    if text in ALIASES:
        raise SelectorError(f"`{text}` is an alias, not a selector: write it inside cfg, 'cfg({text})' "
                            f"(a selector is a target triple or cfg(<predicate>))", 0)
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", text):
        raise SelectorError(f"malformed selector `{text}`: expected {expected_selector()}", 0)
    try:
        return Selector(text, triple=triples.parse_triple(text))
    except triples.TripleError as e:
        raise SelectorError(f"{e} (a selector is a target triple or cfg(<predicate>))", e.offset) from None


class _CfgParser:
    def __init__(self, text: str):
        self.text = text
        self.i = 0
        self.depth = 0  # combinators open around the current predicate

    # -- tokens ------------------------------------------------------------------------------
    def ws(self) -> None:
        while self.i < len(self.text) and self.text[self.i] in " \t":
            self.i += 1

    def found(self) -> str:
        self.ws()
        if self.i >= len(self.text):
            return "end of selector"
        m = _IDENT.match(self.text, self.i)
        return f"`{m.group() if m else self.text[self.i]}`"

    def fail(self, expected: str) -> SelectorError:
        return SelectorError(f"malformed selector: expected {expected}, found {self.found()}", self.i)

    def eat(self, c: str) -> bool:
        self.ws()
        if self.text.startswith(c, self.i):
            self.i += len(c)
            return True
        return False

    def need(self, c: str, expected: str | None = None) -> None:
        if not self.eat(c):
            raise self.fail(expected or f"`{c}`")

    # -- grammar -----------------------------------------------------------------------------
    def parse(self) -> Pred | Combine:
        self.i = 3
        self.need("(", "`(` after `cfg`")
        node = self.predicate()
        self.need(")", "`)` closing cfg(")
        self.ws()
        if self.i < len(self.text):
            raise SelectorError(f"malformed selector: unexpected {self.found()} after the closing `)` of cfg(...)",
                                self.i)
        return node

    def predicate(self) -> Pred | Combine:
        self.ws()
        at = self.i
        m = _IDENT.match(self.text, self.i)
        if not m:
            raise self.fail(f"a predicate ({expected_predicate()})")
        name = m.group()
        self.i = m.end()
        if name in COMBINATORS:
            return self.combine(name, at)
        if name in ALIASES:
            self.ws()
            if self.text.startswith("=", self.i):
                raise SelectorError(f"malformed selector: `{name}` is an alias and takes no value; "
                                    f"write `{name}` or `{ALIASES[name][0]} = \"{ALIASES[name][1]}\"`", self.i)
            return Pred(name, None, at)
        if name not in PREDICATES and name not in RESOLVED_LAYERS:
            raise SelectorError(f"unknown predicate `{name}`; expected {expected_predicate()}", at)
        self.need("=", f"`=` after `{name}`")
        self.ws()
        value_at = self.i
        value = self.string(name)
        accepted = PREDICATES.get(name)
        if accepted is not None and value not in accepted:
            raise SelectorError(f"unknown {name} `{value}`; accepted values: {', '.join(accepted)}", value_at)
        if name == "accelerator" and value != NONE and not BACKEND_NAME.match(value):
            raise SelectorError(f"`accelerator` compares backend names (such as `cuda`) or `{NONE}`, found "
                                f"`{value}`; a version or architecture belongs in [build] accel", value_at)
        return Pred(name, value, at)

    def string(self, name: str) -> str:
        if not self.text.startswith('"', self.i):
            raise self.fail(f"a quoted string after `{name} =`")
        end = self.text.find('"', self.i + 1)
        if end < 0:
            raise SelectorError("malformed selector: unterminated string", self.i)
        value = self.text[self.i + 1:end]
        self.i = end + 1
        return value

    def combine(self, op: str, at: int) -> Combine:
        if self.depth == MAX_DEPTH:
            raise SelectorError(f"malformed selector: combinators (all, any, not) nest deeper than {MAX_DEPTH} "
                                f"levels", at)
        self.depth += 1
        self.need("(", f"`(` after `{op}`")
        args = []
        while True:
            self.ws()
            if self.eat(")"):
                break
            args.append(self.predicate())
            if self.eat(","):
                continue
            self.need(")", f"`,` or `)` in {op}(...)")
            break
        self.depth -= 1
        if op == "not" and len(args) != 1:
            raise SelectorError(f"malformed selector: `not` takes exactly one predicate, found {len(args)}", at)
        return Combine(op, tuple(args), at)
