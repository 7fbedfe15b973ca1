"""The suite tests the working tree's mcpp or refuses to start (tests/working_tree.py, conftest.py)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests import working_tree
from tests.working_tree import PACKAGES, REPO, interpreter_of, problem, stale_client


def test_packages_under_the_tree_are_no_problem(tmp_path):
    located = {name: str(tmp_path / name.split(".")[1] / "__init__.py") for name in PACKAGES}
    assert problem(tmp_path, located, "pytest's Python") is None


def test_a_package_installed_elsewhere_is_named_with_the_fix(tmp_path):
    site = "/usr/lib/python3/site-packages/mcpp/engine/__init__.py"
    located = {"mcpp.engine": site, "mcpp.cas": str(tmp_path / "cas/__init__.py")}
    found = problem(tmp_path, located, "the `mcpp` executable /x/bin/mcpp")
    assert found is not None
    assert f"mcpp.engine is {site}" in found and "mcpp.cas" not in found
    assert "the `mcpp` executable /x/bin/mcpp" in found and "pip install -e" in found


def test_a_package_that_does_not_import_is_a_problem(tmp_path):
    found = problem(tmp_path, {"mcpp.engine": None}, "pytest's Python")
    assert found is not None and "mcpp.engine does not import" in found


def test_a_sibling_folder_whose_name_starts_like_the_tree_is_outside_it(tmp_path):
    (tmp_path / "repo").mkdir()
    found = problem(tmp_path / "repo", {"mcpp.engine": str(tmp_path / "repo-old/engine/__init__.py")}, "x")
    assert found is not None


def test_the_interpreter_of_a_console_script_is_read_from_either_form_pip_writes(tmp_path):
    short = tmp_path / "short"
    short.write_text("#!/venv/bin/python3\nimport sys\n")
    long = tmp_path / "long"
    long.write_text("#!/bin/sh\n'''exec' /a/very/long/venv/bin/python3 \"$0\" \"$@\"\n' '''\n")
    assert interpreter_of(str(short)) == "/venv/bin/python3"
    assert interpreter_of(str(long)) == "/a/very/long/venv/bin/python3"
    assert interpreter_of(str(tmp_path / "missing")) is None


def test_the_interpreter_of_the_native_client_is_its_python_clients(tmp_path):
    """`mcpp` is a compiled program (engine/server/native/client.c): the Python it runs, and the
    packages that Python imports, are those of `mcpp-py` beside it."""
    (tmp_path / "mcpp").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)))
    (tmp_path / "mcpp-py").write_text("#!/venv/bin/python3\nimport sys\n")
    assert interpreter_of(str(tmp_path / "mcpp")) == "/venv/bin/python3"
    (tmp_path / "mcpp-py").unlink()
    assert interpreter_of(str(tmp_path / "mcpp")) is None


def test_this_session_runs_the_working_trees_mcpp():
    assert problem(REPO, working_tree.located_here(), "pytest's Python") is None


def test_pytest_refuses_to_start_when_another_mcpp_is_imported(tmp_path):
    for name in PACKAGES:  # a copy of mcpp that Python finds before the editable install
        package = tmp_path / "other" / "mcpp" / name.split(".")[1]
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
    (tmp_path / "other" / "mcpp" / "__init__.py").write_text("")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "other")}
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                        "tests/unit/test_version_req.py"], cwd=REPO, env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 4, p.stdout + p.stderr
    said = p.stdout + p.stderr
    assert f"mcpp.engine is {Path(tmp_path, 'other/mcpp/engine/__init__.py')}" in said, said
    assert "pip install -e" in said and " passed" not in said, said


def test_a_client_built_before_its_source_changed_is_named_with_the_fix(tmp_path):
    source, built = tmp_path / "client.c", tmp_path / "mcpp"
    source.write_text("int main(void) { return 0; }\n")
    built.write_bytes(b"\x7fELF")
    os.utime(built, (1_000_000, 1_000_000))
    os.utime(source, (2_000_000, 2_000_000))  # edited after the build
    found = stale_client(str(built), source)
    assert found is not None and str(built) in found and "make install-test" in found
    os.utime(built, (3_000_000, 3_000_000))  # rebuilt since
    assert stale_client(str(built), source) is None
    assert stale_client(str(tmp_path / "absent"), source) is None
