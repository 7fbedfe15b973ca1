"""`mcpp.probe` from a rule package (docs/rules.md, "Probes"): the rule package's own files may
be inputs, and the `-I` directories of `cxx_flags()` reach the probe with their files, so a
rule can preprocess its template with the consumer's compiler and flags at evaluation time."""
from __future__ import annotations

import shutil

import pytest

from tests.e2e.e2e_support import Mcpp

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

RULE = """
def probe_cfg(extra = []):
    tpl = mcpp.rule_dir() + "/tpl/probe.cpp"
    r = mcpp.probe([mcpp.toolchain().cxx] + mcpp.cxx_flags() + ["-E", "-P", tpl], inputs = [tpl] + extra)
    if r.code != 0:
        fail("probe failed: " + r.stderr)
    mcpp.define('PROBED="%s"' % r.stdout.strip())
"""


def make(project, build_star="load(\"example.rules.r\", \"probe_cfg\")\nprobe_cfg()\n"):
    return project({
        "rules/mcpp.toml": '[package]\nname = "rules"\nversion = "0.1.0"\nnamespace = "example"\n'
                           '[features.r]\nsources = ["src/r.star"]\nrule_module = "example.rules.r"\n',
        "rules/src/r.star": RULE,
        "rules/tpl/probe.cpp": '#include "cfg.h"\nint value = CFG_VALUE;\n',
        "app/mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n'
                         '[dependencies]\nexample.rules = { path = "../rules", features = ["r"] }\n',
        "app/include/cfg.h": "#define CFG_VALUE 41\n",
        "app/src/main.cpp": '#include <cstdio>\nint main() { std::printf("%s\\n", PROBED); }\n',
        "app/build.star": build_star,
    })


@pytest.mark.parametrize("sandbox", ["bwrap", "dir"])
def test_a_probe_reads_the_rule_packages_template_and_the_packages_include_dirs(project, mcpp: Mcpp, sandbox):
    root = make(project)
    res = mcpp("run", "--sandbox", sandbox, cwd=root / "app")
    assert res.code == 0, res.err
    assert res.out.splitlines()[-1] == "int value = 41;"
    (root / "app/include/cfg.h").write_text("#define CFG_VALUE 42\n")  # a staged header: re-probed
    res = mcpp("run", "--sandbox", sandbox, cwd=root / "app")
    assert res.out.splitlines()[-1] == "int value = 42;", res.err


def test_an_input_of_neither_package_is_an_error_at_the_call(project, mcpp: Mcpp, tmp_path):
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("x\n")
    root = make(project, f'load("example.rules.r", "probe_cfg")\nprobe_cfg(extra = ["{outside}"])\n')
    res = mcpp("build", cwd=root / "app")
    assert res.code == 2
    first = res.diagnostics.splitlines()[0]
    assert first.endswith(f"rules/src/r.star:3:5: error: probe(): input `{outside}` is not a file of package `app` "
                          f"or of the rule package calling it"), res.err
