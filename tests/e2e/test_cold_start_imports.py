"""A cold start imports only what the build uses: a graph without a build.star never loads the
build program evaluator (starlark-pyo3, the `mcpp` struct and its prelude), one that declares no
payload never loads the installer (tarfile, zip, the indexes), one without a remote never loads
the signing code, and `mcpp build` never loads the store's maintenance (`mcpp cache`) nor a build program's
result type (engine/package/program_result.py), prebuilt artifacts' or host tools' modules, OpenSSL's
hashes or shlex: some
15 ms of every cold start (a new server, or a build in process); nor, without index dependencies or a
remote, the registry's resolver or the remote's settings, nor the modules of other commands."""
from __future__ import annotations

import json
import subprocess
import sys

from e2e_support import write_tree

PROJECT = {
    "mcpp.toml": """
        [package]
        name = "hello"
        version = "0.1.0"
    """,
    "src/main.cpp": "int main() { return 0; }\n",
}
PROGRAM = 'mcpp.define("FROM_PROGRAM=1")\n'

# Builds in this interpreter (no server) and prints which evaluator modules it imported.
PROBE = """
import json, sys
from mcpp.engine.cli.dispatch import main
try:
    main(["build", "--no-server", "--sandbox", "off", "--message-format", "json"])
except SystemExit as e:
    code = e.code
loaded = sorted(m for m in sys.modules if m in ("starlark", "tarfile", "mcpp.engine.payloads.install",
                                                 "mcpp.cas.remote.signing", "mcpp.cas.maintenance",
                                                 "mcpp.cas.remote.config", "mcpp.engine.registry.session",
                                                 "mcpp.engine.server.commands", "mcpp.engine.cli.cache",
                                                 "mcpp.engine.payloads.resolve",
                                                 "mcpp.engine.package.program_result", "hashlib", "shlex",
                                                 "mcpp.engine.build.prebuilt", "mcpp.engine.build.host_tools")
                or m.startswith("mcpp.engine.program."))
print(json.dumps({"code": code, "loaded": loaded}))
"""


def _build(root, home) -> dict:
    p = subprocess.run([sys.executable, "-c", PROBE], cwd=root, capture_output=True, text=True, timeout=300,
                       env={"PATH": "/usr/local/bin:/usr/bin:/bin", "MCPP_HOME": str(home)})
    return json.loads(p.stdout.splitlines()[-1])


def test_a_plain_build_imports_no_evaluator_installer_signing_or_maintenance(tmp_path):
    write_tree(tmp_path / "p", PROJECT)
    got = _build(tmp_path / "p", tmp_path / "home")
    assert got["code"] in (0, None)
    assert not {"starlark", "mcpp.engine.program.evaluate", "tarfile", "mcpp.engine.payloads.install",
                "mcpp.cas.remote.signing", "mcpp.cas.maintenance", "mcpp.cas.remote.config",
                "mcpp.engine.registry.session", "mcpp.engine.server.commands", "mcpp.engine.cli.cache",
                "mcpp.engine.payloads.resolve", "mcpp.engine.package.program_result", "hashlib", "shlex",
                "mcpp.engine.build.prebuilt", "mcpp.engine.build.host_tools"} \
        & set(got["loaded"]), got


def test_a_build_with_a_program_does(tmp_path):
    write_tree(tmp_path / "p", {**PROJECT, "build.star": PROGRAM})
    got = _build(tmp_path / "p", tmp_path / "home")
    assert got["code"] in (0, None)
    assert {"starlark", "mcpp.engine.program.evaluate", "mcpp.engine.package.program_result"} <= set(got["loaded"]), got


def test_a_plain_build_from_the_entry_point_loads_neither_click_nor_inspect(tmp_path):
    """`mcpp build ...` is read without click (engine/cli/flags.py), `dataclasses` imported without
    `inspect` (engine/core/dataclass_code.py); a line click must read (`--timings` alone) loads it."""
    write_tree(tmp_path / "p", PROJECT)
    probe = """
import atexit, json, sys
atexit.register(lambda: print(json.dumps(sorted(m for m in ("click", "inspect") if m in sys.modules))))
sys.argv = ["mcpp", *sys.argv[1:]]
from mcpp.engine.entry import main
main()
"""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "MCPP_HOME": str(tmp_path / "home"), "MCPP_NO_SERVER": "1"}

    def loaded(*argv: str) -> list[str]:
        p = subprocess.run([sys.executable, "-c", probe, *argv], cwd=tmp_path / "p", capture_output=True,
                           text=True, timeout=300, env=env)
        assert p.returncode == 0, p.stderr
        return json.loads(p.stdout.splitlines()[-1])

    assert loaded("build", "-q", "-j", "2", "--sandbox", "off", "--message-format", "json") == []
    assert (tmp_path / "p/target/dev/hello").is_file()
    assert loaded("build", "--sandbox", "off", "--timings") == ["click", "inspect"]
