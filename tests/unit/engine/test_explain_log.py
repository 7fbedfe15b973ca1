"""The explain log is append-only: a build appends what it ran and reads nothing."""
from __future__ import annotations

import os

from mcpp.cas.action import Action
from mcpp.cas.digest import digest_bytes
from mcpp.engine.exec import explain
from mcpp.engine.exec.explain import ExplainLog, load_records


class _Keys:
    def tool_digest(self, path):
        return digest_bytes(path.encode())


def _action(name: str) -> Action:
    return Action(id=f"compile p:{name}", argv=("cc", "-c", name), inputs=(name,), outputs=(f"{name}.o",))


def _run(path, *runs: tuple[str, str, str]) -> None:
    """One build that ran each (source, key, origin kind)."""
    log = ExplainLog(str(path), "gcc on x86_64-linux")
    for name, key, origin in runs:
        log.record(_action(name), key, {name: digest_bytes(key.encode())}, _Keys(), origin={"kind": origin})
    log.save()


def test_a_build_appends_only_what_it_ran(tmp_path):
    path = tmp_path / "explain"
    _run(path, ("a.c", "k1", "executed"), ("b.c", "k1", "executed"))
    before = path.read_bytes()
    _run(path, ("a.c", "k2", "executed"))
    after = path.read_bytes()
    assert after.startswith(before) and len(after) - len(before) < len(before) / 1.5
    records = load_records(str(path))
    assert [r["key"] for r in records["compile p:a.c"]] == ["k1", "k2"]
    assert [r["key"] for r in records["compile p:b.c"]] == ["k1"]


def test_the_last_two_keys_are_kept_and_a_restore_of_the_same_key_replaces_its_record(tmp_path):
    path = tmp_path / "explain"
    for key in ("k0", "k1", "k2"):
        _run(path, ("a.c", key, "executed"))
    _run(path, ("a.c", "k2", "cached"))
    history = load_records(str(path))["compile p:a.c"]
    assert [(r["key"], r["origin"]["kind"]) for r in history] == [("k1", "executed"), ("k2", "cached")]


def test_a_cut_short_log_reads_up_to_the_cut_and_other_formats_start_over(tmp_path):
    path = tmp_path / "explain"
    _run(path, ("a.c", "k1", "executed"))
    _run(path, ("b.c", "k1", "executed"))
    path.write_bytes(path.read_bytes()[:-5])  # a build killed mid-write
    assert set(load_records(str(path))) == {"compile p:a.c"}
    path.write_bytes(b"the single-file log of an earlier version")
    assert load_records(str(path)) == {}
    _run(path, ("a.c", "k1", "executed"))
    assert set(load_records(str(path))) == {"compile p:a.c"}
    os.unlink(path)
    path.mkdir()  # the directory-per-action log of an earlier version
    (path / "x").write_bytes(b"")
    _run(path, ("a.c", "k1", "executed"))
    assert path.is_file() and set(load_records(str(path))) == {"compile p:a.c"}


def test_a_log_past_its_bound_is_compacted(tmp_path, monkeypatch):
    monkeypatch.setattr(explain, "_COMPACT_BYTES", 4000)
    path = tmp_path / "explain"
    for i in range(40):
        _run(path, ("a.c", f"k{i}", "executed"))
    assert os.path.getsize(path) < 4000 + 1000
    assert [r["key"] for r in load_records(str(path))["compile p:a.c"]] == ["k38", "k39"]


def test_records_framed_ahead_are_saved_as_they_would_have_been(tmp_path):
    """`frame_ahead` (the build's last action running) encodes the records so far; the save then
    writes the same bytes, in the same order, with the records made after it."""
    def build(path, ahead_after: int | None, stop_after: int | None = None) -> bytes:
        log = ExplainLog(str(path), "gcc on x86_64-linux")
        for n in range(1200):
            name = f"f{n}.c"
            log.record(_action(name), f"k{n}", {name: digest_bytes(name.encode())}, _Keys(), origin={"kind": "executed"})
            if n == ahead_after:
                looks: list[int] = []

                def stop() -> bool:
                    looks.append(1)
                    return stop_after is not None and len(looks) > stop_after

                log.frame_ahead(stop)
        log.save()
        return path.read_bytes()

    plain = build(tmp_path / "plain", None)
    assert build(tmp_path / "ahead", 1100) == plain
    assert build(tmp_path / "stopped", 1100, stop_after=1) == plain  # one slice, the rest at the save
    records = load_records(str(tmp_path / "ahead"))
    assert len(records) == 1200 and records["compile p:f1199.c"][0]["key"] == "k1199"


def test_framing_ahead_stops_when_told(tmp_path):
    log = ExplainLog(str(tmp_path / "explain"), "gcc on x86_64-linux")
    for n in range(3 * explain._AHEAD_SLICE):
        log.record(_action(f"f{n}.c"), f"k{n}", {}, _Keys())
    looks: list[int] = []

    def stop() -> bool:  # true at the third look
        looks.append(1)
        return len(looks) > 2

    log.frame_ahead(stop)
    assert len(log._framed) == 2 and len(log._new) == explain._AHEAD_SLICE
