"""The explain log keeps one file per action: a build that ran one action rewrites one file."""
from __future__ import annotations

import os

from mcpp.cas.action import Action
from mcpp.cas.digest import digest_bytes
from mcpp.engine.explain import ExplainLog, load_records


class _Keys:
    def tool_digest(self, path):
        return digest_bytes(path.encode())


def _action(name: str) -> Action:
    return Action(id=f"compile p:{name}", argv=("cc", "-c", name), inputs=(name,), outputs=(f"{name}.o",))


def _log(path) -> ExplainLog:
    return ExplainLog(str(path), "gcc on x86_64-linux")


def test_one_file_per_action_and_only_the_recorded_ones_are_rewritten(tmp_path):
    path = tmp_path / "explain"
    first = _log(path)
    for name in ("a.c", "b.c"):
        first.record(_action(name), "k1-" + name, {name: digest_bytes(b"1")}, _Keys())
    first.save()
    files = sorted(os.listdir(path))
    assert len(files) == 2
    os.utime(path / files[0], ns=(1, 1))
    os.utime(path / files[1], ns=(1, 1))

    second = _log(path)
    second.record(_action("a.c"), "k2-a.c", {"a.c": digest_bytes(b"2")}, _Keys())
    second.save()
    changed = [f for f in files if os.stat(path / f).st_mtime_ns != 1]
    assert len(changed) == 1  # b.c's file is not rewritten
    records = load_records(str(path))
    assert [r["key"] for r in records["compile p:a.c"]] == ["k1-a.c", "k2-a.c"]
    assert [r["key"] for r in records["compile p:b.c"]] == ["k1-b.c"]


def test_the_last_two_runs_are_kept_and_a_single_file_log_is_replaced(tmp_path):
    path = tmp_path / "explain"
    path.write_bytes(b"the single-file log of an earlier version")
    for i in range(4):
        log = _log(path)
        log.record(_action("a.c"), f"k{i}", {"a.c": digest_bytes(str(i).encode())}, _Keys())
        log.save()
    assert path.is_dir()
    assert [r["key"] for r in load_records(str(path))["compile p:a.c"]] == ["k2", "k3"]
