"""Installing a payload through the real CLI never writes outside the store, never holds an
archive or member in memory whole, and copies nothing from outside a local index: hostile
archives and `dir` releases are refused with exit 2, naming what was refused, leaving nothing."""
from __future__ import annotations

import os
import stat
import subprocess
import threading

from tests.e2e.e2e_support import mcpp_executable
from tests.e2e.payload_index_support import climbing_links, make_index, tar_gz, zeros_tar_zst

APP = '[package]\nname = "app"\nversion = "0.1.0"\n[xlings.workspace]\n"xim:gen" = "2.0.0"\n'
STAR = 'print("xpkg_dir=" + mcpp.xpkg_dir("xim:gen"))\n'


def app(project):
    return project({"app/mcpp.toml": APP, "app/build.star": STAR, "app/src/main.cpp": "int main() {}\n"}) / "app"


def nothing_installed(mcpp) -> None:
    payloads = mcpp.home / "payloads"
    assert not (payloads / "xim" / "gen").exists()
    assert not (payloads / ".tmp").exists() or list((payloads / ".tmp").iterdir()) == []


def test_a_chain_of_links_in_an_archive_cannot_overwrite_a_file_outside_the_store(project, mcpp, tmp_path):
    """Each link's text normalizes to a path inside the payload, yet the chain leads three
    directories above the unpack directory (`payloads/.tmp/<install>/`: `$MCPP_HOME`), and a later
    regular member of the chain's name would be written through it and made executable."""
    victims = [mcpp.home / "victim", mcpp.home / "payloads" / "victim"]
    for v in victims:
        v.parent.mkdir(parents=True, exist_ok=True)
        v.write_text("original")
        v.chmod(0o600)
    links, top = climbing_links("gen-2.0.0/", 3)
    bad = tar_gz(links + [("gen-2.0.0/x", None, f"{top}/victim"), ("gen-2.0.0/x", b"overwritten", "")])
    index = make_index(tmp_path / "index", versions=("2.0.0",), archives={"2.0.0": bad})
    res = mcpp("build", cwd=app(project), env={"MCPP_PAYLOAD_INDEX": str(index)})
    assert res.code == 2 and "Traceback" not in res.err, res.err
    assert f"error: payload archive {index}/archives/gen-2.0.0.tar.gz: member `gen-2.0.0/x` is listed twice " \
           f"(first as a symlink); nothing was installed" in res.err, res.err
    for v in victims:
        assert v.read_text() == "original" and stat.S_IMODE(v.stat().st_mode) == 0o600
    nothing_installed(mcpp)


def test_a_decompression_bomb_is_refused_at_its_limit_in_bounded_memory(project, mcpp, tmp_path):
    """A small `.tar.zst` whose member is 256 MiB of zeros, under a descriptor that says the
    payload unpacks to at most 1 MiB: the install stops there, without reading the archive or
    the member into memory (the build's peak memory stays far below the member's size)."""
    index = tmp_path / "index"
    (index / "archives").mkdir(parents=True)
    zeros_tar_zst(index / "archives" / "gen-2.0.0.tar.zst", "gen-2.0.0/zeros", 256 << 20)
    make_index(index, versions=("2.0.0",), suffix=".tar.zst", extra="unpacked-size = 1048576, ")
    assert (index / "archives" / "gen-2.0.0.tar.zst").stat().st_size < 256 << 10
    env = {**os.environ, "MCPP_HOME": str(mcpp.home), "MCPP_PAYLOAD_INDEX": str(index), "MCPP_NO_SERVER": "1"}
    err_file = tmp_path / "stderr"
    with open(err_file, "wb") as err_out:
        proc = subprocess.Popen([mcpp_executable(), "build"], cwd=app(project), env=env, stdout=subprocess.DEVNULL,
                                stderr=err_out)
    timer = threading.Timer(300, proc.kill)
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)  # the rusage of this process alone
    finally:
        timer.cancel()
    err = err_file.read_text()
    assert os.waitstatus_to_exitcode(status) == 2 and "Traceback" not in err and "MemoryError" not in err, err
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert usage.ru_maxrss < 128 << 10, f"peak memory {usage.ru_maxrss} KiB"  # ru_maxrss is in KiB
    assert f"error: payload archive {index}/archives/gen-2.0.0.tar.zst: member `gen-2.0.0/zeros` takes the unpacked " \
           f"payload past 1.0 MiB (1048576 bytes), the descriptor's `unpacked-size`; nothing was installed" in err, err
    nothing_installed(mcpp)


def test_a_dir_release_that_is_a_link_to_a_host_directory_is_refused(project, mcpp, tmp_path):
    host = tmp_path / "host-secrets"
    (host / "bin").mkdir(parents=True)
    (host / "bin" / "gen").write_text("a host file\n")
    index = tmp_path / "index"
    (index / "pkgs" / "xim").mkdir(parents=True)
    (index / "index.toml").write_text('[index]\nname = "local"\nformat = 1\n')
    (index / "pkgs" / "xim" / "gen.toml").write_text(
        '[package]\nname = "gen"\nbins = ["bin/gen"]\n[[release]]\nversion = "2.0.0"\n'
        'linux-x86_64 = { dir = "trees/gen" }\n')
    (index / "trees").mkdir()
    os.symlink(host, index / "trees" / "gen")
    res = mcpp("build", cwd=app(project), env={"MCPP_PAYLOAD_INDEX": str(index)})
    assert res.code == 2 and "Traceback" not in res.err, res.err
    assert f"error: payload `xim:gen`: directory {index}/trees/gen of the index leads outside the index ({index}): " \
           f"`{index}/trees/gen` is a symlink to `{host}`; nothing was installed" in res.err, res.err
    nothing_installed(mcpp)
