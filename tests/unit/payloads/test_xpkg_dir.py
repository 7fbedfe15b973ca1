"""`mcpp.xpkg_dir`: every spelling answers the build's one version, a requirement narrows it."""
from __future__ import annotations

import os

from mcpp.engine.program.api import McppApi
from mcpp.engine.program.context import PayloadRef, ProgramContext
from mcpp.engine.program.evaluate import Evaluation


def answers(tmp_path, calls: list[str]) -> list[str]:
    ctx = ProgramContext(package="p", version="0.1.0", namespace="", manifest_dir=str(tmp_path),
                         out_dir=str(tmp_path / "out"), profile="dev", target="x86_64-linux-gnu",
                         host="x86_64-linux-gnu", features=(), accel=(), device_sources=(), tools=(),
                         payloads=(PayloadRef("xim", "gen", "/store/xim/gen/2.0.0", "2.0.0"),
                                   PayloadRef("acme", "sdk", "/opt/sdk", "13.0.88")),
                         rule_modules=())
    (tmp_path / "build.star").write_text("".join(f"mcpp.warning(repr({c}))\n" for c in calls))
    api = McppApi(ctx, {})
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        Evaluation(api, {}).run(str(tmp_path / "build.star"))
    finally:
        os.chdir(cwd)
    return [w.strip('"') for w in api.result.warnings]


def test_spellings_and_requirements(tmp_path):
    assert answers(tmp_path, [
        'mcpp.xpkg_dir("xim:gen")', 'mcpp.xpkg_dir("gen")', 'mcpp.xpkg_dir("xim", "gen")',
        'mcpp.xpkg_dir("xim:gen@>=2.0")', 'mcpp.xpkg_dir("xim:gen", "^2")', 'mcpp.xpkg_dir("xim:gen@>=2099.1")',
        'mcpp.xpkg_dir("acme:sdk@13.0.88")', 'mcpp.xpkg_dir("xim:sdk")', 'mcpp.xpkg_dir("other")',
    ]) == ["/store/xim/gen/2.0.0"] * 5 + ["", "/opt/sdk", "", ""]
