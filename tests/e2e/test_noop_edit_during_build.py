"""A source saved while a build runs, after that build read it, is built by the next `mcpp build`:
the no-op record holds the stat of what the build read, never a stat taken after the build
(engine/state/noop.py), in process and through the warm server."""
from __future__ import annotations

import os
import subprocess
import time

import pytest

from e2e_support import write_tree

pytestmark = pytest.mark.one_mode  # runs each case in both modes itself: the server-on run leaves it out

# A compile that takes a second or two: long enough to save another file while it runs.
SLOW = """
    constexpr unsigned long spin(unsigned long seed) {
        unsigned long x = seed;
        for (unsigned long i = 0; i < 100000; ++i)
            for (unsigned long j = 0; j < 8; ++j) x = x * 6364136223846793005ul + i + j;
        return x;
    }
    static_assert(spin(SEED) != 0);
    int slow_value() { return (int)(spin(SEED) & 0x7f); }
"""

MODES = {"in process": {"MCPP_NO_SERVER": "1"}, "server": {"MCPP_NO_SERVER": "0", "MCPP_SERVER_IDLE": "60"}}


def _main(word: str) -> str:
    return f'#include <cstdio>\nint slow_value();\nint main() {{ std::printf("{word} %d\\n", slow_value() >= 0); }}\n'


def _slow(seed: int) -> str:
    return f"#define SEED {seed}ul\n" + SLOW


@pytest.mark.heavy
@pytest.mark.parametrize("mode", MODES)
def test_a_source_saved_during_the_build_is_built_next_time(tmp_path, mcpp, mode):
    env = MODES[mode]
    root = write_tree(tmp_path / "app", {
        "mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\nstandard = "c++20"\n',
        "src/main.cpp": _main("one"),
        "src/slow.cpp": _slow(1),
    })
    main, obj, binary = root / "src/main.cpp", root / "target/dev/.mcpp/obj/app/src/main.cpp.o", root / "target/dev/app"
    try:
        mcpp("build", cwd=root, env=env, check=True)
        before = obj.stat().st_mtime_ns
        # The next build compiles main.cpp ("two") quickly and slow.cpp slowly; while slow.cpp
        # compiles, main.cpp is saved again ("three"), after the build has read and compiled it.
        main.write_text(_main("two"))
        (root / "src/slow.cpp").write_text(_slow(2))
        full_env = {**os.environ, "MCPP_HOME": str(mcpp.home), **env}
        full_env.pop("TERM", None)
        build = subprocess.Popen([mcpp.exe, "build"], cwd=root, env=full_env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 120
            while not (obj.exists() and obj.stat().st_mtime_ns != before):
                assert build.poll() is None, "the build ended before main.cpp was compiled"
                assert time.monotonic() < deadline
                time.sleep(0.01)
            main.write_text(_main("three") + "// saved during the build\n")
            assert build.poll() is None, "slow.cpp compiled too fast: the save was not during the build"
            out, err = build.communicate(timeout=120)
        finally:
            if build.poll() is None:
                build.kill()
                build.wait()
        assert build.returncode == 0, err
        assert "Compiling app" in err
        res = mcpp("build", cwd=root, env=env, check=True)
        assert "Compiling app" in res.err, res.err
        shown = subprocess.run([binary], capture_output=True, text=True, check=True).stdout
        assert shown == "three 1\n"
    finally:
        if mode == "server":
            mcpp("server", "stop", cwd=root, env=env)
