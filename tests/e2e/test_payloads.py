"""The project environment end to end: payloads resolved from a real index served over HTTP on
127.0.0.1 (the server counts requests), installed into `$MCPP_HOME/payloads`, used by a build
program through `mcpp.xpkg_dir`, and refused in the ways docs/payloads.md states. The first four
tests are the manifest-semantics criteria 4-7, each with the half that a too-eager or too-lax
implementation would fail."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from tests.e2e.e2e_support import mcpp_executable
from tests.e2e.payload_index_support import TRUSTED, IndexServer, gen_archive, make_index, tar_gz

STAR = '''
gen = mcpp.xpkg_dir("xim:gen")
print("xpkg_dir=" + gen)
if gen:
    out = mcpp.out_dir() + "/gen.cpp"
    mcpp.action(id = "gen", argv = [gen + "/bin/gen", out], inputs = [], outputs = [out],
                tools = [gen + "/bin/gen"], role = "source")
'''
MAIN = '#include <cstdio>\nint gen_value();\nint main() { std::printf("gen %d\\n", gen_value()); }\n'


def app(project, payloads: str, deps: dict[str, str] | None = None):
    """`app` declaring `payloads` (manifest text) and depending on each of `deps` (name -> its
    payload text)."""
    files = {
        "app/mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n'
                         + ("[dependencies]\n" + "".join(f'{d} = {{ path = "../{d}" }}\n' for d in deps)
                            if deps else "") + payloads,
        "app/build.star": STAR,
        "app/src/main.cpp": MAIN,
    }
    for d, text in (deps or {}).items():
        files[f"{d}/mcpp.toml"] = f'[package]\nname = "{d}"\nversion = "0.1.0"\n' + text
        files[f"{d}/src/{d}.cpp"] = f"int {d}_value() {{ return 1; }}\n"
        files[f"{d}/build.star"] = 'print("dep xpkg_dir=" + mcpp.xpkg_dir("xim:gen"))\n'
    return project(files) / "app"


@pytest.fixture
def server(tmp_path):
    with IndexServer(make_index(tmp_path / "index")) as s:
        yield s


def run(mcpp, server, *args, cwd):
    return mcpp(*args, cwd=cwd, env={"MCPP_PAYLOAD_INDEX": server.url, **TRUSTED})


def versions_installed(mcpp) -> list[str]:
    d = mcpp.home / "payloads" / "xim" / "gen"
    return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def record(root) -> dict:
    return json.loads((root / "target" / "dev" / ".mcpp" / "payloads.json").read_text())


def test_criterion_4_both_axes_name_one_package_it_appears_once_from_the_target_side(project, mcpp, server):
    root = app(project, '[xlings.workspace]\n"xim:gen" = "1.0.0"\n'
                        '[target.\'cfg(os = "linux")\'.xlings.workspace]\n"xim:gen@2.0.0" = ""\n')
    res = run(mcpp, server, "build", cwd=root)
    assert res.code == 0, res.err
    assert "declared on both axes; the target-axis entry" in res.err, res.err
    payloads = record(root)["payloads"]
    assert [(p["id"], p["version"], p["axis"]) for p in payloads] == [("xim:gen", "2.0.0", "target")]
    assert versions_installed(mcpp) == ["2.0.0"]
    listed = run(mcpp, server, "payload", "list", cwd=root)
    assert listed.out.count("xim:gen ") == 1 and "xim:gen 2.0.0 (target axis, archive)" in listed.out, listed.out


def test_criterion_5_a_layer_predicate_is_refused_before_any_fetch_and_accelerator_installs(project, mcpp, server):
    root = app(project, '[target.\'cfg(c-abi = "gnu")\'.xlings.workspace]\n"xim:gen" = "2.0.0"\n')
    res = run(mcpp, server, "build", cwd=root)
    assert res.code == 2 and "Traceback" not in res.err, res.err
    assert "`c-abi`" in res.err and "`xim:gen`" in res.err, res.err
    assert "condition it on the target" in res.err and "[feature-xlings.<f>]" in res.err, res.err
    assert server.requests == []  # refused before the first payload was fetched
    assert versions_installed(mcpp) == []
    (root / "mcpp.toml").write_text((root / "mcpp.toml").read_text().replace('c-abi = "gnu"', 'accelerator = "cuda"'))
    res = run(mcpp, server, "build", "--accel", "cuda13.0+{sm_90}", cwd=root)
    assert res.code == 0, res.err
    assert versions_installed(mcpp) == ["2.0.0"]
    assert server.requests  # and it really came from the index


def test_criterion_6_one_version_is_installed_and_xpkg_dir_answers_it(project, mcpp, server):
    root = app(project, '[xlings.workspace]\n"xim:gen" = "2.0.0"\n', {"dep": '[xlings.workspace]\n"xim:gen" = ">=1.0"\n'})
    res = run(mcpp, server, "run", cwd=root)
    assert res.code == 0, res.err
    assert versions_installed(mcpp) == ["2.0.0"]  # what is installed: one version directory
    expected = str(mcpp.home / "payloads" / "xim" / "gen" / "2.0.0")
    assert f"xpkg_dir={expected}" in res.err and f"dep xpkg_dir={expected}" in res.err, res.err  # what is answered
    assert "gen 200" in res.out  # and the tool the build ran is that version


def test_criterion_7_a_pin_below_a_stated_floor_is_refused_and_raising_it_builds(project, mcpp, server):
    root = app(project, '[xlings.workspace]\n"xim:gen" = "1.0.0"\n', {"dep": '[xlings.workspace]\n"xim:gen" = ">=2.0"\n'})
    res = run(mcpp, server, "build", cwd=root)
    assert res.code == 2 and "Traceback" not in res.err, res.err
    assert res.err.startswith("mcpp.toml:7:1: error: `xim:gen` is pinned to 1.0.0, which does not satisfy"), res.err
    assert "in package `dep` (" in res.err and "dep/mcpp.toml:5:1" in res.err and "requires `>=2.0`" in res.err
    assert "help: pin a version that satisfies `>=2.0`" in res.err, res.err
    assert versions_installed(mcpp) == []
    (root / "mcpp.toml").write_text((root / "mcpp.toml").read_text().replace('"1.0.0"', '"2.0.0"'))
    res = run(mcpp, server, "build", cwd=root)
    assert res.code == 0, res.err
    assert versions_installed(mcpp) == ["2.0.0"]


def test_a_range_installs_the_highest_release_satisfying_it(project, mcpp, server):
    root = app(project, '[xlings.workspace]\n"xim:gen" = ">=1.0"\n')
    res = run(mcpp, server, "run", cwd=root)
    assert res.code == 0, res.err
    assert versions_installed(mcpp) == ["2.0.0"] and "gen 200" in res.out


def test_a_range_no_release_satisfies_is_refused_naming_the_highest(project, mcpp, server):
    root = app(project, '[xlings.workspace]\n"xim:gen" = ">=2099.1"\n')
    res = run(mcpp, server, "build", cwd=root)
    assert res.code == 2 and "Traceback" not in res.err, res.err
    assert "no release of `xim:gen` satisfies" in res.err and "the highest available for" in res.err
    assert "is 2.0.0" in res.err, res.err


def test_arbitration_between_the_project_and_two_dependencies(project, mcpp, server):
    root = app(project, '[xlings.workspace]\n"xim:gen" = "2.0.0"\n',
               {"da": '[xlings.workspace]\n"xim:gen" = "1.0.0"\n', "db": '[xlings.workspace]\n"xim:gen" = ">=1.5"\n'})
    res = run(mcpp, server, "build", cwd=root)
    assert res.code == 0, res.err
    assert "pin different versions; the nearer one, 2.0.0, is used" in res.err, res.err
    assert versions_installed(mcpp) == ["2.0.0"]
    (p,) = record(root)["payloads"]
    assert p["declared_by"] == "app" and "nearest to the artifact" in p["why"]


def test_a_build_that_needs_no_payload_never_contacts_an_index(project, mcpp, server):
    root = app(project, "")
    (root / "build.star").write_text("")
    (root / "src" / "main.cpp").write_text("int main() { return 0; }\n")
    res = run(mcpp, server, "build", cwd=root)
    assert res.code == 0, res.err
    assert server.requests == []


def test_an_unreachable_index_is_one_error_naming_the_url(project, mcpp, tmp_path):
    root = app(project, '[xlings.workspace]\n"xim:gen" = "2.0.0"\n')
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{s.getsockname()[1]}"
    s.close()
    res = mcpp("build", cwd=root, env={"MCPP_PAYLOAD_INDEX": url, **TRUSTED})
    assert res.code == 2 and "Traceback" not in res.err, res.err
    assert f"payload index unreachable: {url}/index.toml" in res.err, res.err


def _refused(project, mcpp, tmp_path, archive: bytes | None = None, digest: str | None = None):
    index = make_index(tmp_path / "bad", archives={"2.0.0": archive} if archive else None,
                       digests={"2.0.0": digest} if digest else None)
    root = app(project, '[xlings.workspace]\n"xim:gen" = "2.0.0"\n')
    with IndexServer(index) as s:
        res = run(mcpp, s, "build", cwd=root)
    assert res.code == 2 and "Traceback" not in res.err, res.err
    assert versions_installed(mcpp) == []
    return res, s.url


def test_a_digest_mismatch_names_the_url_and_both_digests_and_installs_nothing(project, mcpp, tmp_path):
    actual = __import__("blake3").blake3(gen_archive("2.0.0")).hexdigest()
    res, url = _refused(project, mcpp, tmp_path, digest="0" * 64)
    assert f"payload archive {url}/archives/gen-2.0.0.tar.gz: blake3 mismatch: expected {'0' * 64}, got {actual}" \
           in res.err, res.err


def test_an_archive_with_a_dotdot_member_is_refused(project, mcpp, tmp_path):
    bad = tar_gz([("gen-2.0.0/bin/gen", b"#!/bin/sh\n", ""), ("gen-2.0.0/../../evil", b"x", "")])
    res, _ = _refused(project, mcpp, tmp_path, archive=bad)
    assert "member `gen-2.0.0/../../evil` has a `..` component" in res.err, res.err
    assert not (tmp_path / "evil").exists()


def test_an_archive_with_a_symlink_out_of_the_payload_is_refused(project, mcpp, tmp_path):
    bad = tar_gz([("gen-2.0.0/bin/gen", b"#!/bin/sh\n", ""), ("gen-2.0.0/lib", None, "../../../etc")])
    res, _ = _refused(project, mcpp, tmp_path, archive=bad)
    assert "member `gen-2.0.0/lib` is a link to `../../../etc`, outside the payload" in res.err, res.err


def test_a_killed_install_leaves_nothing_and_the_next_build_completes_it(project, mcpp, server):
    root = app(project, '[xlings.workspace]\n"xim:gen" = "2.0.0"\n')
    server.stall.set()
    env = {**os.environ, "MCPP_HOME": str(mcpp.home), "MCPP_PAYLOAD_INDEX": server.url, **TRUSTED}
    proc = subprocess.Popen([mcpp_executable(), "build"], cwd=root, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        assert server.stalled.wait(60), "the build never asked for the archive"
        time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert versions_installed(mcpp) == []  # nothing half-made in place
    server.stall.clear()
    server.release.set()
    res = run(mcpp, server, "run", cwd=root)
    assert res.code == 0, res.err
    assert versions_installed(mcpp) == ["2.0.0"] and "gen 200" in res.out


def test_payload_fetch_installs_without_building_and_gc_keeps_the_store(project, mcpp, server):
    root = app(project, '[xlings.workspace]\n"xim:gen" = "1.0.0"\n')
    res = run(mcpp, server, "payload", "fetch", cwd=root)
    assert res.code == 0, res.err
    assert versions_installed(mcpp) == ["1.0.0"]
    assert not (root / "target" / "dev").exists()
    listed = run(mcpp, server, "payload", "list", cwd=root)
    assert str(mcpp.home / "payloads" / "xim" / "gen" / "1.0.0") in listed.out, listed.out


def test_metadata_shows_the_environment_and_gc_evicts_unused_payloads(project, mcpp, server):
    root = app(project, '[xlings.workspace]\n"xim:gen" = "1.0.0"\n')
    assert run(mcpp, server, "payload", "fetch", cwd=root).code == 0
    meta = run(mcpp, server, "metadata", cwd=root)
    assert meta.code == 0, meta.err
    assert 'xim:gen = "1.0.0"  # host axis, archive, declared by app' in meta.out, meta.out
    data = json.loads(run(mcpp, server, "metadata", "--format", "json", cwd=root).out)
    assert [p["version"] for p in data["environment"]["payloads"]] == ["1.0.0"]
    kept = run(mcpp, server, "cache", "gc", "--older-than", "1d", cwd=root)
    assert kept.code == 0 and versions_installed(mcpp) == ["1.0.0"], kept.out
    lock = mcpp.home / "payloads" / ".locks" / "xim+gen+1.0.0.lock"
    os.utime(lock, (0, 0))
    os.utime(mcpp.home / "payloads" / "xim" / "gen" / "1.0.0", (0, 0))
    gone = run(mcpp, server, "cache", "gc", "--older-than", "1d", cwd=root)
    assert "removed 1 payload(s)" in gone.out and "xim:gen 1.0.0" in gone.out, gone.out
    assert versions_installed(mcpp) == []


def test_two_builds_needing_one_payload_install_it_once(project, mcpp, server):
    root = app(project, '[xlings.workspace]\n"xim:gen" = "2.0.0"\n')
    server.stall.set()  # the first download hangs half-way while the second build starts
    env = {**os.environ, "MCPP_HOME": str(mcpp.home), "MCPP_PAYLOAD_INDEX": server.url, **TRUSTED}
    first = subprocess.Popen([mcpp_executable(), "payload", "fetch"], cwd=root, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert server.stalled.wait(60)
    second = subprocess.Popen([mcpp_executable(), "payload", "fetch"], cwd=root, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)  # long enough for the second to reach the install (it waits on the lock)
    server.stall.clear()
    server.release.set()
    for proc in (first, second):
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    assert versions_installed(mcpp) == ["2.0.0"]
    assert [r for r in server.requests if r.startswith("/archives/")] == ["/archives/gen-2.0.0.tar.gz"]


def test_the_digest_of_a_payload_tool_is_in_the_key_of_the_action_running_it(project, mcpp, server):
    root = app(project, '[xlings.workspace]\n"xim:gen" = "2.0.0"\n')
    first = run(mcpp, server, "build", "--message-format", "json", cwd=root)
    assert first.code == 0 and "rule app:gen" in first.executed(), first.err
    again = run(mcpp, server, "build", "--message-format", "json", cwd=root)
    assert "rule app:gen" not in again.executed()
    # An installation changed in place (an adopted toolkit upgraded under the same path):
    tool = mcpp.home / "payloads" / "xim" / "gen" / "2.0.0" / "bin" / "gen"
    tool.write_text(tool.read_text().replace("200", "201"))
    changed = run(mcpp, server, "build", "--message-format", "json", cwd=root)
    assert changed.code == 0 and "rule app:gen" in changed.executed(), changed.out


def test_an_action_cannot_rewrite_an_installed_payload(project, mcpp, server):
    """The attack: an action overwrites the payload tool every later build (and every other
    project on the machine) runs. Under bwrap the payload is mounted read-only, so the write
    fails, the build fails, and the installed tool is unchanged."""
    root = app(project, '[xlings.workspace]\n"xim:gen" = "2.0.0"\n')
    (root / "build.star").write_text(STAR + '''
    tool = gen + "/bin/gen"
    mcpp.action(id = "tamper", argv = ["/bin/sh", "-c", "echo 'exit 0' > " + tool + " && touch " + mcpp.out_dir() + "/t"],
                inputs = [], outputs = [mcpp.out_dir() + "/t"], tools = ["/bin/sh", tool], role = "check")
''')
    res = run(mcpp, server, "build", "--sandbox", "bwrap", cwd=root)
    assert res.code == 1 and "Read-only file system" in res.err, res.err
    tool = mcpp.home / "payloads" / "xim" / "gen" / "2.0.0" / "bin" / "gen"
    assert "gen_value" in tool.read_text()
