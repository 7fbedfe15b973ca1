"""`mcpp.provide`, `mcpp.dep_info` and `mcpp.probe`: what crosses package boundaries, and what a
program may learn by running a tool (docs/rules.md, "Providers" and "Probes"; probe.py).

A package's program states fields with `provide(**fields)`; a dependent's program reads them with
`dep_info(name)` as a struct. The fields travel as JSON inside the dependent's `ProgramContext`,
so a change in what a dependency provides changes the dependent's context fingerprint and its
program runs again (engine/program/context.py). Only plain data may be provided (strings,
numbers, booleans, None, lists and dicts of them): it is cached as JSON and must mean the same
thing when read back.
"""
from __future__ import annotations

import json

from .api_errors import ProgramApiError
from .api_types import WRAPPERS as TYPED_WRAPPERS
from .probe import run_probe


# Starlark wrappers for functions whose result is a struct: a Python callable can only hand
# Starlark plain values, so the prelude (evaluate.py) turns the dict into a struct.
WRAPPERS = {**TYPED_WRAPPERS,
            "probe": "lambda argv, inputs = [], tools = [], reads = []: struct(**_mcpp_probe(argv, inputs, tools, reads))"}


class ProvidersApi:
    """Mixed into `McppApi`; uses its `ctx`, `result` and `reads`."""

    def provide(self, **fields) -> None:
        for name, value in fields.items():
            if name in self.result.provided:
                raise ProgramApiError(f"provide(): field `{name}` is provided twice by package `{self.ctx.package}`")
            _check_plain(f"provide(): field `{name}`", value)
            self.result.provided[name] = json.loads(json.dumps(value))

    def dep_info(self, name) -> dict:
        if not isinstance(name, str):
            raise ProgramApiError(f"dep_info(): `name` must be a string, got {type(name).__name__}")
        infos = json.loads(self.ctx.dep_infos or "{}")
        if name not in infos:
            have = ", ".join(sorted(infos)) or "none"
            raise ProgramApiError(f"dep_info(`{name}`): `{name}` is not a dependency of package "
                                  f"`{self.ctx.package}` (its dependencies: {have})")
        return infos[name]

    def probe(self, argv, inputs=(), tools=(), reads=()) -> dict:
        return run_probe(self, argv, inputs, tools, reads)

    def _probe(self, argv, inputs, tools, reads, rule_root: str | None) -> dict:
        """`probe` called from a file of the rule package at `rule_root`: its files may be inputs."""
        return run_probe(self, argv, inputs, tools, reads, rule_root)


def _check_plain(what: str, value) -> None:
    if value is None or isinstance(value, (str, bool, int, float)):
        return
    if isinstance(value, (list, tuple)):
        for v in value:
            _check_plain(what, v)
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ProgramApiError(f"{what}: dict keys must be strings, got {type(k).__name__}")
            _check_plain(what, v)
        return
    raise ProgramApiError(f"{what}: a provided value is plain data (string, number, bool, None, list, dict, "
                          f"struct), got {type(value).__name__}")


def dep_infos(pkg) -> str:
    """What each direct dependency of `pkg` provided, as the JSON its context carries. Programs run
    dependencies first (driver.py), so each dependency's result is already known; a dependency
    without a program provides nothing (an empty struct). A dependency forwards what its own
    dependencies provided by putting it in its fields."""
    infos = {}
    for dep in list(pkg.deps) + list(pkg.dev_deps):
        infos[dep.name] = dep.program.provided if dep.program is not None else {}
    return json.dumps(infos, sort_keys=True)
