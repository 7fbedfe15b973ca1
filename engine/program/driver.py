"""The build programs of one graph: check their loads, evaluate them (dependencies first, cached),
compare floors with facts, and make sure every device source is claimed by an action.

`check_loads` runs before any host tool is built, so a `load` the graph cannot satisfy (in the
program or in any rule file it reaches) stops the build with nothing in the tool store (building a tool for a program that cannot run would
leave work behind for nothing). `evaluate` runs after the tools exist, because their paths are
part of what a program sees.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from ..core.errors import ManifestError, McppError, Position
from ..core.paths import PkgPath

from ..core.conventions import Role
from ..manifest import globs
from ..manifest.load import display_path
from ..package.model import Package, PackageGraph
from ..package.sources import device_extensions, package_sources, role_of
from .modules import Loader, RuleModule, library_path, resolve, unavailable, visible_rule_modules
from .paths import PROGRAM_NAME, program_path

# The evaluator (starlark-pyo3, the `mcpp` struct, its prelude: a share of a cold start) is
# imported where a package has a build.star; a graph without one never loads it.
if TYPE_CHECKING:
    from ..package.program_result import ProgramResult
    from .cache import ProgramCache
    from .context import AccelEntry, ProgramContext
    from .probe import ProbeSettings


# A rule package's files load each other a few levels deep; the bound keeps the nested
# evaluations (each one inside the `load` of the file before it) far from any stack's end.
MAX_LOAD_DEPTH = 64


@dataclass
class Checked:
    """A package's build program, parsed, with the rule modules its loads resolved to."""
    path: str | None  # the package's build.star, None when it has none
    ast: object
    rule_modules: dict[str, RuleModule]


def check_loads(graph: PackageGraph, announce: Callable[[RuleModule], None],
                expand: globs.Expand = globs.expand) -> dict[Package, Checked]:
    """Parse each build.star and refuse a `load` no dependency provides; announce each activated
    rule module once (`Rules example.rules.toy (example:rules-toy)`). `expand` expands the features'
    source globs (manifest/globs.py)."""
    out: dict[Package, Checked] = {}
    announced: set[str] = set()
    for pkg in graph.order:
        modules = visible_rule_modules(pkg, expand)
        for name, module in modules.items():
            if name not in announced:
                announced.add(name)
                announce(module)
        path = program_path(pkg.root)
        ast = None
        if path is not None:
            from .evaluate import loads_of, parse
            ast = parse(path)
            for module_id in loads_of(ast):
                if library_path(module_id) is None and module_id not in modules:
                    raise unavailable(PROGRAM_NAME, module_id, pkg)
            _check_rule_files(path, ast, Loader(PROGRAM_NAME), modules, [], set())
        out[pkg] = Checked(path, ast, modules)
    return out


def _check_rule_files(path: str, ast, loader: Loader, modules: dict[str, RuleModule], chain: list[str],
                      seen: set[str]) -> None:
    """Follow the loads of `path` through the rule files they reach, refusing (or failing to
    parse) as the evaluation would, with the same position and `load` chain. The evaluation
    runs a loaded file inside the `load` that names it, so a chain of loads is a chain of nested
    evaluations: one deeper than MAX_LOAD_DEPTH files is refused at the `load` past the limit.
    This walk keeps a stack of its own."""
    from .evaluate import loads_of, parse
    stack = [(path, iter(loads_of(ast)), loader, chain)]
    while stack:
        path, module_ids, loader, chain = stack[-1]
        module_id = next(module_ids, None)
        if module_id is None:
            stack.pop()
            continue
        found = resolve(loader, module_id, modules)
        pos = _load_position(path, module_id)
        if isinstance(found, McppError):
            found.pos, found.notes = pos, found.notes + chain
            raise found
        sub_path, sub_loader = found
        if sub_path in seen or library_path(module_id) is not None:
            continue
        seen.add(sub_path)
        if len(stack) > MAX_LOAD_DEPTH:
            raise McppError(f"`load`s nest deeper than {MAX_LOAD_DEPTH} files (a file loading a file loading ...)",
                            pos, chain)
        notes = [f"note: loaded from {pos}", *chain]
        try:
            sub_ast = parse(sub_path)
        except McppError as e:
            e.notes += notes
            raise
        stack.append((sub_path, iter(loads_of(sub_ast)), sub_loader, notes))


def _load_position(path: str, module_id: str) -> Position:
    """Where `load("<module_id>", ...)` is written in `path` (the parser keeps no position for it)."""
    shown = display_path(path)
    pattern = re.compile(r"\bload\s*\(\s*[\"']" + re.escape(module_id) + r"[\"']")
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = pattern.search(line)
            if m:
                return Position(shown, n, m.start() + 1)
    return Position(shown)


@dataclass
class ProgramInputs:
    """What the build tells every program (the same for each package)."""

    gen_dir: Callable[[str], str]  # package name -> its out_dir(): target/<profile>/.mcpp/gen/<package>
    profile: str
    target: str
    host: str
    accel: tuple[AccelEntry, ...]
    tools_of: Callable[[Package], list]  # package -> visible HostTools
    payloads: tuple = ()  # PayloadRef of every resolved payload: one environment for every package
    extras: Callable[[Package, dict], dict] = lambda pkg, rule_modules: {}  # api_context.context_extras
    probes: ProbeSettings | None = None  # where `mcpp.probe` runs and caches (probe.py); None: no sandbox named


def evaluate(graph: PackageGraph, checked: dict[Package, Checked], inputs: ProgramInputs | None,
             cache: ProgramCache | None,
             reporter, environ: dict[str, str] | None = None,
             expand: globs.Expand = globs.expand) -> tuple[list[str], bool]:
    """Evaluate every program (or reuse its cached result) into `pkg.program`; returns the files
    the results depend on and whether any read the environment, for the no-op record."""
    environ = dict(os.environ) if environ is None else environ
    watched: list[str] = []
    reads_env = False
    for pkg in graph.order:
        c = checked[pkg]
        exts = device_extensions(pkg)
        device = _device_sources(pkg, exts, expand)
        if c.path is None:
            pkg.program = None
            _check_claims(pkg, device, exts, None)
            continue
        ctx = _context(pkg, device, c, inputs)
        fingerprint = ctx.fingerprint()
        if inputs is not None and inputs.probes is not None and inputs.probes.apart:
            # what a probe answered in a sandbox that cannot prove its reads stays with such builds
            fingerprint += "|" + inputs.probes.apart
        hit = cache.lookup(pkg.name, fingerprint, pkg.root, environ)
        reporter.event("build-program", package=pkg.name, cached=hit is not None)
        if hit is not None:
            result, files, env = hit
        else:
            from .api import McppApi
            from .cache import dependencies
            from .evaluate import Evaluation
            api = McppApi(ctx, environ, inputs.probes if inputs is not None else None)
            evaluation = Evaluation(api, c.rule_modules)
            try:
                evaluation.run(c.path, c.ast)
            finally:  # `print(...)` speaks when the program runs (not from the cache), also before an error
                for line in evaluation.prints:
                    print(line, file=reporter.err, flush=True)
            result = api.result
            cache.store(pkg.name, fingerprint, evaluation.files, api.reads, result)
            files, env = dependencies(evaluation.files, api.reads.files, api.reads.env)
        watched += files
        reads_env = reads_env or env
        for text in result.warnings:
            reporter.warning(f"{pkg.name}: {text}")
        pkg.program = result
        _check_claims(pkg, device, exts, result)
    _check_floors(graph, reporter)
    return watched, reads_env


def _context(pkg: Package, device: list[PkgPath], c: Checked, inputs: ProgramInputs) -> ProgramContext:
    from .api_providers import dep_infos
    from .context import ProgramContext, RuleModuleRef, ToolRef
    m = pkg.manifest
    payloads = inputs.payloads
    return ProgramContext(
        package=m.name, version=m.version or "", namespace=m.namespace or "", manifest_dir=pkg.root,
        out_dir=inputs.gen_dir(m.name), profile=inputs.profile, target=inputs.target,
        host=inputs.host, features=tuple(sorted(pkg.features)), accel=inputs.accel, device_sources=tuple(device),
        tools=tuple(ToolRef(t.display, t.tool, t.path) for t in inputs.tools_of(pkg)), payloads=payloads,
        rule_modules=tuple(RuleModuleRef(n, r.path) for n, r in sorted(c.rule_modules.items())),
        dep_infos=dep_infos(pkg), **inputs.extras(pkg, c.rule_modules))


def _device_sources(pkg: Package, exts: dict[str, str], expand: globs.Expand) -> list[PkgPath]:
    """The package's device sources. None where it selects its sources by the default globs
    alone (no `[build] sources`, no feature's `sources`), has no device extension and a library
    path (if any) that is no device source: the default globs name no device extension, so no
    glob is walked here for that answer (the planner walks them, and refuses what they select
    that it cannot build)."""
    m = pkg.manifest
    if not exts and m.build.sources is None and not any(f.sources for f in m.features.values()) \
            and not (m.lib_path and role_of(m.lib_path) == Role.DEVICE):
        return []
    return [s.path for s in package_sources(pkg, expand) if s.role == Role.DEVICE]


def _check_claims(pkg: Package, device: list[PkgPath], exts: dict[str, str], result: ProgramResult | None) -> None:
    """A device source no action reads would silently drop out of the build: refuse it by name.
    `result`: the package's program's (None: it has none, and no action claims anything)."""
    claimed = {p for a in result.actions for p in a.inputs} if result is not None else set()
    for rel in device:
        if os.path.join(pkg.root, rel) in claimed:
            continue
        ext = os.path.splitext(rel)[1]
        why = (f"no action of `{display_path(os.path.join(pkg.root, PROGRAM_NAME))}` reads it"
               if pkg.program is not None else f"`{pkg.name}` has no {PROGRAM_NAME} to declare one")
        note = (f"note: `{ext}` is a device extension of `{exts[ext]}`; its rule declares the action that "
                f"compiles each source (`mcpp.action(..., inputs = [source])`)" if ext in exts else
                f"note: `{ext}` is a device source (docs/accelerators.md); no rule package this package uses "
                f"compiles it, so nothing would link its object")
        raise ManifestError(f"device source `{rel}` is not claimed by any action: {why}",
                            pkg.manifest.position("build", "sources"), [note])



def _check_floors(graph: PackageGraph, reporter) -> None:
    """The probe channel: every `floor("x >= v")` is compared with the `fact("x", w)` stated in the
    graph. A floor nobody states a fact for is reported and not enforced: a probe that could not
    answer (no driver on this machine) must not invent an answer, and where a wrong answer costs
    more than no answer, the build reports and goes on."""
    floors = [(pkg, f) for pkg in graph.order for f in (pkg.program.floors if pkg.program else ())]
    if not floors:
        return
    from packaging.version import InvalidVersion, Version

    from .api import FLOOR
    facts: dict[str, tuple[str, str]] = {}
    for pkg in graph.order:
        for name, version in (pkg.program.facts if pkg.program else {}).items():
            facts.setdefault(name, (version, pkg.name))
    for pkg, floor in floors:
        m = FLOOR.match(floor)
        fact = facts.get(m["name"])
        if fact is None:
            reporter.warning(f"{pkg.name}: requires `{floor.strip()}`, and no build program states a fact "
                             f"`{m['name']}`: not enforced")
            continue
        have, who = fact
        try:
            ok = Version(have) >= Version(m["version"]) if m["op"] == ">=" else Version(have) == Version(m["version"])
        except InvalidVersion:
            ok = have == m["version"] if m["op"] == "==" else have >= m["version"]
        if not ok:
            raise McppError(f"package `{pkg.name}` requires `{floor}`, but `{who}` states "
                            f"{m['name']} {have}")
