"""Include scanning: a superset of the headers a compile can open, or None when unprovable."""
from __future__ import annotations

import os

from mcpp.engine.plan.include_scan import parse_includes, reachable


def test_parse_quoted_angled_and_next():
    src = b'#include "a.h"\n  #  include <b/c.hpp>\n#include_next <d.h>\n// #include "e.h"\n'
    # A directive behind `//` is not one (the line does not start with `#`).
    assert parse_includes(src) == (('"', "a.h"), ("<", "b/c.hpp"), ("<", "d.h"))


def test_computed_include_and_has_include_cannot_be_bounded():
    assert parse_includes(b"#include HEADER\n") is None
    assert parse_includes(b'#if __has_include("x.h")\n#endif\n') is None


def tree(tmp_path, files):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return {str(tmp_path / rel): rel for rel in files if rel.endswith((".h", ".hpp"))}


def directives(path):
    with open(path, "rb") as f:
        return parse_includes(f.read())


def test_transitive_headers_through_quotes_and_include_dirs(tmp_path):
    pool = tree(tmp_path, {
        "src/main.cpp": '#include "local.h"\n#include <lib/api.hpp>\n',
        "src/local.h": "#pragma once\n",
        "src/unused.h": "#pragma once\n",
        "include/lib/api.hpp": '#include "detail.hpp"\n',
        "include/lib/detail.hpp": "#if 0\n#include <lib/only_in_a_branch.hpp>\n#endif\n",
        "include/lib/only_in_a_branch.hpp": "",
        "include/lib/never.hpp": "",
    })
    found = reachable(str(tmp_path / "src/main.cpp"), [str(tmp_path / "include")], pool, directives)
    assert found == {"src/local.h", "include/lib/api.hpp", "include/lib/detail.hpp",
                     "include/lib/only_in_a_branch.hpp"}


def test_a_computed_include_anywhere_on_the_way_gives_up(tmp_path):
    pool = tree(tmp_path, {"src/main.cpp": '#include "a.h"\n', "src/a.h": "#include CONFIG_HEADER\n"})
    assert reachable(str(tmp_path / "src/main.cpp"), [], pool, directives) is None


def test_cycles_terminate(tmp_path):
    pool = tree(tmp_path, {"src/main.cpp": '#include "a.h"\n', "src/a.h": '#include "b.h"\n',
                           "src/b.h": '#include "a.h"\n'})
    assert reachable(str(tmp_path / "src/main.cpp"), [], pool, directives) == {"src/a.h", "src/b.h"}


def test_closures_shared_by_many_sources_answer_what_a_walk_per_source_does(tmp_path):
    """`closures` keeps what each header reaches for the next source: every answer must be the
    one a walk from scratch gives, cycles, quoted lookups beside each header and give-ups included."""
    import random

    rng = random.Random(7)
    files = {}
    headers = [f"inc/h{i}.h" for i in range(12)] + [f"inc/sub/s{i}.h" for i in range(4)]
    bounded = [h for h in headers if h != "inc/sub/s3.h"]
    for h in headers:
        names = rng.sample(bounded, 2) + (["inc/sub/s3.h"] if h == "inc/h0.h" else [])
        lines = [f'#include "{os.path.basename(n)}"' if os.path.dirname(n) == os.path.dirname(h)
                 else f"#include <{n[4:]}>" for n in names]
        files[h] = "\n".join(lines) + "\n"
    files["inc/sub/s3.h"] = "#include HEADER\n"  # one header nobody can bound
    for i in range(20):
        files[f"src/u{i}.cpp"] = "".join(f"#include <{n[4:]}>\n" for n in rng.sample(headers, 1))
    pool = tree(tmp_path, files)
    dirs = [str(tmp_path / "inc")]
    closures: dict = {}
    answers = set()
    for i in range(20):
        src = str(tmp_path / f"src/u{i}.cpp")
        alone = reachable(src, dirs, pool, directives)
        assert reachable(src, dirs, pool, directives, closures) == alone
        answers.add(alone is None)
    assert answers == {True, False}  # both kinds of answer were compared


def test_a_quoted_name_is_looked_up_beside_each_file_when_lookups_are_kept(tmp_path):
    """`candidates` keeps each directive's paths for the next file: the same quoted name in two
    directories still names each directory's own header."""
    pool = tree(tmp_path, {
        "src/a/main.cpp": '#include "local.h"\n',
        "src/a/local.h": "#pragma once\n",
        "src/b/main.cpp": '#include "local.h"\n',
        "src/b/local.h": "#pragma once\n",
    })
    candidates: dict = {}
    closures: dict = {}
    for d in ("a", "b"):
        src = str(tmp_path / "src" / d / "main.cpp")
        assert reachable(src, [], pool, directives, closures, candidates) == {f"src/{d}/local.h"}


def _reference(data: bytes):
    """parse_includes as it was written first: two expressions anchored at each line's start."""
    import re

    directive = re.compile(rb'^[ \t]*#[ \t]*(include_next|include|import)\b[ \t]*(.)', re.M)
    named = re.compile(rb'^[ \t]*#[ \t]*(?:include_next|include|import)\b[ \t]*([<"])([^>"\n]+)[>"]', re.M)
    if b"__has_include" in data:
        return None
    if any(m.group(2) not in (b'"', b"<") for m in directive.finditer(data)):
        return None
    return tuple((m.group(1).decode(), m.group(2).decode("utf-8", "replace")) for m in named.finditer(data))


def test_directives_are_found_from_their_hash_as_the_line_anchored_expressions_found_them():
    """parse_includes searches for `#` and checks the line's start (a large source scans in a
    fraction of the time): the same answer as the anchored expressions on lines built from the
    pieces where they could differ."""
    import random

    pieces = [b"#include <a.h>", b'  #  include "b.h"', b"\t#import <c>", b"#include_next <d.h>", b"x #include <e.h>",
              b'a = "#include <f.h>";', b"#include HEADER", b"#include\n<g.h>", b"#includes <h.h>", b"# include <>",
              b"#include <i.h", b" \r#include <j.h>", b"// #include <k.h>", b"#define X 1", b"int main() {}", b"#",
              b"##include <l.h>", b"#include <m.h> // #include <n.h>", b"\xff\xfe#include <\xc3\xa9.h>"]
    rng = random.Random(38)
    for _ in range(3000):
        data = b"\n".join(rng.choice(pieces) for _ in range(rng.randint(0, 6)))
        assert parse_includes(data) == _reference(data), data
    big = b"\n".join([b"// generated", b"#include <cstdio>"] + [b"unsigned f%d(unsigned);" % i for i in range(20000)])
    assert parse_includes(big) == (("<", "cstdio"),)
