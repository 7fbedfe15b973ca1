"""Every command the documentation shows is run, and prints what the documentation says it prints.

One test per document (README.md, docs/*.md, examples/*/README.md): its `console` blocks run in
order in a workspace with a copy of examples/ and a fresh $MCPP_HOME, compared as
tests/docs/doc_blocks.py describes (the convention, its markers and its few normalisations).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.docs import doc_blocks
from tests.docs.doc_blocks import Session, blocks, commands, is_session, matches, normalised
from tests.e2e.e2e_support import EXAMPLES, REPO, mcpp_executable

DOCUMENTS = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md"), *EXAMPLES.glob("*/README.md")])


def _session(tmp_path: Path) -> Session:
    return Session(tmp_path / "ws", EXAMPLES, mcpp_executable(), dict(os.environ))


@pytest.mark.heavy
@pytest.mark.parametrize("document", DOCUMENTS, ids=[str(d.relative_to(REPO)) for d in DOCUMENTS])
def test_the_documented_commands_print_what_the_document_shows(document: Path, tmp_path):
    text = document.read_text()
    session = _session(tmp_path)
    failures = session.play(blocks(text, str(document.relative_to(REPO))), is_session(text))
    assert not failures, "\n\n".join(failures)
    if session.skipped:
        pytest.skip("; ".join(session.skipped))


def test_the_tutorial_and_the_readme_are_covered():
    """The documents the issue names are found, and each runs at least one command."""
    names = [str(d.relative_to(REPO)) for d in DOCUMENTS]
    assert {"README.md", "docs/tutorial.md", "examples/10-payloads/README.md"} <= set(names)
    for name in ("README.md", "docs/tutorial.md"):
        consoles = [b for b in blocks((REPO / name).read_text(), name)
                    if b.lang == "console" and b.marker("illustrative") is None]
        assert consoles and all(commands(b) for b in consoles), name


# -- the harness itself: a wrong documented output fails, the markers do what they say ---------

WRONG = """\
Some prose.

```console
$ echo hello
goodbye
```
"""


def test_a_wrong_documented_output_is_a_failure_that_shows_the_difference(tmp_path):
    failures = _session(tmp_path).play(blocks(WRONG, "doc.md"))
    assert len(failures) == 1
    assert failures[0].startswith("doc.md:4: `$ echo hello` printed something else")
    assert "-goodbye" in failures[0] and "+hello" in failures[0]


def test_markers_files_directories_and_both_streams(tmp_path):
    doc = """\
<!-- file: sub/note.txt -->
```text
written by the document
```

<!-- illustrative -->
```sh
make test
```

```console
$ cd sub && cat note.txt
written by the document
$ echo out; echo err >&2; echo out again
out
err
out again
$ pwd
/…/sub
```
"""
    session = _session(tmp_path)
    assert session.play(blocks(doc, "doc.md")) == []
    unmarked = "```sh\nmake test\n```\n"
    [failure] = _session(tmp_path / "again").play(blocks(unmarked, "doc.md"))
    assert "a `sh` block is neither run nor marked" in failure


def test_the_normalisations_are_the_documented_few():
    assert normalised("    Finished dev in 0.41s (3 cached)\nran 12ms  \n\n") == [
        "    Finished dev in <time> (3 cached)", "ran <time>"]
    assert normalised("sum=1048576.0 x2s") == ["sum=1048576.0 x2s"]
    assert matches(["key: …", "…", "end"], ["key: 8adc2a", "a", "b", "end"])
    assert matches(["a", "…", "b"], ["a", "b"])
    assert not matches(["key: …"], ["key: 1", "more"])
    assert not matches(["a"], ["a", "b"])


def test_a_requirement_not_met_skips_the_block_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(doc_blocks, "requirement_missing", lambda what: f"needs {what} for this test")
    doc = "<!-- needs: cuda-gpu -->\n```console\n$ false\nnever compared\n```\n"
    session = _session(tmp_path)
    assert session.play(blocks(doc, "doc.md")) == []
    assert session.skipped == ["doc.md:2: needs cuda-gpu for this test"]
