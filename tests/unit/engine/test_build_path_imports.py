"""Importing the command line (what every in-process `mcpp build` does first) loads only what a
plain build of a path-only project uses: the modules of the other commands, the registry's
resolver, the payload resolver, the remote's settings and what they pull in (socket, the index, the lock) are imported
by the command, the manifest or the configuration that needs them (engine/cli/app.py's
`_Commands`, engine/package/graph.py, engine/core/settings.py); `shlex` and `hashlib` by the few
functions that use them."""
from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
import mcpp.engine.cli.app
print(json.dumps(sorted(sys.modules)))
"""

NOT_ON_THE_BUILD_PATH = {
    "mcpp.engine.registry.session", "mcpp.engine.registry.resolver", "mcpp.engine.registry.lockfile",
    "mcpp.engine.registry.requirements",
    "mcpp.engine.registry.cache", "mcpp.engine.payloads.index", "mcpp.engine.payloads.descriptor",
    "mcpp.cas.remote.config", "mcpp.engine.bot.command", "mcpp.engine.server.commands",
    "mcpp.engine.cli.cache", "mcpp.engine.cli.publish", "mcpp.engine.cli.payload", "mcpp.engine.cli.deps_edit",
    "mcpp.engine.cli.dependencies", "mcpp.engine.publish", "mcpp.engine.edit", "socket",
    "mcpp.engine.payloads.resolve", "mcpp.engine.payloads.resolved", "mcpp.engine.payloads.version",
    "mcpp.engine.report.timings",
    # shell quoting (`-v`, pkg-config flags, response files) and OpenSSL's hashes: a prepared
    # input tree is named with blake3, the store's hash (sandbox/input_tree.py)
    "shlex", "hashlib", "_hashlib",
    "mcpp.engine.package.program_result",  # a build program's result: only where a package has a build.star
    # a dependency's prebuilt artifacts, host tools: only where a manifest declares them (engine/build/compose.py)
    "mcpp.engine.build.prebuilt", "mcpp.engine.build.host_tools",
    # `run`, `test` and `install`: their click commands (each with build's forty options) are made
    # when one of them is looked up (engine/core/commands.py)
    "mcpp.engine.cli.build_commands",
    # remote execution, generated source trees, `-v`'s command lines: only the builds that use them
    "mcpp.engine.exec.remote_exec_runner", "mcpp.engine.plan.dynamic_trees", "mcpp.engine.report.shell_text",
}


def _loaded(code: str) -> set[str]:
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    return set(json.loads(p.stdout.splitlines()[-1]))


def test_importing_the_command_line_loads_no_other_commands_module_registry_or_remote():
    assert _loaded(PROBE) & NOT_ON_THE_BUILD_PATH == set()


def test_a_plain_builds_command_line_leaves_the_stores_compression_for_later():
    """What `mcpp build` imports in process before its first compile (engine/entry.py): not the
    store's compression, imported at its first use (cas/local_store.py), nor `platform` (which
    that loads; the host triple reads `os.uname`): ~5 ms that a first build's first compile
    waited for. (click's command line, the server's, loads `platform` through `uuid`.)"""
    loaded = _loaded("""
import json, sys
from mcpp.engine.core.dataclass_code import install
install()
import mcpp.engine.build.cold_start, mcpp.engine.build.memory, mcpp.engine.cli.dispatch
print(json.dumps(sorted(sys.modules)))
""")
    assert loaded & {"zstandard", "platform"} == set()
    assert "mcpp.cas.local_store" in loaded


def test_a_command_that_lives_in_its_own_module_still_runs():
    loaded = _loaded("""
import json, sys
from mcpp.engine.cli.dispatch import main
try:
    main(["cache", "--help"])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
""")
    assert "mcpp.engine.cli.cache" in loaded
    assert "mcpp.engine.cli.publish" not in loaded


def test_importing_the_command_line_compiles_none_of_the_expressions_a_plain_build_does_not_use():
    """engine/core/lazy_re.py: the module scanner's, the diagnostics parser's, the accelerator
    grammar's and the index dependencies' expressions wait for their first use."""
    compiled = _loaded("""
import json, sys
import mcpp.engine.cli.app
from mcpp.engine.core import accel
from mcpp.engine.manifest import deps, version_req
from mcpp.engine.modules import scanner
from mcpp.engine.report import diagnostics, link_hints
deferred = {"scanner._HEAD": scanner._HEAD, "scanner._TOKEN": scanner._TOKEN,
            "diagnostics._DIAGNOSTIC": diagnostics._DIAGNOSTIC, "diagnostics._PATH_TOKEN": diagnostics._PATH_TOKEN,
            "accel._HEAD": accel._HEAD, "deps.INDEX_NAME": deps.INDEX_NAME,
            "version_req._COMPARATOR": version_req._COMPARATOR, "link_hints._MISSING_LIB": link_hints._MISSING_LIB}
print(json.dumps(sorted(name for name, p in deferred.items() if "match" in getattr(p, "__dict__", {"match": p}))))
""")
    assert compiled == set()


def test_a_plain_build_line_loads_neither_click_nor_inspect():
    """engine/cli/launch.py reads `mcpp build ...` itself (engine/cli/flags.py) and `dataclasses`
    is imported without `inspect` (engine/core/dataclass_code.py): ~20 ms of a first build's
    start on a 2-core machine (bench/RESULTS.md)."""
    loaded = _loaded("""
import json, sys
from mcpp.engine.core.dataclass_code import install
install()
import mcpp.engine.cli.launch
print(json.dumps(sorted(sys.modules)))
""")
    assert loaded & {"click", "inspect", "mcpp.engine.cli.app"} == set()


def test_a_server_preloads_every_module_a_warm_builds_schedule_imports():
    """What engine/build/compose.py imports inside `_run_plan` and `_build` on every build (its
    pipeline, scheduler and records) a server imports once (engine/server/warm.py `preload`), so a
    build child forked for a request does not: an import there costs each build its finder's
    stats, its bytecode read and its execution, before the first compile starts (bench/RESULTS.md)."""
    loaded = _loaded("""
import json, sys
from mcpp.engine.server import warm
warm.preload()
print(json.dumps(sorted(sys.modules)))
""")
    every_build = {"mcpp.engine.exec.explain", "mcpp.engine.exec.larger_first", "mcpp.engine.exec.pipeline",
                   "mcpp.engine.exec.schedule", "mcpp.engine.build.build_outputs", "mcpp.engine.state.unchanged"}
    assert every_build - loaded == set()
