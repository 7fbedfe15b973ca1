"""A `system` release's probe comes from an index, so nothing it names may run on the host:
its program must lie inside the adopted root (no absolute or `..` path, no shell), it runs in the
bwrap sandbox with that root and the system's read-only roots visible and nothing of $HOME, and
listing (`mcpp payload list`, `mcpp metadata`) runs no probe at all (docs/payloads.md)."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from mcpp.sandbox.bwrap import find_bwrap, probe_bwrap

needs_bwrap = pytest.mark.skipif(find_bwrap() is None or probe_bwrap() is not None, reason="bwrap does not work here")

PROJECT = {"mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n[xlings.workspace]\n"xim:tool" = "3.1.4"\n',
           "src/main.cpp": "int main() { return 0; }\n"}


def hostile(tmp_path: Path, probe: list[str], tool: str | None = None) -> tuple[Path, dict, Path]:
    """A local index adopting `tmp_path/opt-tool` with `probe`; `opt-tool/bin/tool` (written when
    `tool` is given) is a program already on the machine. Returns (the adopted root, the
    environment naming the index and a home of the test's own, the file an escaped probe writes)."""
    home = tmp_path / "home"
    home.mkdir()
    pwned = home / "pwned"
    root = tmp_path / "opt-tool"
    (root / "bin").mkdir(parents=True)
    if tool is not None:
        (root / "bin" / "tool").write_text(tool.replace("PWNED", str(pwned)))
        os.chmod(root / "bin" / "tool", 0o755)
    index = tmp_path / "index"
    (index / "pkgs" / "xim").mkdir(parents=True)
    (index / "index.toml").write_text('[index]\nname = "hostile"\nformat = 1\n')
    (index / "pkgs" / "xim" / "tool.toml").write_text(
        f'[package]\nname = "tool"\nbins = []\n[[release]]\nversion = "3.1.4"\n'
        f'linux-x86_64 = {{ system = "{root}", probe = {json.dumps(probe)}, match = "version ([0-9.]+)" }}\n')
    return root, {"MCPP_PAYLOAD_INDEX": str(index), "HOME": str(home)}, pwned


# A program on the machine that, asked for its version, also tries to write in $HOME.
WRITES_HOME = "#!/bin/sh\necho pwned > PWNED\necho 'tool version 3.1.4'\n"


@needs_bwrap
def test_listing_runs_no_probe_and_a_build_runs_it_sandboxed_where_home_is_not_visible(mcpp, project, tmp_path):
    root, env, pwned = hostile(tmp_path, ["bin/tool", "--version"], WRITES_HOME)
    app = project(PROJECT)
    listed = mcpp("payload", "list", cwd=app, env=env)
    assert not pwned.exists()  # listing ran nothing the index named
    assert listed.code == 0, listed.err
    assert "xim:tool 3.1.4 (host axis, system)" in listed.out and "not probed yet" in listed.out, listed.out
    for fmt in ("text", "json"):
        meta = mcpp("metadata", "--format", fmt, cwd=app, env=env)
        assert not pwned.exists()
        assert meta.code == 0, meta.err
    assert '"probed": false' in meta.out, meta.out
    built = mcpp("build", cwd=app, env=env)
    assert built.code == 0, built.err
    assert not pwned.exists()  # the probe ran, sandboxed: $HOME was not there to write to
    record = json.loads((app / "target" / "dev" / ".mcpp" / "payloads.json").read_text())
    assert [(p["version"], p["directory"]) for p in record["payloads"]] == [("3.1.4", str(root))]  # and it adopted
    listed = mcpp("payload", "list", cwd=app, env=env)  # the build's answer is cached: listing shows it
    assert str(root) in listed.out and "not probed" not in listed.out, listed.out
    assert not pwned.exists()


@needs_bwrap
def test_a_changed_installation_is_probed_again(mcpp, project, tmp_path):
    root, env, _ = hostile(tmp_path, ["bin/tool"], "#!/bin/sh\necho 'tool version 3.1.4'\n")
    app = project(PROJECT)
    assert mcpp("build", cwd=app, env=env).code == 0
    (root / "bin" / "tool").write_text("#!/bin/sh\necho 'tool version 3.2.0'\n")  # upgraded in place
    res = mcpp("payload", "fetch", cwd=app, env=env)
    assert res.code == 2 and "`" + str(root) + "` reports version 3.2.0" in res.err, res.err


@pytest.mark.parametrize("probe, why", [
    (["/bin/sh", "-c", "echo pwned > PWNED"], "not an absolute path"),
    (["../" * 12 + "bin/sh", "-c", "echo pwned > PWNED"], "has a `..` component"),
    (["bin/sh", "-c", "echo pwned > PWNED"], "is a shell or launcher"),
    (["bin/env", "sh", "-c", "echo pwned > PWNED"], "is a shell or launcher"),
], ids=["absolute", "dotdot", "shell", "env"])
def test_a_probe_program_outside_the_root_or_a_shell_is_refused(mcpp, project, tmp_path, probe, why):
    pwned = tmp_path / "home" / "pwned"
    probe = [w.replace("PWNED", str(pwned)) for w in probe]
    root, env, _ = hostile(tmp_path, probe)
    for name in ("sh", "env"):  # a shell inside the root: still not a probe
        shutil.copy2(shutil.which(name), root / "bin" / name)
    app = project(PROJECT)
    for args in (("payload", "list"), ("build",)):
        res = mcpp(*args, cwd=app, env=env)
        assert not pwned.exists()
        assert res.code == 2 and "Traceback" not in res.err, res.err
        assert f"payload descriptor {tmp_path}/index/pkgs/xim/tool.toml: release `3.1.4`, `linux-x86_64`: " \
               f"the probe's program `{probe[0]}` " in res.err and why in res.err, res.err


def test_the_system_root_may_not_be_slash(mcpp, project, tmp_path):
    _, env, _ = hostile(tmp_path, ["bin/tool"])
    descriptor = Path(env["MCPP_PAYLOAD_INDEX"]) / "pkgs" / "xim" / "tool.toml"
    descriptor.write_text(descriptor.read_text().replace(str(tmp_path / "opt-tool"), "/"))
    res = mcpp("build", cwd=project(PROJECT), env=env)
    assert res.code == 2 and "`system` must be the installation's own directory, not `/`" in res.err, res.err


@needs_bwrap
def test_a_root_holding_the_home_directory_is_refused(mcpp, project, tmp_path):
    root, env, pwned = hostile(tmp_path, ["bin/tool"], WRITES_HOME)
    env["HOME"] = str(root / "home")  # the adopted root would show the home directory to the probe
    (root / "home").mkdir()
    res = mcpp("build", cwd=project(PROJECT), env=env)
    assert res.code == 2 and f"holds the home directory ({root}/home)" in res.err, res.err


@needs_bwrap
def test_the_shipped_index_still_adopts_the_cuda_toolkit_with_its_root_relative_probe(mcpp, project):
    if not os.access("/usr/local/cuda/bin/nvcc", os.X_OK):
        pytest.skip("no CUDA toolkit at /usr/local/cuda")
    app = project({"mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n[xlings.workspace]\n"xim:cuda-nvcc" = ""\n',
                   "src/main.cpp": "int main() { return 0; }\n"})
    fetched = mcpp("payload", "fetch", cwd=app)
    assert fetched.code == 0, fetched.err
    listed = mcpp("payload", "list", cwd=app)
    assert "(host axis, system)" in listed.out and "/usr/local/cuda\n" in listed.out, listed.out
