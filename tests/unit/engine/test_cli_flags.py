"""A plain `mcpp build` line is read without click (engine/cli/flags.py's `plain_build`): what it
reads must be exactly what click reads from the same line, and what it does not read it leaves
to click (None), never reads otherwise."""
from __future__ import annotations

import random

import click
import pytest

from mcpp.engine.cli import app
from mcpp.engine.cli.flags import BUILD_FLAGS, GLOBAL_FLAGS, plain_build


def _clicks(argv: list[str]) -> tuple[dict, dict] | None:
    """What click passes `cli` and `build` for `argv`, or None when it refuses the line."""
    cut = argv.index("build")
    try:
        group = app.cli.make_context("mcpp", argv[:cut + 1], resilient_parsing=False)
        command = app.build_cmd.make_context("build", argv[cut + 1:], parent=group)
    except (click.exceptions.UsageError, click.exceptions.BadParameter, click.exceptions.Exit):
        return None
    return dict(group.params), dict(command.params)


COMMON = [
    ["build"],
    ["build", "-j", "2", "--message-format", "json"],
    ["build", "-q", "-j", "2", "--trace", "/tmp/trace.json"],
    ["-q", "build", "--release"],
    ["--no-server", "-j", "4", "--color", "never", "--manifest-path", "sub/mcpp.toml", "build"],
    ["build", "-qv", "-j4", "-p", "a", "-pb", "--features=x,y", "--features", "z", "--timings=json",
     "--no-remote-upload", "--remote-exec", "--remote-jobs", "8", "--remote-retries=0", "--sandbox", "dir",
     "--remote-header", "k=v", "--remote-header=k2=v2", "--keep-going", "--locked", "--offline", "--strict",
     "--target", "x86_64-linux-gnu", "--accel", "cuda12.9", "--no-accel", "--toolchain", "gcc",
     "--profile", "release", "--all-features", "--no-default-features", "--remote", "grpc://h:1",
     "--remote-instance-name", "main", "--remote-download", "minimal", "-vv", "--no-server"],
]


@pytest.mark.parametrize("argv", COMMON, ids=" ".join)
def test_a_common_build_line_is_read_without_click_as_click_reads_it(argv):
    ours = plain_build(argv)
    assert ours is not None
    assert ours == _clicks(argv)


@pytest.mark.parametrize("argv", [
    ["build", "--help"], ["build", "-h"], ["--version", "build"], ["run"], ["test", "-j", "2"],
    ["build", "extra"], ["build", "--"], ["build", "--no-such-flag"], ["build", "-x"],
    ["build", "--timings"], ["build", "--timings", "json"], ["build", "-j"], ["build", "-j", "-1"],
    ["build", "-j", "two"], ["build", "--jobs=+2"], ["build", "--sandbox", "chroot"],
    ["build", "--remote-jobs", "0"], ["build", "--remote-retries=-1"], ["build", "--release=yes"],
    ["build", "--message-format", "xml"], ["--color", "build", "build"], ["build", "--profile", "--release"],
    ["build", "-j", "\u0663"],
])
def test_what_it_is_not_sure_of_is_left_to_click(argv):
    assert plain_build(argv) is None


def test_a_path_option_naming_an_unreadable_file_is_left_to_click(tmp_path, monkeypatch):
    secret = tmp_path / "secret.json"
    secret.write_text("{}")
    monkeypatch.setattr("os.access", lambda path, mode: str(path) != str(secret))
    assert plain_build(["build", "--trace", str(secret)]) is None
    assert plain_build(["build", "--trace", str(tmp_path / "new.json")]) is not None


def _words(rng: random.Random, flags) -> list[str]:
    """One option of `flags` as a user may write it, right or wrong."""
    flag = rng.choice(flags)
    name = rng.choice(flag.names + flag.off)
    value = rng.choice([*(flag.choices or ()), "0", "3", "-2", "1025", "abc", "", "x=y", "-q", "build"])
    if flag.kind in ("flag", "count", "bool_pair"):
        return [name] if rng.random() < 0.9 else [f"{name}={value}"]
    if name.startswith("--"):
        return [f"{name}={value}"] if rng.random() < 0.5 else [name, value]
    return [name + value] if rng.random() < 0.5 else [name, value]


def test_random_lines_are_read_as_click_reads_them_or_left_to_it():
    rng = random.Random(38)
    read = 0
    for _ in range(3000):
        argv = [w for _ in range(rng.randrange(3)) for w in _words(rng, GLOBAL_FLAGS)] + ["build"]
        argv += [w for _ in range(rng.randrange(6)) for w in _words(rng, BUILD_FLAGS)]
        if rng.random() < 0.1 and len(argv) > 2:  # run two short flags together
            argv.append("-qv")
        ours = plain_build(argv)
        if ours is not None:
            read += 1
            assert ours == _clicks(argv), argv
    assert read > 500  # the fast reading is not a path that never runs
