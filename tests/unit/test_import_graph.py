"""The import graph of engine/, cas/ and sandbox/ has no cycle, and its layers point one way.

A cycle kept alive by an import moved into a function body still couples the modules both ways,
so every `import` counts here: module level, function level, and under `if TYPE_CHECKING`. The
graph is read with `ast` (nothing is imported), relative imports resolved, and the installed
names (`mcpp.engine.x`) mapped to the repository's folders (`engine/x.py`).

Two checks:
- modules: no module reaches itself through its imports;
- components: with each sub-package collapsed into one node (`engine.plan`, `engine.program`,
  `cas.remote`, ...; a top-level module such as `engine.build.compose` stays its own node), no cycle
  either, so two sub-packages never lean on each other module by module.
And `cas/` and `sandbox/` never import `engine/`: they are libraries the engine uses.
"""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("engine", "cas", "sandbox")
NAMESPACE = "mcpp."


def _modules() -> dict[str, Path]:
    """Dotted name (`engine.plan.sources`, `engine.plan` for its __init__) -> file."""
    out = {}
    for root in ROOTS:
        for path in sorted((REPO / root).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _local(name: str) -> str | None:
    """`mcpp.engine.graph` -> `engine.graph`; None for a name outside the three folders."""
    if name.startswith(NAMESPACE):
        name = name[len(NAMESPACE):]
    return name if name.split(".")[0] in ROOTS else None


def _imports(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int]]:
    """(imported module, line) for every import statement anywhere in the file."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            local = _local(target)
            if local is None:
                continue
            # `from pkg import sub` imports the module pkg.sub; `from pkg import name` reads pkg.
            subs = [f"{local}.{a.name}" for a in node.names if f"{local}.{a.name}" in modules]
            targets = subs if len(subs) == len(node.names) else subs + [local]
        for target in targets:
            local = _local(target)
            if local is None:
                continue
            # Importing a.b.c runs a/__init__ and a/b/__init__ before a/b/c, so each is an edge;
            # not the importer's own packages, which are already running when it is imported.
            parts = local.split(".")
            chain = [".".join(parts[:i]) for i in range(1, len(parts) + 1)]
            for name in chain:
                if name in modules and name != module and not module.startswith(name + "."):
                    out.append((name, node.lineno))
    return out


def _graph() -> tuple[dict[str, dict[str, int]], dict[str, Path]]:
    modules = _modules()
    edges: dict[str, dict[str, int]] = {m: {} for m in modules}
    for module, path in modules.items():
        for target, line in _imports(module, path, modules):
            edges[module].setdefault(target, line)
    return edges, modules


def _cycles(edges: dict[str, dict[str, int]]) -> list[tuple[list[str], list[str]]]:
    """(members, one cycle through them as a closed path) for every strongly connected component
    that has a cycle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(v: str) -> None:  # Tarjan; the graphs are small, recursion is fine
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in edges.get(v, {}):
                components.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return [(comp, _closed_path(comp, edges)) for comp in components]


def _closed_path(component: list[str], edges: dict[str, dict[str, int]]) -> list[str]:
    """A shortest cycle through the component's first module, by breadth-first search."""
    members = set(component)
    start = component[0]
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(edges[v]):
                if w not in members:
                    continue
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return path[::-1] + [start]
                if w not in came_from:
                    came_from[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"no cycle through {start}")


def _describe(found: tuple[list[str], list[str]], where) -> str:
    members, cycle = found
    steps = [f"{a} -> {b} ({where(a, b)})" for a, b in zip(cycle, cycle[1:])]
    return (" -> ".join(cycle) + "\n      " + "\n      ".join(steps)
            + f"\n    all of these reach each other: {', '.join(members)}")


def _component(module: str) -> str:
    """A sub-package collapses to one node; a top-level module (`engine.build.compose`) is its own."""
    parts = module.split(".")
    return ".".join(parts[:2])


def test_no_module_import_cycle():
    edges, modules = _graph()

    def where(a: str, b: str) -> str:
        return f"{modules[a].relative_to(REPO)}:{edges[a][b]}"

    cycles = _cycles(edges)
    assert not cycles, "import cycles between modules:\n  " + "\n  ".join(_describe(c, where) for c in cycles)


def test_no_component_import_cycle():
    edges, modules = _graph()
    collapsed: dict[str, dict[str, int]] = {}
    witness: dict[tuple[str, str], str] = {}
    for a, targets in edges.items():
        ca = _component(a)
        collapsed.setdefault(ca, {})
        for b, line in targets.items():
            cb = _component(b)
            if ca != cb:
                collapsed[ca].setdefault(cb, line)
                witness.setdefault((ca, cb), f"{modules[a].relative_to(REPO)}:{line} imports {b}")

    cycles = _cycles(collapsed)
    assert not cycles, ("import cycles between sub-packages:\n  "
                        + "\n  ".join(_describe(c, lambda a, b: witness[(a, b)]) for c in cycles))


def _library_imports_of_engine(edges: dict[str, dict[str, int]]) -> list[tuple[str, int, str]]:
    return [(a, line, b) for a, targets in edges.items() if a.split(".")[0] in ("cas", "sandbox")
            for b, line in targets.items() if b.split(".")[0] == "engine"]


def test_libraries_never_import_the_engine():
    edges, modules = _graph()
    bad = [f"{modules[a].relative_to(REPO)}:{line} imports {b}" for a, line, b in _library_imports_of_engine(edges)]
    assert not bad, "cas/ and sandbox/ must not import engine/:\n  " + "\n  ".join(bad)


def test_the_checker_sees_a_cycle_kept_alive_by_a_function_level_import(tmp_path):
    """The guard itself: a cycle through an import inside a function is found and named."""
    a = tmp_path / "a.py"
    a.write_text("from .b import x\n")
    b = tmp_path / "b.py"
    b.write_text("def f():\n    from .a import y\n")
    modules = {"engine.a": a, "engine.b": b}
    edges = {m: {t: line for t, line in _imports(m, p, modules)} for m, p in modules.items()}
    assert edges == {"engine.a": {"engine.b": 1}, "engine.b": {"engine.a": 2}}
    assert _cycles(edges) == [(["engine.a", "engine.b"], ["engine.a", "engine.b", "engine.a"])]


def test_the_checker_sees_a_library_importing_the_engine(tmp_path):
    store = tmp_path / "store.py"
    store.write_text("def f():\n    from mcpp.engine.core.errors import McppError\n")
    modules = {"cas.store": store, "engine.core.errors": tmp_path / "errors.py"}
    edges = {"cas.store": dict(_imports("cas.store", store, modules)), "engine.core.errors": {}}
    assert _library_imports_of_engine(edges) == [("cas.store", 2, "engine.core.errors")]


def test_the_build_never_imports_the_server_that_hosts_it():
    """The server imports the build, never the reverse: what a build takes from a warm server and
    leaves to it goes through the `BuildMemory` passed into `build(...)` (engine/build/memory.py)."""
    edges, _ = _graph()
    chain = {"engine.build.compose": None}
    todo = ["engine.build.compose"]
    while todo:
        module = todo.pop()
        for target in edges.get(module, {}):
            if target not in chain:
                chain[target] = module
                todo.append(target)
    reached = sorted(m for m in chain if m == "engine.server" or m.startswith("engine.server."))

    def path_to(module: str) -> str:
        steps = [module]
        while chain[steps[-1]] is not None:
            steps.append(chain[steps[-1]])
        return " -> ".join(reversed(steps))

    assert not reached, "engine.build.compose reaches the server:\n  " + "\n  ".join(path_to(m) for m in reached)


# The engine's layers, top to bottom. A module imports only from its own sub-package or from a
# sub-package of a lower layer; two sub-packages of one layer never import each other. So the
# build never reaches the warm server that hosts it, and `core` imports nothing of the engine.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("engine.entry",),                                      # the console script
    ("engine.cli",),                                        # click: one module per command
    ("engine.server", "engine.bot", "engine.publish", "engine.edit"),  # the warm build server; the REAPI
                                                            # bot; `mcpp package/publish`; `mcpp add/remove`
    ("engine.build",),                                      # one build, composed
    ("engine.exec",),                                       # running actions
    ("engine.state", "engine.trust"),                       # what earlier builds left; trust policy
    ("engine.program",),                                    # build.star evaluation
    ("engine.plan",),                                       # planning actions
    ("engine.package", "engine.toolchain"),
    ("engine.registry",),                                   # index dependencies, mcpp.lock
    ("engine.payloads",),                                   # the payload index, store and unpacker
    ("engine.manifest", "engine.modules"),                  # mcpp.toml; the C++ module scanner
    ("engine.report",),                                     # what the user sees
    ("engine.core",),                                       # errors, conventions, registries
)
ROOT_MODULES_MAX = 8


def _rank() -> dict[str, int]:
    return {name: len(LAYERS) - i for i, layer in enumerate(LAYERS) for name in layer}


def _layer_violations(edges: dict[str, dict[str, int]], rank: dict[str, int]) -> list[tuple[str, int, str]]:
    bad = []
    for a, targets in edges.items():
        ca = _component(a)
        if ca not in rank:
            continue
        for b, line in targets.items():
            cb = _component(b)
            if cb in rank and cb != ca and rank[cb] >= rank[ca]:
                bad.append((a, line, b))
    return bad


def test_engine_layers_point_down():
    edges, modules = _graph()
    bad = [f"{modules[a].relative_to(REPO)}:{line} imports {b}" for a, line, b in _layer_violations(edges, _rank())]
    assert not bad, ("imports that point up or sideways between the engine's layers (LAYERS):\n  "
                     + "\n  ".join(bad))


def test_every_engine_component_has_a_layer():
    _, modules = _graph()
    components = {_component(m) for m in modules if m.startswith("engine.")}
    assert components - set(_rank()) == set(), "add each new sub-package (or root module) to LAYERS"


def test_the_engine_root_keeps_a_handful_of_modules():
    root = [p.name for p in (REPO / "engine").glob("*.py")]
    assert len(root) <= ROOT_MODULES_MAX, f"engine/ holds {sorted(root)}: move modules into their layer"


def test_the_layer_check_sees_an_import_that_points_up():
    edges = {"engine.build.x": {"engine.server.y": 3}, "engine.server.y": {"engine.build.x": 1}}
    assert _layer_violations(edges, _rank()) == [("engine.build.x", 3, "engine.server.y")]
