"""Installed payloads are part of every bwrap action's view, workers included: a payload tool
needs no per-action bind, which would force one bwrap process per action."""
from __future__ import annotations

import pytest

from mcpp.sandbox.bwrap import BwrapSandbox, find_bwrap, probe_bwrap
from mcpp.sandbox.select import make_sandbox


@pytest.mark.skipif(find_bwrap() is None or probe_bwrap() is not None, reason="bwrap does not work here")
def test_payload_roots_are_in_the_prefix_and_need_no_per_action_bind(tmp_path):
    payload = tmp_path / "payloads" / "xim" / "gen" / "2.0.0"
    (payload / "bin").mkdir(parents=True)
    (payload / "bin" / "gen").write_text("#!/bin/sh\n")
    sandbox, _ = make_sandbox("bwrap", str(tmp_path / "work"), (str(payload),))
    try:
        assert isinstance(sandbox, BwrapSandbox)
        prefix = " ".join(sandbox._prefix)
        assert f"--ro-bind {payload} {payload}" in prefix
        assert sandbox._binds_for((str(payload / "bin" / "gen"),)) == []
        other = tmp_path / "opt" / "bin"
        other.mkdir(parents=True)
        assert sandbox._binds_for((str(other / "cc"),)) == ["--ro-bind", str(tmp_path / "opt"), str(tmp_path / "opt")]
    finally:
        sandbox.shutdown()


def test_the_directory_sandbox_accepts_reads_under_payload_roots(tmp_path):
    sandbox, _ = make_sandbox("dir", str(tmp_path / "work"), ("/srv/payloads/x",))
    try:
        assert sandbox.ro_roots == ("/srv/payloads/x",)
    finally:
        sandbox.shutdown()
