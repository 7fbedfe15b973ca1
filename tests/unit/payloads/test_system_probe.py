"""Adopting a `system` root: which probes are refused as written, the answers cached per probed
program, listing that runs nothing, and no probe at all where the sandbox does not work."""
from __future__ import annotations

import os

import pytest

from mcpp.engine.payloads import probe_sandbox, system
from mcpp.engine.payloads.descriptor import Source, probe_shape_error
from mcpp.engine.payloads.errors import PayloadError
from mcpp.sandbox.bwrap import find_bwrap, probe_bwrap

needs_bwrap = pytest.mark.skipif(find_bwrap() is None or probe_bwrap() is not None, reason="bwrap does not work here")


@pytest.mark.parametrize("root, probe, why", [
    ("/opt/t", ("/bin/sh", "-c", "x"), "not an absolute path"),
    ("/opt/t", ("bin/../../../bin/sh",), "has a `..` component"),
    ("/opt/t", ("bin/bash", "-c", "x"), "is a shell or launcher"),
    ("/opt/t", ("python3", "-c", "x"), "is a shell or launcher"),
    ("/", ("bin/tool",), "not `/`"),
    ("/opt/t", ("bin/tool\0",), "NUL"),
])
def test_a_probe_outside_its_root_or_through_a_shell_is_refused_as_written(root, probe, why):
    assert why in probe_shape_error(root, probe)


def test_a_root_relative_probe_is_accepted_as_written():
    assert probe_shape_error("/usr/local/cuda", ("bin/nvcc", "--version")) is None


def tool(tmp_path, version: str):
    root = tmp_path / "opt-tool"
    (root / "bin").mkdir(parents=True, exist_ok=True)
    path = root / "bin" / "tool"
    path.write_text(f"#!/bin/sh\necho 'tool version {version}'\n")
    os.chmod(path, 0o755)
    return Source("system", system=str(root), probe=("bin/tool",), match="version ([0-9.]+)")


@needs_bwrap
def test_the_answer_is_cached_per_program_and_listing_reads_only_the_cache(tmp_path):
    source = tool(tmp_path, "1.0")
    cache = str(tmp_path / "probes")
    assert system.Prober(cache, may_run=False).probe(source, "t").pending  # never probed: nothing runs
    assert system.Prober(cache, may_run=True).probe(source, "t").version == "1.0"
    assert system.Prober(cache, may_run=False).probe(source, "t").version == "1.0"  # from the cache
    tool(tmp_path, "2.0")  # reinstalled in place: another stat, another key
    assert system.Prober(cache, may_run=False).probe(source, "t").pending
    assert system.Prober(cache, may_run=True).probe(source, "t").version == "2.0"


def test_a_program_linked_out_of_the_root_is_not_adopted(tmp_path):
    source = tool(tmp_path, "1.0")
    os.remove(tmp_path / "opt-tool" / "bin" / "tool")
    os.symlink("/bin/true", tmp_path / "opt-tool" / "bin" / "tool")
    probed = system.Prober(str(tmp_path / "probes"), may_run=True).probe(source, "t")
    assert probed.version is None and "leads out of" in probed.why


def test_without_a_working_sandbox_the_probe_is_refused_not_run_on_the_host(tmp_path, monkeypatch):
    import mcpp.sandbox.bwrap as bwrap

    monkeypatch.setattr(bwrap, "find_bwrap", lambda: None)
    source = tool(tmp_path, "1.0")
    with pytest.raises(PayloadError) as e:
        system.Prober(str(tmp_path / "probes"), may_run=True).probe(source, "payload `xim:tool` 1.0")
    assert "runs only in the bwrap sandbox" in e.value.message and "never run on the host" in e.value.message
    assert not os.path.exists(tmp_path / "probes")


@needs_bwrap
def test_the_probe_sees_neither_home_nor_the_network(tmp_path):
    root = tmp_path / "opt-tool"
    (root / "bin").mkdir(parents=True)
    secret = tmp_path / "home" / "secret"
    secret.parent.mkdir()
    secret.write_text("s3cret")
    (root / "bin" / "tool").write_text(f"#!/bin/sh\ncat {secret}; echo net: $(cut -d: -f1 /proc/net/dev | tail -n +3); touch {root}/w && echo wrote\n")
    os.chmod(root / "bin" / "tool", 0o755)
    out, _ = probe_sandbox.run_probe(str(root), [str(root / "bin" / "tool")], "t")
    assert "s3cret" not in out and "wrote" not in out
    assert "net: lo\n" in out  # a network namespace of its own, holding only a loopback
