"""`mcpp metadata`: the folded manifests and the package graph of one build, as the engine sees them.

It loads the graph through the same funnel as `build`, `run` and `test` (`package.graph.load_graph`:
target, accelerator set and features applied, `[target.<selector>]` folded), so what it prints is
what a build with the same flags would read, never a second interpretation. `--target` may name
any known triple here: nothing is compiled, so a cross target can be inspected before the engine
can build for it.

Text: one block per package (dependencies first), a `#` header line, then the flat, source-ordered
table of `manifest/flat.py`. JSON (`--format json`): the context, every package with its folded
document, active features, sources, payloads, the dependency edges, and the toolchain that
compiles for the target (drivers, cross flags, sysroot, runner).
"""
from __future__ import annotations

import json
import os


from ..core.conventions import Role
from ..core.errors import McppError
from ..core.settings import Settings
from ..manifest.flat import flat_lines, jsonable
from ..manifest.load import display_path
from ..manifest.model import PayloadSpec
from ..package.graph import load_graph
from ..package.layout import Layout
from ..package.model import Package, PackageGraph, Selection
from ..package.sources import package_sources
from ..package.targets import owned_by_targets, shared_names, targets_of
from ..package.testsuite import package_tests, test_dirs, test_name
from ..payloads import PayloadError, resolve_environment
from ..program.cache import last_result
from ..program.paths import PROGRAM_NAME
from ..toolchain.cross import resolve_target_toolchain

FORMAT_VERSION = 1


def collect(cwd: str, manifest_path: str | None, selection: Selection) -> PackageGraph:
    return load_graph(cwd, manifest_path, selection)


def warnings(graph: PackageGraph) -> list[str]:
    out: list[str] = []
    for pkg in graph.order:
        out += [w for w in pkg.manifest.warnings if w not in out]
    return out


def _context_line(graph: PackageGraph) -> str:
    ctx = graph.context
    cross = "" if not ctx.cross else " (cross)"
    return f"# target {ctx.target.text}{cross}, host {ctx.host.text}, accel {ctx.accel} ({ctx.accel_from})"


def toolchain(graph: PackageGraph, settings: Settings) -> dict:
    """The toolchain a build with the same flags compiles the target with (engine/toolchain/cross.py),
    its sysroot and the runner its binaries run through; an error (a missing cross compiler) is
    shown, not raised."""
    m = graph.root_manifest
    # as `mcpp run` picks it: the root's, else that of the member the command builds
    found = next((p.manifest.runner for p in [*graph.members] if p.manifest.runner is not None), m.runner) \
        if m.runner is None else m.runner
    runner = list(found) if found is not None else None
    try:
        dirs = tuple(p["directory"] for p in environment(graph, settings)["payloads"]
                     if p["axis"] == "host" and p["directory"])
        tc = resolve_target_toolchain(m.toolchain, settings.home, graph.context, m, dirs)
    except McppError as e:
        return {"error": e.message, "runner": runner}
    return {"name": tc.name, "family": tc.family, "cxx": tc.cxx.path, "cc": tc.cc.path, "ar": tc.ar,
            "version": tc.cxx.version, "target": tc.triple or tc.cxx.target, "flags": list(tc.flags),
            "link_flags": list(tc.link_flags), "sysroot": tc.sysroot, "runner": runner}


def render_text(graph: PackageGraph, settings: Settings | None = None, warn=None, profile: str = "dev") -> str:
    lines = [_context_line(graph)]
    layout = Layout.of(graph, profile)
    for pkg in graph.order:
        features = ", ".join(sorted(pkg.features)) or "none"
        lines.append(f"# package {pkg.name} {pkg.version} ({display_path(pkg.manifest.path)}), features: {features}")
        lines += flat_lines(pkg.manifest.document, pkg.manifest.notes)
        lines += [f"# builds {t['kind']} {t['name']}{' (implicit)' if t['implicit'] else ''}: "
                  f"{display_path(t['output'])}" for t in _targets(pkg, graph, layout)]
    env = environment(graph, settings, warn) if settings is not None else {"payloads": []}
    if env["payloads"]:  # a refusal shows in the JSON form and when building, not in every listing
        lines.append("# environment (payloads this build resolves; docs/payloads.md)")
        lines += [f"{p['id']} = \"{p['version']}\"  # {p['axis']} axis, {p['source']}, declared by {p['declared_by']} "
                  f"at {p['declared_at']}, {_where(p)}" for p in env["payloads"]]
    return "\n".join(lines) + "\n"


def _where(p: dict) -> str:
    if p["directory"]:
        return p["directory"]
    return "not probed yet" if p.get("probed") is False else "not installed"


def environment(graph: PackageGraph, settings: Settings, warn=None) -> dict:
    """The resolved payload environment, without installing anything; a refusal is shown, not raised,
    so `mcpp metadata` still describes a project whose environment cannot be resolved."""
    try:
        return resolve_environment(graph, settings, install_missing=False,
                                   warn=warn).to_json()
    except PayloadError as e:
        return {"payloads": [], "error": e.message}


def _payload(p: PayloadSpec) -> dict:
    return {"address": p.address, "namespace": p.namespace, "name": p.name, "version": p.version,
            "axis": p.axis, "feature": p.feature}


def _targets(pkg: Package, graph: PackageGraph, layout: Layout) -> list[dict]:
    """What the package builds, with where each lands (Cargo's `targets`), as the link plan
    (`plan/links.py`) names them: its declared targets, the library no `[lib]` or `[targets]`
    names (`implicit`: a package without targets, or any dependency, archives its sources), and,
    for a package the command builds, each test binary `mcpp test` links from `tests/`."""
    out = []
    for t in targets_of(pkg):
        if t.kind == "shared":
            path = os.path.join(layout.out_dir, shared_names(t)[-1])
        elif t.kind == "lib":  # with `sources`, a library of its own; else the package's
            path = layout.archive(t.name if t.sources else pkg.name, pkg.root)
        elif t.kind == "test":
            path = layout.test_binary(pkg.name, t.name)
        else:
            path = os.path.join(layout.out_dir, t.name)
        out.append({"kind": t.kind, "name": t.name, "main": t.main, "output": path, "implicit": False})
    declared = targets_of(pkg)
    if not any(t.kind == "lib" for t in declared) and _archives(pkg, graph, declared):
        out.append({"kind": "lib", "name": pkg.name, "main": None, "output": layout.archive(pkg.name, pkg.root),
                    "implicit": True})
    out += _rule_targets(pkg, layout)
    if any(pkg is m for m in graph.members):
        dirs = test_dirs(pkg)
        out += [{"kind": "test", "name": test_name(s.path, dirs), "main": s.path,
                 "output": layout.test_binary(pkg.name, test_name(s.path, dirs)), "implicit": True}
                for s in package_tests(pkg)]
    return out


def _rule_targets(pkg: Package, layout: Layout) -> list[dict]:
    """The targets the package's rules declared (`mcpp.binary`, `library`, `link`, `test`) as its
    build program's last evaluation in this profile recorded them (`"rule": true`); none before
    the first build, since metadata runs no program."""
    if not os.path.isfile(os.path.join(pkg.root, PROGRAM_NAME)):
        return []
    result = last_result(layout.program_cache, pkg.name)
    out = []
    targets = result.targets if result is not None else []
    for t in targets:
        if t.kind == "test":
            runs = next((b for b in targets if b.kind == "bin" and b.name == t.binary), None)
            path = layout.test_binary(pkg.name, t.name) if runs is None else \
                layout.test_binary(pkg.name, runs.name) if runs.testonly else os.path.join(layout.out_dir, runs.name)
        elif t.testonly:
            path = layout.test_binary(pkg.name, t.name)
        else:
            path = os.path.join(layout.out_dir, {"bin": t.name, "static": f"lib{t.name}.a",
                                                 "shared": f"lib{t.name}.so"}[t.kind])
        kind = {"static": "lib"}.get(t.kind, t.kind)
        out.append({"kind": kind, "name": t.name, "main": None, "output": path, "implicit": False, "rule": True,
                    "testonly": t.testonly, "args": list(t.data)})
    return out


def _archives(pkg: Package, graph: PackageGraph, declared) -> bool:
    """Whether the build archives `pkg`'s library without a `lib` target naming it: the package
    has sources no bin, test or shared target claims, and either declares no target or is a
    dependency (the same rule as `Links.package_artifacts`)."""
    dependency = any(pkg is d for p in graph.order for d in p.deps + p.dev_deps)
    if declared and not dependency:
        return False
    claimed = owned_by_targets(pkg)
    return any(s.path not in claimed and s.role != Role.DEVICE for s in package_sources(pkg))


def _package(pkg: Package, graph: PackageGraph, layout: Layout) -> dict:
    m = pkg.manifest
    active = sorted(pkg.features)
    return {
        "id": f"{pkg.name} {pkg.version}",
        "name": pkg.name,
        "version": pkg.version,
        "namespace": m.namespace,
        "manifest_path": m.path,
        "root": m.root,
        "features": active,
        # Intent (a CI matrix hint), never a gate: the build's accelerator set is `context.accel`.
        "accelerators": list((m.document.get("package") or {}).get("accelerators") or []),
        "dependencies": [{"name": dep.name, "id": f"{dep.name} {dep.version}", "path": spec.path,
                          "kind": "feature" if spec.feature else "dev" if spec in m.dev_dependencies else "normal",
                          "feature": spec.feature} for spec, dep in pkg.edges],
        "sources": [s.path for s in package_sources(pkg)],
        "targets": _targets(pkg, graph, layout),
        "runner": list(m.runner) if m.runner is not None else None,
        "sysroot": m.sysroot,
        "xlings": {
            "deps": [_payload(p) for p in m.xlings.deps],
            "workspace": [_payload(p) for p in m.xlings.workspace],
            "features": {f: [_payload(p) for p in specs] for f, specs in m.feature_xlings.items() if f in active},
        },
        "manifest": jsonable(m.document),
    }


def render_json(graph: PackageGraph, profile: str = "dev", settings: Settings | None = None, warn=None) -> str:
    ctx = graph.context
    layout = Layout.of(graph, profile)
    data = {
        "version": FORMAT_VERSION,
        "context": {
            "target": ctx.target.text, "host": ctx.host.text, "cross": ctx.cross,
            "target_facts": ctx.target.facts(),
            "accel": [{"name": e.name, "version": e.version, "archs": list(e.archs), "floor": e.floor}
                      for e in ctx.accel.entries],
            "accel_from": ctx.accel_from,
        },
        "workspace_root": graph.workspace_root,
        "target_directory": graph.target_dir,
        "profile": profile,
        "members": [p.name for p in graph.members],
        "packages": [_package(p, graph, layout) for p in graph.order],
        "environment": environment(graph, settings, warn) if settings is not None else None,
        "toolchain": toolchain(graph, settings) if settings is not None else None,
    }
    return json.dumps(data, indent=2) + "\n"
