"""`mcpp cache gc --max-size` bounds everything under the home (engine/state/home_gc.py), and
`[cache] max-size` does it after a build: real builds into a home of the test's own."""
from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from e2e_support import Mcpp

PROJECT = {"mcpp.toml": '[package]\nname = "bounded"\nversion = "0.1.0"\n',
           "src/main.cpp": '#include <cstdio>\nint main() { std::puts("bounded"); }\n'}
HOURS_AGO = time.time() - 7200


def du(root: Path) -> int:
    """Bytes of the regular files under root. A warm server may still be clearing a sandbox slot
    after its reply, so a file or folder that goes while we walk counts as gone, not as an error."""
    total = 0
    for dirpath, _dirs, files in os.walk(root):  # os.walk skips folders that vanish
        for name in files:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except FileNotFoundError:
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return total


def old_file(path: Path, size: int, when: float = HOURS_AGO) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(size))
    os.utime(path, (when, when))
    return path


def project(tmp_path: Path) -> Path:
    root = tmp_path / "p"
    for rel, text in PROJECT.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_gc_max_size_bounds_logs_and_payloads_not_only_the_store(tmp_path):
    m = Mcpp(tmp_path / "home")
    root = project(tmp_path)
    m("build", cwd=root, check=True)
    log = old_file(m.home / "server" / "0123456789abcdef.log", 3 << 20)
    version = m.home / "payloads" / "index" / "zlib" / "1.3"
    old_file(version / "lib" / "libz.a", 2 << 20)
    old_file(m.home / "payloads" / ".locks" / "index+zlib+1.3.lock", 0)  # last used two hours ago
    recent = old_file(m.home / "server" / "fedcba9876543210.log", 10, when=time.time())
    assert du(m.home) > 5 << 20
    res = m("cache", "gc", "--max-size", "2M", cwd=root, check=True)
    assert not log.exists() and not version.exists() and recent.exists(), res.out
    assert du(m.home) <= 2 << 20, res.out + res.err
    assert "1 host tools, payloads and index sources" in res.out and "1 materialized files and logs" in res.out, res.out
    # what is left still builds: the outputs come back from the store
    import shutil
    shutil.rmtree(root / "target")
    m("build", cwd=root, check=True)


def _after_the_reply(done, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not done() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_cache_max_size_in_config_bounds_the_home_after_a_build(tmp_path):
    m = Mcpp(tmp_path / "home")
    m.home.mkdir()
    (m.home / "config.toml").write_text('[cache]\nmax-size = "2M"\n')
    root = project(tmp_path)
    log = old_file(m.home / "server" / "0123456789abcdef.log", 3 << 20)
    m("build", cwd=root, check=True)
    # a warm server bounds the home after its answer; its stamp claims the hour before it removes
    _after_the_reply(lambda: (m.home / "gc.stamp").exists() and not log.exists())
    assert not log.exists() and (m.home / "gc.stamp").exists()
    # once an hour at most: a second build within the hour does not walk the home again
    log = old_file(m.home / "server" / "0123456789abcdef.log", 3 << 20)
    (root / "src/main.cpp").write_text('#include <cstdio>\nint main() { std::puts("again"); }\n')
    m("build", cwd=root, check=True)
    assert log.exists()
    (m.home / "config.toml").write_text('[cache]\nmax-size = "lots"\n')
    bad = m("build", cwd=root)
    assert bad.code == 2 and "cache.max-size" in bad.err and "Traceback" not in bad.err


def test_materialized_copies_go_before_any_cache_entry(tmp_path):
    """Everything two hours old (`now` moved on): a bound the store alone fits removes mat/ copies
    and keeps every action entry; a tighter one then evicts entries too."""
    from mcpp.cas.home import Home
    from mcpp.engine.state.home_gc import bound

    m = Mcpp(tmp_path / "home")
    root = project(tmp_path)
    m("build", cwd=root, check=True)
    home = Home(m.home)
    mat = du(m.home / "mat")
    entries = len(list((m.home / "ac").rglob("*")))
    assert mat > 0
    later = time.time() + 7200
    counted = bound(home, 1 << 40, now=later)  # what gc counts (not a warm server's sandboxes, socket, live log)
    assert counted.removed == {} and counted.after == counted.before
    report = bound(home, counted.before - mat // 2, now=later)
    assert report.removed.get("materialized files and logs", 0) >= 1 and report.store.entries_removed == 0
    assert len(list((m.home / "ac").rglob("*"))) == entries
    assert report.after == bound(home, 1 << 40, now=later).before  # what gc counted is what is there
    tight = bound(home, 1, now=later)
    assert tight.store.entries_removed >= 1 and du(m.home / "mat") == 0
