"""The rules that decide whether a file a compiler read was declared."""
from mcpp.sandbox.undeclared import (SYSTEM_ROOTS, find_undeclared, response_files, tool_root, tool_roots,
                                     undeclared_response_files)


def check(deps, declared=("src/a.c", "inc/a.h", "gen"), cwd="/x/r", tools=()):
    return find_undeclared(deps, root="/x/r", cwd=cwd, declared=set(declared),
                           allowed_roots=SYSTEM_ROOTS + tool_roots(tuple(tools)))


def test_declared_relative_and_absolute_paths_pass():
    assert check(["src/a.c", "/x/r/inc/a.h", "./inc/../inc/a.h", "gen/deep/b.h"]) == []


def test_system_headers_pass_and_other_absolute_paths_do_not(tmp_path):
    assert check(["/usr/include/stdio.h", "/usr/lib/gcc/x86_64-linux-gnu/12/include/stddef.h"]) == []
    assert str(tmp_path).startswith("/tmp/")
    host_tmp_file = tmp_path / "y.h"
    host_tmp_file.write_text("")
    assert check(["/home/me/inc/x.h", str(host_tmp_file)]) == ["/home/me/inc/x.h", str(host_tmp_file)]


def test_a_temporary_the_action_made_and_removed_under_tmp_passes(tmp_path):
    """A link with -flto reads the objects lto-wrapper wrote under /tmp and removed."""
    assert check([str(tmp_path / "cc1234.ltrans0.ltrans.o")]) == []
    assert check(["/var/tmp/gone.o", "/tmpx/gone.o"]) == ["/var/tmp/gone.o", "/tmpx/gone.o"]


def test_undeclared_files_inside_the_root_are_named_relative():
    assert check(["inc/b.h", "/x/r/other.h"]) == ["inc/b.h", "other.h"]


def test_relative_paths_resolve_against_the_cwd_and_may_escape():
    assert check(["../inc/a.h"], cwd="/x/r/src") == []
    assert check(["../../../home/a.h"], cwd="/x/r/src") == ["/home/a.h"]


def test_a_name_spelled_as_declared_is_declared_only_from_the_root():
    """A dependency spelled exactly as an input was declared is accepted without normalising
    (a link's thousand objects) only where the tool ran at the root: from a subdirectory the
    same spelling names another file."""
    assert check(["inc/a.h", "src/a.c"], cwd="/x/r/") == []
    assert check(["inc/a.h"], cwd="/x/r/src") == ["src/inc/a.h"]
    assert check(["src/../inc/a.h", "inc/./a.h"]) == []  # not spelled as declared: normalised, then accepted


def test_tool_roots_allow_an_installed_compilers_own_headers():
    assert tool_root("/opt/gcc-13/bin/gcc") == "/opt/gcc-13"
    assert tool_root("/opt/tool/run") == "/opt/tool"
    assert tool_roots(("/usr/bin/gcc",)) == ()
    assert check(["/opt/gcc-13/include/c++/13/vector"], tools=["/opt/gcc-13/bin/g++"]) == []
    assert check(["/opt/gcc-13/include/c++/13/vector"]) == ["/opt/gcc-13/include/c++/13/vector"]


# -- response files: read by the driver, named by no depfile ---------------------------------------

def rsp_check(argv, files=None, declared=("src/a.c", "flags.rsp")):
    files = files or {}
    return undeclared_response_files(argv, root="/x/r", cwd="/x/r", declared=set(declared),
                                     allowed_roots=SYSTEM_ROOTS, read=files.get)


def test_every_spelling_that_hands_a_tool_a_response_file_is_found():
    argv = ["g++", "@a.rsp", "-Wl,-O1,@/abs/link.rsp", "-Xlinker", "@x.rsp", "-Wa,@as.rsp",
            "--config=/c.cfg", "--config", "d.cfg", "-o", "p@q", "-DX=@y"]
    assert response_files(argv) == ["a.rsp", "/abs/link.rsp", "x.rsp", "as.rsp", "/c.cfg", "d.cfg"]


def test_a_declared_response_file_passes_and_one_outside_the_root_does_not():
    assert rsp_check(["g++", "@flags.rsp", "-c", "src/a.c"]) == []
    assert rsp_check(["g++", "@/home/me/flags.rsp", "-Wl,@../out.rsp"]) == ["/home/me/flags.rsp", "/x/out.rsp"]
    assert rsp_check(["g++", "@other.rsp"]) == ["other.rsp"]


def test_a_response_file_named_inside_a_declared_one_is_checked_too():
    files = {"/x/r/flags.rsp": "-O2 '@/etc/more.rsp' -Wl,@flags.rsp"}
    assert rsp_check(["g++", "@flags.rsp"], files) == ["/etc/more.rsp"]
