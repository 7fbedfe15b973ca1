"""The package model in-process: the graph `load_graph` builds from manifests on disk, the role of
each source, and the targets of a package (no compiler runs here)."""
from __future__ import annotations

import json

from mcpp.engine.core.conventions import DEFAULT_GLOBS, Role
from mcpp.engine.manifest.fold import read_manifest
from mcpp.engine.package.graph import load_graph
from mcpp.engine.package.model import Selection
from mcpp.engine.package.sources import Source, package_sources, role_of
from mcpp.engine.package.targets import targets_of
from tests.e2e.e2e_support import write_tree

TREE = {
    "app/mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n'
                     '[dependencies]\nlib = { path = "../lib", features = ["loud"], default-features = false }\n',
    "app/src/main.cpp": "int main() {}\n",
    "app/src/util.cppm": "export module util;\n",
    "app/src/util.hpp": "#pragma once\n",
    "lib/mcpp.toml": '[package]\nname = "lib"\nversion = "0.1.0"\n'
                     '[features]\ndefault = ["quiet"]\nquiet = []\nloud = { implies = ["tone"] }\ntone = []\n'
                     '[feature-deps.loud]\nextra = { path = "../extra" }\n',
    "lib/src/lib.c": "int f(void) { return 1; }\n",
    "extra/mcpp.toml": '[package]\nname = "extra"\nversion = "0.2.0"\n',
    "extra/src/extra.cpp": "int g() { return 2; }\n",
}


def test_a_feature_edge_joins_the_graph_and_features_unify(tmp_path):
    root = write_tree(tmp_path, TREE)
    graph = load_graph(str(root / "app"), None, Selection())
    assert [p.name for p in graph.order] == ["extra", "lib", "app"]
    by_name = {p.name: p for p in graph.order}
    assert by_name["lib"].features == {"loud", "tone"}  # default-features = false, `implies` expanded
    assert [d.name for d in by_name["lib"].deps] == ["extra"]  # joined through [feature-deps.loud]
    assert graph.members == [by_name["app"]]
    assert all(p.program is None for p in graph.order)
    assert graph.target_dir == str(root / "app" / "target")


def test_a_host_tool_build_passes_its_target_dir_to_the_loader(tmp_path):
    root = write_tree(tmp_path, TREE)
    elsewhere = str(tmp_path / "consumer" / "target" / "host" / "app")
    graph = load_graph(str(root / "app"), None, Selection(), target_override=elsewhere)
    assert graph.target_dir == elsewhere


def test_sources_have_enum_roles_that_serialise_as_before(tmp_path):
    root = write_tree(tmp_path, TREE)
    graph = load_graph(str(root / "app"), None, Selection())
    app = graph.members[0]
    sources = package_sources(app)
    assert sources == [Source("src/main.cpp", Role.CXX), Source("src/util.cppm", Role.MODULE)]  # no header
    assert all(type(s.role) is Role for s in sources)
    assert json.dumps([s.role for s in sources]) == '["cxx", "module"]'
    assert Source("a.c", "c").role is Role.C  # a role spelled as its value is the role
    assert role_of("a.toy", frozenset({".toy"})) is Role.DEVICE
    assert role_of("a.txt") is None
    assert {"c": 1}[Role.C] == 1


def test_targets_and_the_convention_globs(tmp_path):
    root = write_tree(tmp_path, TREE)
    graph = load_graph(str(root / "app"), None, Selection())
    by_name = {p.name: p for p in graph.order}
    assert [(t.name, t.kind, t.main) for t in targets_of(by_name["app"])] == [("app", "bin", "src/main.cpp")]
    assert targets_of(by_name["lib"]) == []


def test_conditional_sources_append_to_the_convention_globs(tmp_path):
    root = write_tree(tmp_path, {
        "mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n'
                     "[target.'cfg(unix)'.build]\nsources = [\"extra/*.cpp\"]\n",
    })
    m = read_manifest(str(root / "mcpp.toml"))
    assert m.build.sources == DEFAULT_GLOBS + ("extra/*.cpp",)


def test_a_sources_extension_is_what_splitext_answers():
    import os

    from mcpp.engine.package.sources import extension

    for path in ("a.cpp", "src/a.cpp", "src/.a", "src/..a", "src/.a.cpp", "a", "dir.x/f", "dir.x/f.c", ".", "..",
                 "a.", "x/y/z.tar.gz", "/abs/a.h", "src/...cpp", "a/b.", "src/mod.cppm", "A.C"):
        assert extension(path) == os.path.splitext(path)[1], path
