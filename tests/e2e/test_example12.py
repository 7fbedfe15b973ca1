"""Example 12 (seed 000): a device language the engine has never heard of.

`app` activates `rules-toy`, whose Starlark rule module runs `toyc` (a host tool built from the
`toyc` package into the tool store) on each `.toy` device source. The tests drive `mcpp run` on
a copy of the example and check the seed's transcript and its four "what changed" rows.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.e2e_support import EXAMPLES, Mcpp
from tests.e2e.test_toyc import SEED_DIAGNOSTICS

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

EXAMPLE = EXAMPLES / "12-a-new-device-language"
THREE_LINES = "gcd(1071, 462) = 21\nscale(21, 2)   = 42\nanswer()       = 42\n"
BUILDING_TOOL = "Building host tool toyc:toyc from toyc v{} (once per package source and host toolchain)"
# An emitter that writes `a * 4 * b` for `a * b`: scale(21, 2) and answer() become 168.
EMITTER_LINE = 'return "(" + expr(*e.args[0]) + " " + e.text + " " + expr(*e.args[1]) + ")";'
EMITTER_TIMES_4 = ('return "(" + expr(*e.args[0]) + " " + e.text + (e.text == "*" ? " 4 * " : " ") '
                   '+ expr(*e.args[1]) + ")";')


def copy_tree(dest: Path) -> Path:
    root = dest / "12-a-new-device-language"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("target", "compile_commands.json"))
    return root


def answer(res) -> str:
    assert res.code == 0, f"{res.out}\n{res.err}"
    return res.out.strip().splitlines()[-1]


def tool_entries(home: Path) -> list[Path]:
    return sorted((home / "tool").glob("*/toyc@*"))


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


@pytest.fixture
def example(tmp_path, mcpp: Mcpp):
    """A copy of the example, run once: the common starting state of every row."""
    root = copy_tree(tmp_path)
    res = mcpp("run", cwd=root / "app")
    assert res.code == 0, f"{res.out}\n{res.err}"
    assert res.out.endswith(THREE_LINES)
    return root


def test_run_prints_the_seed_transcript_and_a_second_run_builds_no_tool(tmp_path, mcpp: Mcpp):
    root = copy_tree(tmp_path)
    first = mcpp("run", cwd=root / "app")
    assert first.code == 0, first.err
    lines = [line for line in first.err.splitlines() if line not in first.diagnostics.splitlines()]
    assert lines[0] == "       Rules example.rules.toy (example:rules-toy)"
    assert lines[1] == "    " + BUILDING_TOOL.format("0.1.0")
    assert lines[2] == "   Compiling toyapp v0.1.0 (.)"
    assert re.fullmatch(r"    Finished dev \[unoptimized \+ debuginfo\] in \d+\.\d\ds", lines[3])
    assert first.out.endswith(THREE_LINES)
    [entry] = tool_entries(mcpp.home)
    assert (entry / "bin" / "toyc").is_file()

    second = mcpp("run", cwd=root / "app")
    assert second.code == 0, second.err
    assert "Building host tool" not in second.err
    assert "Compiling" not in second.err
    # How fast the second run is belongs to bench/, not to a test that a loaded machine would fail.
    assert re.search(r"Finished dev \[unoptimized \+ debuginfo\] in \d+\.\d\ds", second.err), second.err
    assert second.out.endswith(THREE_LINES)


def test_editing_the_toy_source_reaches_the_artifact(example: Path, mcpp: Mcpp):
    edit(example / "app/src/kernels/answer.toy", "scale(gcd(1071, 462), 2)", "scale(gcd(1071, 462), 3)")
    res = mcpp("run", cwd=example / "app")
    assert answer(res) == "answer()       = 63"
    assert "Building host tool" not in res.err


def test_the_tools_bytes_are_an_input_both_ways(example: Path, tmp_path, mcpp: Mcpp):
    """Row two: different bytes at the path the action names; then the original bytes back."""
    [entry] = tool_entries(mcpp.home)
    tool = entry / "bin" / "toyc"
    original = tool.read_bytes()
    # Another toyc, built from an edited copy of the tree by a plain `mcpp build`.
    other = copy_tree(tmp_path / "other")
    edit(other / "toyc/src/emit.cpp", EMITTER_LINE, EMITTER_TIMES_4)
    built = mcpp("build", cwd=other / "toyc")
    assert built.code == 0, built.err
    tool.write_bytes((other / "toyc/target/dev/toyc").read_bytes())

    res = mcpp("run", cwd=example / "app")
    assert answer(res) == "answer()       = 168"
    assert "Building host tool" not in res.err  # the store entry was used as it is

    tool.write_bytes(original)
    res = mcpp("run", cwd=example / "app")
    assert answer(res) == "answer()       = 42"


def test_editing_the_emitter_rebuilds_the_tool_and_the_artifact_follows(example: Path, mcpp: Mcpp):
    edit(example / "toyc/src/emit.cpp", EMITTER_LINE, EMITTER_TIMES_4)
    res = mcpp("run", cwd=example / "app")
    assert BUILDING_TOOL.format("0.1.0") in res.err
    assert answer(res) == "answer()       = 168"
    assert len(tool_entries(mcpp.home)) == 2  # one entry per stamp of the tree


def test_version_bump_rebuilds_and_going_back_follows(example: Path, mcpp: Mcpp):
    manifest = example / "toyc/mcpp.toml"
    emitter = example / "toyc/src/emit.cpp"
    saved = {p: (p.read_bytes(), os.stat(p)) for p in (manifest, emitter)}

    edit(manifest, 'version = "0.1.0"', 'version = "0.1.1"')
    res = mcpp("run", cwd=example / "app")
    assert BUILDING_TOOL.format("0.1.1") in res.err
    assert answer(res) == "answer()       = 42"

    edit(emitter, EMITTER_LINE, EMITTER_TIMES_4)
    res = mcpp("run", cwd=example / "app")
    assert BUILDING_TOOL.format("0.1.1") in res.err
    assert answer(res) == "answer()       = 168"

    # Back to 0.1.0, byte for byte and stamp for stamp: its clean tool is still in the store.
    for path, (data, st) in saved.items():
        path.write_bytes(data)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    res = mcpp("run", cwd=example / "app")
    assert "Building host tool" not in res.err
    assert answer(res) == "answer()       = 42"  # seed 000's "version goes forward only" trap is gone


def test_without_the_feature_the_load_fails_and_no_tool_is_built(tmp_path, mcpp: Mcpp):
    root = copy_tree(tmp_path)
    edit(root / "app/mcpp.toml", ', features = ["rules-toy"]', "")
    res = mcpp("run", cwd=root / "app")
    assert res.code == 2
    assert res.err.splitlines()[:2] == [
        "error: build.star loads 'example.rules.toy', and no dependency provides it as a host module.",
        "       declared without `host-module = true`: rules-toy (in [dependencies])",
    ]
    assert "Building host tool" not in res.err and "Rules" not in res.err
    assert tool_entries(mcpp.home) == []
    assert "Traceback" not in res.err


def test_the_tool_from_the_store_prints_the_four_seed_diagnostics(example: Path, tmp_path, mcpp: Mcpp):
    [entry] = tool_entries(mcpp.home)
    for name, text, message in SEED_DIAGNOSTICS:
        (tmp_path / name).write_text(text)
        res = subprocess.run([str(entry / "bin/toyc"), name, "-o", "out.cpp"], cwd=tmp_path,
                             capture_output=True, text=True)
        assert res.returncode == 1
        assert res.stderr == message + "\n"


def test_cache_clean_empties_the_tool_store(example: Path, mcpp: Mcpp):
    assert tool_entries(mcpp.home)
    res = mcpp("cache", "clean", cwd=example / "app")
    assert res.code == 0, res.err
    assert tool_entries(mcpp.home) == []
    res = mcpp("run", cwd=example / "app")
    assert BUILDING_TOOL.format("0.1.0") in res.err
    assert res.out.endswith(THREE_LINES)
