"""report/hidden_files.py: which missing-file messages it reads, where it looks, what it names."""
from __future__ import annotations

from mcpp.cas.action import Action, ActionKind
from mcpp.engine.report.hidden_files import PackageDirs, hidden_file_hints


def _tree(tmp_path):
    root = tmp_path / "ws"
    (root / "app" / "config").mkdir(parents=True)
    (root / "app" / "config" / "app.h").write_text("")
    (root / "app" / "app.map").write_text("")
    return root, {"app": PackageDirs("app", str(root / "app"))}


def test_a_link_reading_an_undeclared_file_names_link_inputs(tmp_path):
    root, packages = _tree(tmp_path)
    link = Action("link app:app", ("g++", "-Wl,--version-script=app/app.map"), ("app/target/dev/app",),
                  kind=ActionKind.LINK)
    [hint] = hidden_file_hints(link, "/usr/bin/ld: cannot open app/app.map: No such file or directory\n",
                               str(root), "app", packages)
    assert "`link_inputs` under the target's [targets.<name>] of `app`" in hint


def test_sandbox_paths_and_include_flags_are_read_as_the_host_sees_them(tmp_path):
    root, packages = _tree(tmp_path)
    compile_ = Action("compile app:src/main.cpp", ("g++", "-I", "app/config", "-c", "app/src/main.cpp"),
                      ("x.o",), kind=ActionKind.COMPILE)
    # an include directory on the command line whose file the sandbox did not stage
    out = "/execroot/app/src/main.cpp:1:10: fatal error: app.h: No such file or directory\n"
    [hint] = hidden_file_hints(compile_, out, str(root), "app", packages)
    assert 'add `include_dirs = ["config"]` under [build] of `app`' in hint
    # the same name written as the sandbox's absolute path
    out = "app/src/main.cpp:1:10: fatal error: /execroot/app/config/app.h: No such file or directory\n"
    [hint] = hidden_file_hints(compile_, out, str(root), "app", packages)
    assert 'add `include_dirs = ["config"]`' in hint


def test_nothing_to_say_without_a_file_or_for_an_archive(tmp_path):
    root, packages = _tree(tmp_path)
    compile_ = Action("compile app:src/main.cpp", ("g++",), ("x.o",), kind=ActionKind.COMPILE)
    assert hidden_file_hints(compile_, "a.cpp:1:1: fatal error: gone.h: No such file or directory\n",
                             str(root), "app", packages) == []
    archive = Action("archive app", ("ar",), ("x.a",), kind=ActionKind.ARCHIVE)
    assert hidden_file_hints(archive, "ar: app/app.map: No such file or directory\n", str(root), "app",
                             packages) == []
