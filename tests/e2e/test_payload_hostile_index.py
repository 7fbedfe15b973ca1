"""An index, or whoever answers for it, is an attacker: what it can name (a release's version, a
probe that never stops printing, a descriptor without end) never reaches outside the payload
store, never exhausts the machine, and is refused with exit 2 naming what was refused."""
from __future__ import annotations

import http.server
import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

from mcpp.sandbox.bwrap import find_bwrap, probe_bwrap
from tests.e2e.e2e_support import mcpp_executable, started
from tests.e2e.payload_index_support import TRUSTED

needs_bwrap = pytest.mark.skipif(find_bwrap() is None or probe_bwrap() is not None, reason="bwrap does not work here")

STAR = 'print("xpkg_dir=" + mcpp.xpkg_dir("xim:tool"))\n'
MEMORY_CAP = 1 << 30  # the address space a command under attack is given (far above what mcpp needs)


def app(project, requirement: str = ""):
    return project({"app/mcpp.toml": f'[package]\nname = "app"\nversion = "0.1.0"\n[xlings.workspace]\n'
                                     f'"xim:tool" = "{requirement}"\n',
                    "app/build.star": STAR, "app/src/main.cpp": "int main() {}\n"}) / "app"


def index_of(root: Path, releases: str) -> Path:
    """A local index describing `xim:tool` with the `[[release]]` tables `releases`."""
    (root / "pkgs" / "xim").mkdir(parents=True, exist_ok=True)
    (root / "index.toml").write_text('[index]\nname = "hostile"\nformat = 1\n')
    (root / "pkgs" / "xim" / "tool.toml").write_text(f'[package]\nname = "tool"\nbins = []\n{releases}')
    return root


def capped(mcpp, args: list[str], cwd: Path, env: dict, timeout: float = 120) -> tuple[int, str]:
    """Run mcpp with its address space capped at MEMORY_CAP: (exit code, stderr). An mcpp that
    holds what an attacker sends in memory fails here with MemoryError instead of taking the
    machine's memory."""
    full = {**os.environ, "MCPP_HOME": str(mcpp.home), **env}
    p = subprocess.run(started([mcpp_executable(), *args], address_space=MEMORY_CAP), cwd=cwd, env=full,
                       capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stderr


@pytest.mark.parametrize("version", ["{secret}", "0/../../../../../../../../../..{secret}"])
def test_a_release_version_cannot_name_a_directory_outside_the_store(project, mcpp, tmp_path, version):
    """A release's version is the name of its directory in the store: one that is a path would
    make a host directory (here one holding a key) the payload, answered by `xpkg_dir` and shown
    to every action's sandbox, or make the install write outside the store."""
    secret = tmp_path / "dot-ssh"
    secret.mkdir()
    (secret / "id_ed25519").write_text("PRIVATE KEY")
    index = index_of(tmp_path / "index", f'[[release]]\nversion = "{version.format(secret=secret)}"\n'
                                         f'linux-x86_64 = {{ dir = "trees/tool" }}\n')
    (index / "trees" / "tool" / "bin").mkdir(parents=True)
    res = mcpp("build", cwd=app(project), env={"MCPP_PAYLOAD_INDEX": str(index)})
    assert res.code == 2 and "Traceback" not in res.err, res.err
    assert "xpkg_dir=" not in res.out + res.err, res.err
    assert f"error: payload descriptor {index}/pkgs/xim/tool.toml: [[release]] #1: version " \
           f"`{version.format(secret=secret)}` is not a version" in res.err, res.err
    assert sorted(p.name for p in secret.iterdir()) == ["id_ed25519"]


@needs_bwrap
def test_a_probe_that_prints_without_end_is_stopped_at_the_output_limit(project, mcpp, tmp_path):
    """`system = "/usr"` with `bin/yes` as its probe: a program already on every machine, run in
    the sandbox, that prints without end for the whole time a probe may take. mcpp reads the
    first 64 KiB and stops it, in bounded memory, and the release is not on this machine."""
    index = index_of(tmp_path / "index", '[[release]]\nversion = "1.0"\n'
                                         'linux-x86_64 = { system = "/usr", probe = ["bin/yes"], match = "(y+)" }\n')
    code, err = capped(mcpp, ["build"], app(project), {"MCPP_PAYLOAD_INDEX": str(index)})
    assert code == 2 and "Traceback" not in err and "MemoryError" not in err, err
    assert "error: no release of `xim:tool` satisfies the declarations; the highest available for " in err, err
    assert "not on this machine: 1.0: `/usr` reports version y" in err, err


class EndlessServer:
    """An http server on 127.0.0.1 (or whoever is on the path to one) that answers `index.toml`
    and then, for the descriptor, sends bytes for as long as the client reads."""

    def __init__(self):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path == "/index.toml":
                    body = b'[index]\nname = "endless"\nformat = 1\n'
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.send_response(200)
                self.end_headers()
                line = b"# " + b"x" * 1021 + b"\n"
                try:
                    for _ in range(1 << 22):  # 4 GiB, far past any bound (the test ends it sooner)
                        self.wfile.write(line * 64)
                except OSError:
                    pass

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_descriptor_without_end_is_refused_in_bounded_memory(project, mcpp):
    """A signed plain-http index (so the descriptor is read, then checked): whoever answers for it
    sends a descriptor without end. It is refused once past the bound for an index file, before
    it could fill memory; its signature is never looked at."""
    with EndlessServer() as server:
        code, err = capped(mcpp, ["build"], app(project), {"MCPP_PAYLOAD_INDEX": server.url, **TRUSTED})
    assert code == 2 and "Traceback" not in err and "MemoryError" not in err, err
    assert f"error: payload index: {server.url}/pkgs/xim/tool.toml: larger than 16777216 bytes, which no index file " \
           f"or descriptor is; nothing of it was used" in err, err


def test_an_index_file_that_is_a_fifo_is_refused_not_waited_on(project, mcpp, tmp_path):
    """A local index (a checkout, say) whose descriptor is a fifo, or a link to a terminal: it is
    refused at once instead of blocking the build forever."""
    index = index_of(tmp_path / "index", "")
    desc = index / "pkgs" / "xim" / "tool.toml"
    desc.unlink()
    os.mkfifo(desc)
    res = mcpp("build", cwd=app(project), env={"MCPP_PAYLOAD_INDEX": str(index)}, timeout=60)
    assert res.code == 2 and "Traceback" not in res.err, res.err
    assert f"error: payload index: {desc}: not a regular file" in res.err, res.err


def test_a_dir_release_is_copied_under_the_same_limits_as_an_archive(project, mcpp, tmp_path):
    """A `dir` release (a checkout of an index, say) holding a 1 TiB sparse file, which costs its
    publisher nothing: the copy stops at the unpacked limit instead of filling the disk."""
    index = index_of(tmp_path / "index", '[[release]]\nversion = "1.0"\nlinux-x86_64 = { dir = "trees/tool" }\n')
    (index / "trees" / "tool").mkdir(parents=True)
    with open(index / "trees" / "tool" / "huge", "wb") as f:
        f.truncate(1 << 40)
    res = mcpp("build", cwd=app(project), env={"MCPP_PAYLOAD_INDEX": str(index), "MCPP_PAYLOAD_MAX_UNPACKED": "8Mi"},
               timeout=120)
    assert res.code == 2 and "Traceback" not in res.err, res.err
    assert f"error: payload `xim:tool`: {index}/trees/tool/huge takes the unpacked payload past 8.0 MiB (8388608 " \
           f"bytes), the limit set by MCPP_PAYLOAD_MAX_UNPACKED; nothing was installed" in res.err, res.err
    assert not (mcpp.home / "payloads" / "xim" / "tool").exists()
