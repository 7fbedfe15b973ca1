"""A build that can restore nothing (the first build of a fresh home, in the `mcpp` process that
has no server's watcher to ask) starts its sandbox's first worker while it plans
(engine/build/compose.py `_warm_up`), so that its first compile does not wait for the bwrap probe
and the worker; a build that may restore its actions does not. Real bwrap, a real project."""
from __future__ import annotations

import os

import pytest

from mcpp.cas.home import Home
from mcpp.engine.build import compose
from mcpp.engine.build.compose import BuildOptions
from mcpp.engine.build.memory import NoMemory
from mcpp.engine.exec.sandbox_warm_up import SandboxWarmUp
from mcpp.engine.exec.stores import Stores
from mcpp.engine.package.graph import load_graph
from mcpp.engine.package.layout import Layout
from mcpp.engine.package.model import Selection
from mcpp.engine.report.reporter import Reporter
from mcpp.engine.trust.policy import TrustPolicy


@pytest.fixture
def first_build(tmp_path, make):
    make("bwrap")  # skips where bwrap cannot run
    project = tmp_path / "p"
    (project / "src").mkdir(parents=True)
    (project / "mcpp.toml").write_text('[package]\nname = "p"\nversion = "0.1.0"\n')
    (project / "src" / "main.cpp").write_text("int main() { return 0; }\n")
    home = Home.of(tmp_path / "home")
    layout = Layout.of(load_graph(str(project), None, Selection()), "dev")

    def warm_up() -> SandboxWarmUp | None:
        opts = BuildOptions(cwd=str(project))
        return compose._warm_up(opts, Reporter(quiet=True), Stores.open(home), (), None, TrustPolicy(None),
                                NoMemory(), layout)

    return home, layout, warm_up


def test_the_first_build_of_a_fresh_home_starts_its_worker_while_it_plans(first_build):
    _home, _layout, warm_up = first_build
    warm = warm_up()
    try:
        assert isinstance(warm, SandboxWarmUp)
        assert warm.get().guarantees.stages_inputs  # the worker started ahead answered
    finally:
        if warm is not None:
            warm.close()


def test_a_build_that_may_restore_from_the_home_starts_none(first_build):
    home, _layout, warm_up = first_build
    os.makedirs(home.ac)  # a kept home (target/ removed): its actions may come from the cache
    assert warm_up() is None


def test_a_build_of_a_target_directory_built_before_starts_none(first_build):
    _home, layout, warm_up = first_build
    os.makedirs(os.path.dirname(layout.action_state), exist_ok=True)
    open(layout.action_state, "w").close()  # an in-process build with no watcher: a no-op, probably
    assert warm_up() is None
