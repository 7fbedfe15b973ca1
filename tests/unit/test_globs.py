"""Source globs: pattern syntax, exclusions, what the walk enters and skips, speed."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcpp.engine.core.errors import ManifestError
from mcpp.engine.manifest import globs
from mcpp.engine.manifest.globs import expand, match


def tree(root: Path, *files: str) -> str:
    for f in files:
        p = root / f
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("")
    return str(root)


@pytest.fixture
def proj(tmp_path: Path) -> str:
    return tree(
        tmp_path,
        "main.cpp",
        "util.cc",
        "README.md",
        "src/a.cpp",
        "src/b.cpp",
        "src/b.h",
        "src/x/c.cpp",
        "src/x/y/d.cpp",
        "src/x/y/d.hpp",
        "src/legacy/old.cpp",
        "src/legacy/deep/older.cpp",
        "lib/a/one.cpp",
        "lib/b/two.cpp",
        "lib/b/c/three.cpp",
        "lib/d/four.cpp",
        "test/t1.cpp",
        "test/t2.cpp",
    )


# -- match ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern, path, expected",
    [
        ("*.cpp", "a.cpp", True),
        ("*.cpp", "src/a.cpp", False),  # `*` stays within a segment
        ("src/*.cpp", "src/a.cpp", True),
        ("src/*.cpp", "src/x/a.cpp", False),
        ("src/*", "src/a.cpp", True),
        ("a?.cpp", "ab.cpp", True),
        ("a?.cpp", "a.cpp", False),
        ("a?.cpp", "a/.cpp", False),  # `?` does not match `/`
        ("[abc].cpp", "b.cpp", True),
        ("[abc].cpp", "d.cpp", False),
        ("[a-c]x.cpp", "cx.cpp", True),
        ("[!a]x.cpp", "ax.cpp", False),
        ("[!a]x.cpp", "bx.cpp", True),
        ("[^a]x.cpp", "bx.cpp", True),
        ("x[!a]y", "x/y", False),  # a negated class does not match `/`
        ("[]]x", "]x", True),  # a leading `]` is a member
        ("[x", "[x", True),  # an unclosed `[` is literal
        ("src/**/*.cpp", "src/a.cpp", True),  # `**` matches zero directories
        ("src/**/*.cpp", "src/x/y/a.cpp", True),
        ("src/**/*.cpp", "srcx/a.cpp", False),
        ("**/*.cpp", "a.cpp", True),
        ("**/*.cpp", "a/b/c.cpp", True),
        ("src/**", "src/a/b/c.h", True),
        ("src/**", "src", False),
        ("a/**/b/*.c", "a/b/x.c", True),
        ("a/**/b/*.c", "a/q/r/b/x.c", True),
        ("a/**/b/*.c", "a/q/rb/x.c", False),
        ("a**b.c", "axyb.c", True),  # `**` inside a segment is just `*`
        ("a**b.c", "ax/yb.c", False),
        ("{a,b}.cpp", "a.cpp", True),
        ("{a,b}.cpp", "c.cpp", False),
        ("src/{a,b/{c,d}}/*.cpp", "src/b/d/x.cpp", True),
        ("src/{a,b/{c,d}}/*.cpp", "src/b/x.cpp", False),
        ("{src/**/*.cpp,*.cc}", "util.cc", True),
        ("{src/**/*.cpp,*.cc}", "src/q/z.cpp", True),
        ("{a", "{a", True),  # an unbalanced brace is literal
        ("a,b", "a,b", True),
        ("*.cpp", ".hidden.cpp", False),  # wildcards never match a leading dot
        (".*.cpp", ".hidden.cpp", True),
        ("**/*.cpp", ".git/a.cpp", False),
        ("src/main.cpp", "src/main.cpp", True),
        ("./src/main.cpp", "src/main.cpp", True),
        ("src//main.cpp", "./src/main.cpp", True),
        ("a+b(c).cpp", "a+b(c).cpp", True),  # regex characters are literal
        ("!src/*.cpp", "src/a.cpp", True),  # `match` asks about the glob itself
    ],
)
def test_match(pattern, path, expected):
    assert match(pattern, path) is expected


@pytest.mark.parametrize("pattern", ["", "/abs/*.cpp", "../x/*.cpp", "src/../../x.cpp", "./"])
def test_invalid_patterns(tmp_path, pattern):
    with pytest.raises(ManifestError):
        expand(str(tmp_path), [pattern])


def test_compiled_patterns_are_cached():
    assert globs._compile("src/**/*.cpp") is globs._compile("src/**/*.cpp")


# -- expand ---------------------------------------------------------------------------------------


def test_empty_pattern_list(proj):
    assert expand(proj, []) == []


def test_star_within_one_directory(proj):
    assert expand(proj, ["src/*.cpp"]) == ["src/a.cpp", "src/b.cpp"]
    assert expand(proj, ["*.cpp"]) == ["main.cpp"]


def test_double_star(proj):
    assert expand(proj, ["src/**/*.cpp"]) == [
        "src/a.cpp",
        "src/b.cpp",
        "src/legacy/deep/older.cpp",
        "src/legacy/old.cpp",
        "src/x/c.cpp",
        "src/x/y/d.cpp",
    ]


def test_double_star_in_the_middle(proj):
    assert expand(proj, ["lib/**/c/*.cpp"]) == ["lib/b/c/three.cpp"]


def test_trailing_double_star(proj):
    assert expand(proj, ["src/x/**"]) == ["src/x/c.cpp", "src/x/y/d.cpp", "src/x/y/d.hpp"]


def test_wildcard_directory_segment(proj):
    assert expand(proj, ["lib/*/*.cpp"]) == ["lib/a/one.cpp", "lib/b/two.cpp", "lib/d/four.cpp"]


def test_question_mark_and_classes(proj):
    assert expand(proj, ["test/t?.cpp"]) == ["test/t1.cpp", "test/t2.cpp"]
    assert expand(proj, ["test/t[2-9].cpp"]) == ["test/t2.cpp"]
    assert expand(proj, ["test/t[!2].cpp"]) == ["test/t1.cpp"]


def test_braces(proj):
    assert expand(proj, ["{main.cpp,util.cc}"]) == ["main.cpp", "util.cc"]
    assert expand(proj, ["src/*.{cpp,h}"]) == ["src/a.cpp", "src/b.cpp", "src/b.h"]


def test_nested_braces_with_slashes(proj):
    got = expand(proj, ["{lib/{a,b/c},src/x/y}/*.{cpp,hpp}"])
    assert got == ["lib/a/one.cpp", "lib/b/c/three.cpp", "src/x/y/d.cpp", "src/x/y/d.hpp"]


def test_literal_paths(proj):
    assert expand(proj, ["main.cpp", "src/x/c.cpp"]) == ["main.cpp", "src/x/c.cpp"]


def test_literal_path_that_does_not_exist_or_is_a_directory(proj):
    assert expand(proj, ["nope.cpp", "src", "src/x"]) == []


def test_union_sorted_and_unique(proj):
    got = expand(proj, ["src/*.cpp", "src/**/*.cpp", "src/a.cpp", "*.cpp"])
    assert got == sorted(set(got))
    assert got.count("src/a.cpp") == 1
    assert got[0] == "main.cpp"


def test_exclusions(proj):
    assert expand(proj, ["src/**/*.cpp", "!src/legacy/**"]) == [
        "src/a.cpp",
        "src/b.cpp",
        "src/x/c.cpp",
        "src/x/y/d.cpp",
    ]


def test_exclusion_order_does_not_matter(proj):
    a = expand(proj, ["!src/x/**", "src/**/*.cpp", "!src/b.cpp"])
    b = expand(proj, ["src/**/*.cpp", "!src/b.cpp", "!src/x/**"])
    assert a == b == ["src/a.cpp", "src/legacy/deep/older.cpp", "src/legacy/old.cpp"]


def test_exclusion_with_wildcards_and_braces(proj):
    assert expand(proj, ["lib/**/*.cpp", "!lib/{a,d}/*"]) == ["lib/b/c/three.cpp", "lib/b/two.cpp"]


def test_exclusions_only(proj):
    assert expand(proj, ["!src/**"]) == []


def test_exclusion_beats_a_literal(proj):
    assert expand(proj, ["main.cpp", "!*.cpp"]) == []


def test_hidden_directories_are_not_entered(tmp_path):
    root = tree(tmp_path, "a.cpp", ".git/x.cpp", "src/.cache/y.cpp", "src/z.cpp", "src/.w.cpp")
    assert expand(root, ["**/*.cpp"]) == ["a.cpp", "src/z.cpp"]
    # a written dot matches a hidden file; hidden directories are still skipped
    assert expand(root, ["**/.*.cpp"]) == ["src/.w.cpp"]


def test_named_hidden_directory_is_walked(tmp_path):
    root = tree(tmp_path, ".gen/x.cpp", ".gen/sub/y.cpp")
    assert expand(root, [".gen/**/*.cpp"]) == [".gen/sub/y.cpp", ".gen/x.cpp"]


def test_top_level_target_is_not_entered(tmp_path):
    root = tree(tmp_path, "target/debug/gen.cpp", "src/target/keep.cpp", "a.cpp")
    assert expand(root, ["**/*.cpp"]) == ["a.cpp", "src/target/keep.cpp"]
    assert expand(root, ["*/*/*.cpp"]) == ["src/target/keep.cpp"]


def test_target_named_literally_is_walked(tmp_path):
    root = tree(tmp_path, "target/gen/x.cpp")
    assert expand(root, ["target/gen/*.cpp"]) == ["target/gen/x.cpp"]
    assert expand(root, ["target/gen/x.cpp"]) == ["target/gen/x.cpp"]


def test_symlink_to_file_is_followed_and_broken_links_skipped(tmp_path):
    root = tree(tmp_path, "real/a.cpp")
    os.symlink("../real/a.cpp", tmp_path / "real" / "link.cpp")
    os.symlink("missing.cpp", tmp_path / "real" / "broken.cpp")
    assert expand(root, ["real/*.cpp"]) == ["real/a.cpp", "real/link.cpp"]
    assert expand(root, ["real/broken.cpp"]) == []


def test_symlinked_directory_outside_the_boundary_is_refused_naming_the_link(tmp_path):
    tree(tmp_path, "outside/ext.cpp", "outside/sub/deep.cpp")
    root = tree(tmp_path / "proj", "src/a.cpp")
    os.symlink(tmp_path / "outside", tmp_path / "proj" / "src" / "ext")
    with pytest.raises(ManifestError, match=r"`src/ext` leads outside .*`.*proj/src/ext` is a symlink to"):
        expand(root, ["src/**/*.cpp"])
    # Inside a wider boundary (a workspace, say), it is walked as before.
    got = expand(root, ["src/**/*.cpp"], boundary=str(tmp_path))
    assert got == ["src/a.cpp", "src/ext/ext.cpp", "src/ext/sub/deep.cpp"]


def test_symlinks_to_host_files_and_directories_are_refused(tmp_path):
    root = tree(tmp_path, "src/a.cpp", "notes/readme.txt")
    os.symlink("/etc/hostname", tmp_path / "src" / "leak.cpp")
    os.symlink("/", tmp_path / "rootlink")
    os.symlink("/etc/passwd", tmp_path / "notes" / "passwd.txt")  # never selected: harmless
    with pytest.raises(ManifestError, match="`src/leak.cpp` leads outside"):
        expand(root, ["src/*.cpp"])
    with pytest.raises(ManifestError, match="rootlink` is a symlink to `/`"):
        expand(root, ["rootlink/etc/*"])
    with pytest.raises(ManifestError, match="rootlink` is a symlink to `/`"):
        expand(root, ["rootlink/etc/passwd"])
    with pytest.raises(ManifestError, match="rootlink"):
        expand(root, ["**/passwd"])  # the walk would enter it
    assert expand(root, ["src/a.cpp", "notes/*.md"]) == ["src/a.cpp"]


def test_a_root_reached_through_a_symlink_out_of_the_boundary_is_refused(tmp_path):
    tree(tmp_path, "pkg/src/a.cpp")
    os.symlink("/usr", tmp_path / "pkg" / "inc")
    with pytest.raises(ManifestError, match="`.*pkg/inc` is a symlink to `/usr`"):
        expand(str(tmp_path / "pkg" / "inc"), ["**/*"], boundary=str(tmp_path / "pkg"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a directory at mode 000")
def test_an_unreadable_directory_is_an_error_naming_it(tmp_path):
    root = tree(tmp_path, "src/a.cpp")
    os.chmod(tmp_path / "src", 0)
    try:
        with pytest.raises(ManifestError, match="cannot read directory `.*src`"):
            expand(root, ["src/**/*.cpp"])
    finally:
        os.chmod(tmp_path / "src", 0o755)


def test_symlink_loop_terminates(tmp_path):
    root = tree(tmp_path, "src/a.cpp", "src/sub/b.cpp")
    os.symlink("..", tmp_path / "src" / "sub" / "up")
    os.symlink(".", tmp_path / "src" / "self")
    assert expand(root, ["**/*.cpp"]) == ["src/a.cpp", "src/sub/b.cpp"]


def test_symlink_to_a_walked_directory_does_not_duplicate(tmp_path):
    root = tree(tmp_path, "src/core/a.cpp", "src/core/x/b.cpp")
    os.symlink("core", tmp_path / "src" / "alias")  # sorts before core: the real path still wins
    assert expand(root, ["src/**/*.cpp"]) == ["src/core/a.cpp", "src/core/x/b.cpp"]


def test_missing_root_directory_of_pattern(proj):
    assert expand(proj, ["nope/**/*.cpp", "src/*.h"]) == ["src/b.h"]


def test_walks_only_the_literal_prefix_and_each_directory_once(proj, monkeypatch):
    seen = []
    real = os.scandir

    def spy(path):
        seen.append(os.path.relpath(path, proj))
        return real(path)

    monkeypatch.setattr(globs.os, "scandir", spy)
    got = expand(proj, ["src/x/**/*.cpp", "src/x/**/*.hpp", "src/x/*.cpp", "lib/b/*.cpp"])
    assert got == ["lib/b/two.cpp", "src/x/c.cpp", "src/x/y/d.cpp", "src/x/y/d.hpp"]
    assert sorted(seen) == ["lib/b", "src/x", "src/x/y"]


def test_depth_limited_walk_does_not_descend(proj, monkeypatch):
    seen = []
    real = os.scandir
    monkeypatch.setattr(globs.os, "scandir", lambda p: (seen.append(p), real(p))[1])
    expand(proj, ["*.cpp"])
    assert len(seen) == 1


def test_recursive_patterns_and_excludes_over_many_files(tmp_path):
    """How long the expansion takes is measured by bench/hot_loops.py."""
    files = [
        f"src/m{i}/s{j}/f{k}.{ext}"
        for i in range(20)
        for j in range(5)
        for k in range(10)
        for ext in ("cpp", "h")
    ]
    root = tree(tmp_path, *files, "target/x/y.cpp", ".git/objects/z.cpp")
    patterns = ["src/**/*.cpp", "src/**/*.h", "**/*.cpp", "!src/m1/**", "!src/*/s4/f9.h"]
    got = expand(root, patterns)
    assert len(got) == 2000 - 100 - 19


def test_a_servers_remembered_expansion_is_taken_only_where_its_watcher_looks(tmp_path):
    """A warm server's build is given the previous build's expansions (no directory changed shape
    since): taken for a root the watcher covers, with patterns that stay out of the directories
    it skips; expanded again otherwise. Every expansion made is handed on."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src/a.cpp").write_text("")
    (tmp_path / ".gen").mkdir()
    (tmp_path / ".gen/b.cpp").write_text("")
    root = str(tmp_path)
    remembered = {(root, ("src/*.cpp",), None): ["src/remembered.cpp"],
                  (root, (".gen/*.cpp",), None): ["remembered"]}
    watched = globs.Expansions(remembered, frozenset({root}))
    assert watched.expand(root, ["src/*.cpp"]) == ["src/remembered.cpp"]
    assert watched.expand(root, [".gen/*.cpp"]) == [".gen/b.cpp"]  # the watcher skips dot directories
    elsewhere = globs.Expansions(remembered, frozenset({str(tmp_path / "other")}))
    assert elsewhere.expand(root, ["src/*.cpp"]) == ["src/a.cpp"]
    assert elsewhere.made[(root, ("src/*.cpp",), None)] == ["src/a.cpp"]
    assert globs.expand(root, ["src/*.cpp"]) == ["src/a.cpp"]  # in process: nothing remembered


@pytest.mark.parametrize("patterns", [["src/*.cpp"], ["src/**/*"], ["src/x.cpp"], ["src/{x,y}.cpp"]])
def test_a_selected_fifo_is_named_never_opened_nor_left_out(tmp_path, patterns):
    root = tree(tmp_path, "src/a.cpp")
    os.mkfifo(tmp_path / "src" / "x.cpp")  # opening it would block
    with pytest.raises(ManifestError, match=r"`src/x.cpp` is not a regular file \(a FIFO\)"):
        expand(root, patterns)


def test_a_link_to_a_fifo_is_named(tmp_path):
    root = tree(tmp_path, "src/a.cpp")
    os.mkfifo(tmp_path / "src" / "pipe")
    os.symlink("pipe", tmp_path / "src" / "x.cpp")
    with pytest.raises(ManifestError, match="`src/x.cpp` is not a regular file"):
        expand(root, ["src/*.cpp"])


def test_special_files_no_pattern_selects_are_no_concern(tmp_path):
    root = tree(tmp_path, "src/a.cpp")
    os.mkfifo(tmp_path / "src" / "x.txt")
    os.mkfifo(tmp_path / "src" / "x.cpp")
    os.symlink("nowhere", tmp_path / "src" / "dangling.cpp")  # a broken link stays left out
    assert expand(root, ["src/*.cpp", "!src/x.cpp"]) == ["src/a.cpp"]


def test_a_selected_name_that_is_not_utf8_is_named_with_its_bytes_escaped(tmp_path):
    root = tree(tmp_path, "src/a.cpp")
    os.close(os.open(os.fsencode(tmp_path / "src") + b"/\xff.cpp", os.O_CREAT | os.O_WRONLY, 0o644))
    with pytest.raises(ManifestError, match=r"file name `src/\\xff.cpp` is not UTF-8"):
        expand(root, ["src/*.cpp"])
    assert expand(root, ["src/a.*"]) == ["src/a.cpp"]


def test_the_union_of_patterns_differing_in_their_extension_is_one_alternative_matching_the_same_paths():
    """The default source and header globs (fifteen and eleven `src/**/*.EXT`) compile as one
    expression each, a fraction of the size, matching exactly what the patterns match alone."""
    import re

    from mcpp.engine.core.conventions import DEFAULT_GLOBS, HEADER_GLOBS
    from mcpp.engine.manifest.globs import _compile, _union

    mixed = ("src/**/*.c", "src/**/*.C", "include/*.h", "a/{b,c}/*.cpp", "x/**", "lib/*.c++", "*.cpp", "src/*.c")
    paths = ["src/a.c", "src/x/y.cpp", "src/.h/a.c", "src/.a.c", "src/a.C", "src/a.cppm", "src/a.c.bak",
             "src/a/b/c.hpp", "include/a.h", "include/x/a.h", "a/b/x.cpp", "a/d/x.cpp", "x/q", "lib/a.c++",
             "lib/b/a.c++", "a.cpp", "src/a.h++", "src/a.s", "src/a.sx", "src/x", "src/a.cxxm", "src/a.", "src/.c"]
    for patterns in (tuple(DEFAULT_GLOBS), tuple(HEADER_GLOBS), mixed):
        alone = [re.compile(_compile(p).source) for p in patterns]
        union = _union(patterns)
        for path in paths:
            assert bool(union.fullmatch(path)) == any(r.fullmatch(path) for r in alone), (patterns, path)
    assert len(_union(tuple(DEFAULT_GLOBS)).pattern) < 3 * len(_compile(DEFAULT_GLOBS[0]).source)  # not fifteen


# -- `first`: one file of the expansion, without listing the whole tree ---------------------------

@pytest.mark.parametrize("patterns", [
    ["src/**/*.cpp"], ["src/**/*.cpp", "!src/a.cpp"], ["src/x/**/*.cpp"], ["src/*/*.cpp"], ["**/*.hpp"],
    ["lib/**/*.cpp", "!lib/a/**"], ["*.cc", "src/**/*.cpp"], ["{lib,src}/**/*.cpp"],
])
def test_first_is_a_file_the_expansion_holds_the_first_in_name_order(proj, patterns):
    found = globs.first(proj, patterns)
    everything = expand(proj, patterns)
    assert found in everything
    # each directory in name order, its files before its subdirectories
    in_walk_order = [[(1, d) for d in f.split("/")[:-1]] + [(0, f.split("/")[-1])] for f in everything]
    assert found.split("/") == [name for _, name in min(in_walk_order)]


def test_first_skips_dot_directories_and_the_roots_target_as_the_walk_does(tmp_path):
    root = tree(tmp_path, ".hidden/a.cpp", "target/a.cpp", "zz/a.cpp")
    assert globs.first(root, ["**/*.cpp"]) == "zz/a.cpp" == expand(root, ["**/*.cpp"])[0]
    assert globs.first(root, ["src/**/*.cpp"]) is None  # nothing there


def test_first_leaves_links_and_odd_names_to_the_expansion(tmp_path):
    """A symlink (to a file, a directory, or above the walk's base) or a name that is not ASCII:
    the quick look says nothing, and `expand`'s checks (containment, UTF-8) decide."""
    root = tree(tmp_path / "p", "src/b.cpp")
    os.symlink("b.cpp", os.path.join(root, "src", "a.cpp"))
    assert globs.first(root, ["src/**/*.cpp"]) is None
    other = tree(tmp_path / "q", "real/a.cpp")
    os.symlink("real", os.path.join(other, "src"))
    assert globs.first(other, ["src/**/*.cpp"]) is None
    odd = tree(tmp_path / "r", "src/\u00e9.cpp")
    assert globs.first(odd, ["src/**/*.cpp"]) is None
