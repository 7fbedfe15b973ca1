"""The content-addressed store and action cache, end to end."""
from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

from e2e_support import copy_example, mcpp_executable


def many_sources(project, n=6, name="many"):
    files = {"mcpp.toml": f'[package]\nname = "{name}"\nversion = "0.1.0"\n',
             "src/main.cpp": "#include <cstdio>\n" + "".join(f"int f{i}();\n" for i in range(n))
             + "int main() { int s = 0;\n" + "".join(f"s += f{i}();\n" for i in range(n))
             + 'std::printf("sum=%d\\n", s); }\n'}
    for i in range(n):
        files[f"src/f{i}.cpp"] = f"#include <string>\n#include <vector>\nint f{i}() {{ return {i}; }}\n"
    return project(files, name=name)


def test_rebuild_after_rm_target_runs_no_compiler_and_is_byte_identical(tmp_path, mcpp):
    root = copy_example("04-workspace", tmp_path)
    first = mcpp.build_json(cwd=root)
    assert len(first.executed()) > 0
    binary = root / "target" / "dev" / "geometry"
    before = binary.read_bytes()
    shutil.rmtree(root / "target")
    second = mcpp.build_json(cwd=root)
    assert second.executed() == []  # no compiler, archiver or linker process ran
    cached = [e for e in second.events if e.get("status") == "cached"]
    assert len(cached) == len(first.executed())
    assert binary.read_bytes() == before
    assert subprocess.run([binary], capture_output=True, text=True).stdout == "area = 9.0\nperimeter = 12.0 m\n"
    human = mcpp("build", cwd=root)
    assert "Finished dev" in human.err


def test_a_copy_in_another_directory_hits_the_cache(tmp_path, mcpp):
    a = copy_example("02-with-deps", tmp_path / "a")
    mcpp.build_json(cwd=a / "app")
    b = tmp_path / "elsewhere" / "b"
    shutil.copytree(a, b, ignore=shutil.ignore_patterns("target", "compile_commands.json"))
    res = mcpp.build_json(cwd=b / "app")
    assert res.executed() == []
    assert all(e["status"] == "cached" for e in res.events if e["reason"] == "action-finished")
    out = subprocess.run([b / "app" / "target" / "dev" / "app"], capture_output=True, text=True).stdout
    assert "answer = 42" in out


def test_warnings_are_replayed_on_a_cache_hit(project, mcpp):
    root = project({"mcpp.toml": '[package]\nname = "w"\nversion = "0.1.0"\n[build]\ncxxflags = ["-Wall"]\n',
                    "src/main.cpp": "int main() { int unused = 1; return 0; }\n"})
    first = mcpp("build", cwd=root)
    assert "unused variable" in first.err
    shutil.rmtree(root / "target")
    second = mcpp("build", "--message-format", "json", cwd=root)
    assert "unused variable" in second.err
    assert [e for e in second.events if e["reason"] == "compiler-message"][0]["replayed"] is True


def test_two_builds_of_different_projects_on_one_home_both_succeed(project, mcpp):
    one = many_sources(project, name="one")
    two = many_sources(project, name="two")
    env = {**os.environ, "MCPP_HOME": str(mcpp.home)}
    procs = [subprocess.Popen([mcpp_executable(), "build", "-j", "2"], cwd=r, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in (one, two)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    for r in (one, two):
        assert subprocess.run([r / "target" / "dev" / r.name], capture_output=True, text=True).stdout == "sum=15\n"


def test_second_build_on_the_same_project_blocks_then_proceeds(tmp_path, mcpp):
    root = copy_example("01-hello", tmp_path)
    (root / "target").mkdir()
    lock_fd = os.open(root / "target" / ".lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(lock_fd, fcntl.LOCK_EX)  # stand in for a first build holding the lock
    env = {**os.environ, "MCPP_HOME": str(mcpp.home)}
    proc = subprocess.Popen([mcpp_executable(), "build"], cwd=root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    first_line = proc.stderr.readline()
    assert first_line == "    Blocking waiting for file lock on build directory\n"
    assert proc.poll() is None  # still waiting
    fcntl.flock(lock_fd, fcntl.LOCK_UN)
    os.close(lock_fd)
    _, rest = proc.communicate(timeout=120)
    assert proc.returncode == 0
    assert "Finished dev" in rest


def test_a_build_killed_midway_leaves_no_corrupted_state(project, mcpp):
    root = many_sources(project, n=10)
    env = {**os.environ, "MCPP_HOME": str(mcpp.home)}
    proc = subprocess.Popen([mcpp_executable(), "build", "-j", "2", "--message-format", "json"], cwd=root,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    # Kill it after the first few actions finished, while others are running.
    seen = 0
    for line in proc.stdout:
        if '"action-finished"' in line:
            seen += 1
            if seen == 3:
                break
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    res = mcpp("build", cwd=root)
    assert res.code == 0, res.err
    assert subprocess.run([root / "target" / "dev" / "many"], capture_output=True, text=True).stdout == "sum=45\n"
    assert mcpp("cache", "verify", cwd=root).code == 0
    assert mcpp.build_json(cwd=root).executed() == []


def test_a_corrupted_blob_is_detected_on_use_the_action_reruns_and_the_build_says_so(tmp_path, mcpp):
    root = copy_example("01-hello", tmp_path)
    mcpp("build", cwd=root, check=True)
    binary = root / "target" / "dev" / "hello"
    good = binary.read_bytes()
    blobs = sorted((mcpp.home / "cas").glob("[0-9a-f][0-9a-f]/*"), key=lambda p: p.stat().st_size)
    victim = blobs[-1]  # the largest blob: the linked binary
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0x01
    victim.chmod(0o644)
    victim.write_bytes(bytes(data))
    verify = mcpp("cache", "verify", cwd=root)
    assert verify.code == 1 and f"corrupted: {victim.parent.name}{victim.name}" in verify.err
    shutil.rmtree(root / "target")
    shutil.rmtree(mcpp.home / "mat", ignore_errors=True)
    res = mcpp("build", "--message-format", "json", cwd=root)
    assert res.code == 0, res.err
    assert "link hello:hello" in res.executed()  # the action whose output was corrupt ran again
    assert "missing or corrupt in the store" in res.err and "healed" in res.err
    assert binary.read_bytes() == good
    assert mcpp("cache", "verify", cwd=root).code == 0


def test_cache_commands(tmp_path, mcpp):
    root = copy_example("01-hello", tmp_path)
    assert mcpp("cache", "dir", cwd=root).out.strip() == str(mcpp.home)
    mcpp("build", cwd=root, check=True)
    stats = mcpp("cache", "stats", cwd=root).out
    assert "action entries:  3" in stats and "hit rate 0%" in stats
    shutil.rmtree(root / "target")
    mcpp("build", cwd=root, check=True)
    assert "3 cache hits, 0 executed" in mcpp("cache", "stats", cwd=root).out
    assert mcpp("cache", "verify", cwd=root).out.strip() == "all blobs verified"
    gc = mcpp("cache", "gc", "--older-than", "0s", cwd=root)
    assert gc.code == 0 and "removed 3 action entries" in gc.out
    assert mcpp("cache", "gc", "--max-size", "lots", cwd=root).code == 2
    assert mcpp("cache", "clean", cwd=root).code == 0
    assert "blobs:           0" in mcpp("cache", "stats", cwd=root).out
    shutil.rmtree(root / "target")
    assert len(mcpp.build_json(cwd=root).executed()) == 3  # nothing left to hit


def test_explain_names_what_changed(tmp_path, mcpp):
    root = copy_example("01-hello", tmp_path)
    mcpp("build", cwd=root, check=True)
    src = root / "src" / "greeting.cpp"
    src.write_text(src.read_text().replace("Hello", "Hi"))
    manifest = root / "mcpp.toml"
    manifest.write_text(manifest.read_text() + '\n[build]\ndefines = ["LOUD"]\n')
    mcpp("build", cwd=root, check=True)
    res = mcpp("explain", "greeting.cpp", cwd=root)
    assert res.code == 0, res.err
    assert "action: compile hello:src/greeting.cpp" in res.out
    assert "flag added: -DLOUD" in res.out
    assert "input changed: src/greeting.cpp " in res.out
    assert mcpp("explain", "nothing-like-this", cwd=root).code == 2


def _area_file(home: Path, data: bytes) -> Path:
    import blake3

    h = blake3.blake3(data).hexdigest()
    return home / "mat" / h[:2] / h[2:]


def test_only_outputs_another_action_stages_are_materialized(project, mcpp):
    """The materialization area holds the copies sandboxes hard-link from: an object the link
    stages is put there as it is stored; a depfile or the final binary, which no action stages,
    is not (a clean build writes one file fewer per compile), and `rm -rf target` still restores
    both, byte for byte, from the store."""
    root = many_sources(project, n=2, name="staged")
    assert mcpp("build", cwd=root).code == 0
    obj_dir = root / "target" / "dev" / ".mcpp" / "obj" / "staged" / "src"
    obj, depfile, binary = obj_dir / "f0.cpp.o", obj_dir / "f0.cpp.d", root / "target" / "dev" / "staged"
    saved = {p: p.read_bytes() for p in (obj, depfile, binary)}
    assert _area_file(mcpp.home, saved[obj]).is_file()
    assert not _area_file(mcpp.home, saved[depfile]).exists()
    assert not any(_area_file(mcpp.home, saved[binary]).parent.glob(_area_file(mcpp.home, saved[binary]).name + "*"))

    shutil.rmtree(root / "target")
    again = mcpp.build_json(cwd=root)
    assert again.executed() == []
    assert {p: p.read_bytes() for p in saved} == saved
    assert not _area_file(mcpp.home, saved[depfile]).exists()
    assert os.stat(depfile).st_mode & 0o777 == 0o444
