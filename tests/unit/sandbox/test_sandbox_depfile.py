import pytest

from mcpp.sandbox.depfile_syntax import parse_depfile, parse_rules, read_depfile


def test_gcc_depfile_with_continuations_and_phony_rules():
    text = "obj/a.o: src/a.c /usr/include/stdio.h \\\n  inc/a.h \\\n inc/b.h\n\ninc/a.h:\n\ninc/b.h:\n"
    assert parse_depfile(text) == ["src/a.c", "/usr/include/stdio.h", "inc/a.h", "inc/b.h"]
    assert parse_rules(text)[1] == (["inc/a.h"], [])


def test_escaped_spaces_hashes_and_dollars():
    text = "a.o: my\\ dir/a.c x$$y.h q\\#r.h\n"
    assert parse_depfile(text) == ["my dir/a.c", "x$y.h", "q#r.h"]


def test_backslash_counting_follows_make():
    # 2N+1 backslashes before a space: N backslashes and a space; 2N: literal, end of name
    assert parse_depfile("a.o: x\\\\\\ y.h\n") == ["x\\ y.h"]
    assert parse_depfile("a.o: x\\\\ y.h\n") == ["x\\\\", "y.h"]
    assert parse_depfile("a.o: c\\d.h\n") == ["c\\d.h"]


def test_crlf_and_several_targets_and_duplicates():
    text = "a.o b.o: a.c \\\r\n common.h\r\nc.o: common.h c.c\r\n"
    assert parse_depfile(text) == ["a.c", "common.h", "c.c"]
    assert parse_rules(text)[0][0] == ["a.o", "b.o"]


def test_colon_inside_a_dependency_is_not_a_separator():
    assert parse_depfile("a.o: dir:x/y.h z.h\n") == ["dir:x/y.h", "z.h"]
    assert parse_depfile("a.o:: a.c\n") == ["a.c"]


def test_empty_and_target_only():
    assert parse_depfile("") == []
    assert parse_depfile("a.o:\n") == []
    assert parse_depfile("a.o:") == []


def test_read_depfile_reads_the_whole_file_and_decodes_as_asked(tmp_path):
    path = tmp_path / "a.d"
    name = b"caf\xe9.h"  # not UTF-8
    path.write_bytes(b"a.o: a.c " + name + b" " + b"x" * 200_000 + b"\n")
    text = read_depfile(str(path))
    assert parse_depfile(text)[:2] == ["a.c", name.decode("utf-8", "surrogateescape")]
    assert len(parse_depfile(text)[2]) == 200_000  # more than one read's worth
    assert parse_depfile(read_depfile(str(path), errors="replace"))[1] == "caf\ufffd.h"
    with pytest.raises(IsADirectoryError):
        read_depfile(str(tmp_path))
    with pytest.raises(FileNotFoundError):
        read_depfile(str(tmp_path / "missing.d"))


@pytest.mark.parametrize("text", [
    # a link's depfile: `-MP` adds one dependency-less rule per input, half the lines
    "app: a.o b.o \\\n  /usr/lib/libc.so\n\na.o:\n\nb.o:\n\n/usr/lib/libc.so:\n",
    # gcc's module rules: `.PHONY` names modules, `x.o: m.c++m` a module's CMI, never files
    "x.o gcm.cache/m.gcm: x.cc m.h\nx.o: m.c++m\n.PHONY: m.c++m\nm.c++m: gcm.cache/m.gcm\nm.h:\n",
    # a rule-less line, a colon inside names (one ending the line), a trailing blank
    "stray\ndir:x.h:\na.o: dir:x.h c.h  \n  \n",
])
def test_the_dependencies_are_those_of_the_rules(text):
    """`parse_depfile` skips the rules that name no dependency without parsing them: what it
    answers is still every dependency `parse_rules` reads, each once, modules' names left out."""
    expected: dict[str, None] = {}
    for targets, deps in parse_rules(text):
        if targets != [".PHONY"]:
            expected.update((d, None) for d in deps if not d.endswith(".c++m"))
    assert parse_depfile(text) == list(expected)
    assert "m.c++m" not in parse_depfile(text) and "stray" not in parse_depfile(text)
