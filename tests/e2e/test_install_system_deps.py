"""scripts/install-system-deps.sh shows what it installs and waits, bounded, for the dpkg lock.

The real apt cannot run in a test (root, network), so `dpkg`, `apt-get` and `id` are stand-ins on
PATH that behave as Debian's do when another apt holds the lock: exit 100 with apt's message.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from e2e_support import REPO

pytestmark = pytest.mark.one_mode  # runs the system-deps script, no build: the server-on run leaves it out

SCRIPT = REPO / "scripts" / "install-system-deps.sh"
LOCKED = ("E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (unattended-upgr)\n"
          "E: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?")


def _stubs(bin_dir: Path, locked_times: int) -> None:
    bin_dir.mkdir()
    (bin_dir / "dpkg").write_text("#!/bin/sh\nexit 1\n")  # nothing installed
    (bin_dir / "id").write_text("#!/bin/sh\necho 0\n")  # root: no sudo
    (bin_dir / "apt-get").write_text(f"""#!/bin/bash
n=$(cat "{bin_dir}/count" 2>/dev/null || echo 0); echo $((n + 1)) > "{bin_dir}/count"
if (( n < {locked_times} )); then printf '%s\\n' "{LOCKED}" >&2; exit 100; fi
echo "Setting up clang-19 (1:19.1.7) ..."
""")
    for f in bin_dir.iterdir():
        f.chmod(0o755)


def _run(bin_dir: Path, wait: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "MCPP_APT_LOCK_WAIT": wait,
           "MCPP_APT_LOCK_POLL": "0.1"}
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60)


def test_waits_for_the_lock_and_shows_what_it_installs(tmp_path):
    _stubs(tmp_path / "bin", locked_times=2)
    res = _run(tmp_path / "bin", "30")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "installing clang-19 libc++-19-dev libc++abi-19-dev clang-tools-19 ninja-build" in res.stdout
    assert "waiting for the dpkg/apt lock" in res.stdout
    assert "Setting up clang-19" in res.stdout  # apt's own output is not hidden


def test_gives_up_on_a_lock_held_too_long_with_a_clear_message(tmp_path):
    _stubs(tmp_path / "bin", locked_times=10**6)
    res = _run(tmp_path / "bin", "1")
    assert res.returncode == 1
    assert "the dpkg/apt lock is still taken after 1s" in res.stderr
    assert "held by process 4242 (unattended-upgr)" in res.stderr
