"""Which packages' sources `evaluate` expands to find device sources (engine/program/driver.py)."""
from __future__ import annotations

from mcpp.engine.manifest import globs
from mcpp.engine.package.graph import load_graph
from mcpp.engine.package.model import Selection
from mcpp.engine.program.driver import check_loads, evaluate
from mcpp.engine.report.reporter import Reporter


def _evaluated(tmp_path, build_section: str) -> list:
    (tmp_path / "mcpp.toml").write_text(f'[package]\nname = "p"\nversion = "0.1.0"\n{build_section}')
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.cpp").write_text("int main() { return 0; }\n")
    expanded = []

    def expand(root, patterns, boundary=None):
        expanded.append(tuple(patterns))
        return globs.expand(root, patterns, boundary)

    graph = load_graph(str(tmp_path), None, Selection())
    evaluate(graph, check_loads(graph, lambda m: None, expand), None, None, Reporter(quiet=True), expand=expand)
    return expanded


def test_default_globs_name_no_device_source_so_evaluation_walks_none(tmp_path):
    """The planner walks them; a no-op build walks a package's tree once, not twice."""
    assert _evaluated(tmp_path, "") == []


def test_named_sources_are_expanded_for_their_device_sources(tmp_path):
    assert _evaluated(tmp_path, '[build]\nsources = ["src/*.cpp"]\n') == [("src/*.cpp",)]
