"""Helpers for planning a small graph of real packages on disk without a compiler: the graph is
loaded by the engine's own loader (`load_graph`), the module scans and include scans are the
engine's, only the toolchain is a fake value whose binaries are never run."""
from __future__ import annotations

from pathlib import Path

from mcpp.engine.package.layout import Layout
from mcpp.engine.package.graph import load_graph
from mcpp.engine.package.model import PackageGraph, Selection
from mcpp.engine.modules.scanner import scan_source
from mcpp.engine.plan.include_scan import parse_includes
from mcpp.engine.plan.planner import Plan, Planner
from mcpp.engine.package.profiles import resolve_profile
from mcpp.engine.toolchain.compilers import Compiler, Toolchain

TRIPLE = "x86_64-linux-gnu"


def fake_toolchain(family: str) -> Toolchain:
    """A gcc-like or clang-like toolchain whose paths exist nowhere: planning never runs them."""
    cc, cxx = ("gcc", "g++") if family == "gcc" else ("clang-19", "clang++-19")
    return Toolchain(name=family, family=family,
                     cc=Compiler(f"/fake/bin/{cc}", "12.2.0", TRIPLE, "c" * 64),
                     cxx=Compiler(f"/fake/bin/{cxx}", "12.2.0", TRIPLE, "d" * 64), ar="/fake/bin/ar")


def scan(path: str):
    with open(path, encoding="utf-8") as f:
        return scan_source(f.read(), path)


def includes(path: str):
    with open(path, "rb") as f:
        return parse_includes(f.read())


def load(root: Path, *, with_tests: bool = False) -> PackageGraph:
    return load_graph(str(root), None, Selection(with_dev_deps=with_tests))


def plan_of(root: Path, family: str = "gcc", *, execroot: Path, with_tests: bool = False,
            graph: PackageGraph | None = None) -> Plan:
    graph = graph or load(root, with_tests=with_tests)
    profile = resolve_profile(graph.root_manifest, "dev")
    layout = Layout(graph.workspace_root, graph.target_dir, str(execroot), profile.name)
    return Planner(graph, fake_toolchain(family), profile, layout=layout, scan=scan,
                   with_tests=with_tests, includes=includes).build()


def action(plan: Plan, action_id: str):
    found = [a for a in plan.actions if a.id == action_id]
    assert found, f"no action `{action_id}`; actions: {[a.id for a in plan.actions]}"
    return found[0]
