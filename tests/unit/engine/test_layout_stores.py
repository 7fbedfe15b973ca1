"""Layout (where a build's files go) and Stores (the store stack of one home)."""
from __future__ import annotations

import os
import re
from pathlib import Path
from types import SimpleNamespace

from mcpp.cas.home import Home
from mcpp.cas.remote.config import RemoteSettings
from mcpp.engine.state import noop
from mcpp.engine.server import paths as server_paths
from mcpp.engine.build.compose import BuildOptions
from mcpp.engine.package.layout import Layout
from mcpp.engine.core.settings import Settings
from mcpp.engine.exec.stores import Stores


def _graph(workspace: str, roots: list[str], target_dir: str | None = None):
    return SimpleNamespace(order=[SimpleNamespace(root=r) for r in roots], workspace_root=workspace,
                           target_dir=target_dir or os.path.join(workspace, "target"), context=None)


def test_execroot_is_the_common_ancestor_of_packages_and_target():
    layout = Layout.of(_graph("/w/app", ["/w/app", "/w/libs/fmt"]), "dev")
    assert layout.execroot == "/w"
    assert Layout.of(_graph("/w/app", ["/w/app"]), "dev").execroot == "/w/app"
    # A host tool's build puts target/ under the consumer's: the execroot covers both.
    tool = Layout.of(_graph("/src/tool", ["/src/tool"], "/w/app/target/host/tool"), "dev")
    assert tool.execroot == "/" and tool.out_dir == "/w/app/target/host/tool/dev"


def test_paths_under_target_profile():
    layout = Layout.of(_graph("/w", ["/w"]), "release")
    assert layout.out_dir == "/w/target/release"
    assert layout.lock_file == "/w/target/.lock"
    assert layout.gen_dir("fmt") == "/w/target/release/.mcpp/gen/fmt"
    assert layout.state_dir == "/w/target/release/.mcpp"
    state = {layout.action_state, layout.scan_cache, layout.stat_cache, layout.explain_log, layout.program_cache}
    assert len(state) == 5 and all(os.path.dirname(p) == layout.state_dir for p in state)
    assert layout.compile_commands == "/w/target/compile_commands.json"
    assert layout.compile_commands_link == "/w/compile_commands.json"



def test_exec_path_answers_what_relpath_does(tmp_path):
    """`exec_path` takes a prefix test for normalized paths under the execroot; every other
    spelling still gets `os.path.relpath`'s answer."""
    root = tmp_path / "ws"
    for execroot in (str(root), f"{root}/", f"{root}/sub/.."):
        layout = Layout(str(root), f"{root}/target", execroot, "dev")
        for path in (f"{root}/src/a.cpp", f"{root}/target/dev/.mcpp/obj/a.o", str(root), f"{root}/",
                     f"{root}/src/../include/h.hpp", f"{root}//src/a.cpp", f"{root}/./src/a.cpp",
                     f"{root}2/x.hpp", str(tmp_path / "elsewhere" / "y.hpp"), "relative/z.cpp"):
            assert layout.exec_path(path) == os.path.relpath(path, execroot), (execroot, path)


def test_layout_converts_between_absolute_execroot_and_package_paths():
    layout = Layout.of(_graph("/w/app", ["/w/app", "/w/libs/fmt"]), "dev")
    assert layout.exec_path(layout.abs_path("app/target/dev/x.o")) == "app/target/dev/x.o"
    assert layout.abs_path(layout.exec_path("/w/libs/fmt/src/f.cc")) == "/w/libs/fmt/src/f.cc"
    assert layout.package_exec_path("/w/libs/fmt", "include/fmt.h") == "libs/fmt/include/fmt.h"
    assert layout.package_path("/w/libs/fmt", "/w/libs/fmt/src/f.cc") == "src/f.cc"
    assert layout.exec_path("/elsewhere/h.hpp") == "../elsewhere/h.hpp"  # outside the build: `..`-led


def test_stores_live_in_one_home(tmp_path):
    home = Home(tmp_path / "h")
    stores = Stores.open(home)
    d = stores.blobs.put(b"bytes")
    assert stores.blobs.get(d) == b"bytes"
    assert Path(stores.blobs.inner.path_of(d)).is_relative_to(home.cas)
    assert Path(stores.ac.root) == home.ac
    assert Path(stores.mat.publish_file(d, _file(tmp_path, b"bytes"))).is_relative_to(home.mat)
    assert stores.remote_endpoint(print) is None and stores.remote_cache(None, lambda rel: b"", print) is None


def test_a_remote_cache_shares_the_local_store(tmp_path):
    stores = Stores.open(Home(tmp_path / "h"), RemoteSettings(url="grpc://127.0.0.1:1", target="127.0.0.1:1"))
    remote = stores.remote_cache(stores.remote_endpoint(print), lambda rel: b"", print)
    assert remote is not None and remote.local is stores.blobs
    assert remote.index.path.startswith(str(tmp_path / "h"))


def _file(tmp_path, data: bytes) -> str:
    path = tmp_path / "f"
    path.write_bytes(data)
    return str(path)


def test_one_home_per_command(monkeypatch, tmp_path):
    """BuildOptions take `$MCPP_HOME` from the command's settings; the no-op fast path and the
    server's client, which cannot import the stores, agree with them (one resolver)."""
    monkeypatch.setenv("MCPP_HOME", str(tmp_path / "h"))
    assert BuildOptions().home == Home(tmp_path / "h")
    assert noop._home() == str(Settings.read(os.environ).home.root)
    assert server_paths.home_dir() == str(Settings.read(os.environ).home.root)  # names the server of this home
    monkeypatch.delenv("MCPP_HOME")
    assert noop._home() == str(Settings.read(os.environ).home.root) == os.path.expanduser("~/.mcpp")
    assert server_paths.home_dir() == str(Settings.read(os.environ).home.root)


def test_home_is_resolved_by_one_function_called_by_the_settings_and_the_early_paths():
    """The engine takes its home from the command's settings: a second resolver could point
    part of a build at another store. The paths that run before the settings are read (the
    server's client, the no-op fast path, the cold start) call the same function. `cas/` reads
    no `MCPP_*` variable at all."""
    package = Path(__file__).resolve().parents[3]
    named = sorted(str(p.relative_to(package)) for d in ("engine", "cas", "sandbox") for p in (package / d).rglob("*.py")
                   if re.search(r"[\"']MCPP_HOME[\"']", p.read_text()))
    assert named == ["engine/core/build_env.py", "engine/core/mcpp_home.py"]  # build_env: its registry entry
    callers = sorted(str(p.relative_to(package)) for p in (package / "engine").rglob("*.py")
                     if re.search(r"\bhome_root\(", p.read_text()))
    assert callers == ["engine/build/cold_start.py", "engine/core/mcpp_home.py", "engine/core/settings.py",
                       "engine/server/paths.py", "engine/state/noop.py"]


def test_a_cross_build_lays_out_under_target_triple_profile(tmp_path):
    from mcpp.engine.manifest.context import BuildContext
    from mcpp.engine.manifest.triples import host_triple, parse_triple

    ws = str(tmp_path / "ws")
    graph = _graph(ws, [ws])
    graph.context = BuildContext(parse_triple("aarch64-linux-gnu"), host_triple())
    layout = Layout.of(graph, "release")
    assert layout.out_dir == os.path.join(ws, "target", "aarch64-linux-gnu", "release")
    assert layout.state_dir.startswith(layout.out_dir + "/")
    graph.context = BuildContext(host_triple(), host_triple())
    assert Layout.of(graph, "release").out_dir == os.path.join(ws, "target", "release")
