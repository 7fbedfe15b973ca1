"""The key registry (engine/manifest/schema.py) and docs/manifest.md agree: every key documented
with its plane and case, every key not acted on marked so; naming checks come from the registry."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcpp.engine.manifest import schema, selectors, triples

DOC = (Path(__file__).resolve().parents[2] / "docs" / "manifest.md").read_text()
CASE_WORDS = {schema.KEBAB: "kebab-case", schema.SNAKE: "snake_case"}


def section_of(table: schema.Table) -> str:
    m = re.search(rf"^### `\[{re.escape(table.name)}\]`\n(.*?)(?=^##)", DOC, re.S | re.M)
    assert m, f"docs/manifest.md has no section ### `[{table.name}]`"
    return m.group(1)


@pytest.mark.parametrize("table", schema.ALL_TABLES, ids=lambda t: t.name)
def test_every_key_is_documented_with_its_plane_and_case(table):
    text = section_of(table)
    assert f"Case: {CASE_WORDS[table.case]}." in text
    if table is not schema.TOP:
        assert f"Plane: {table.plane}." in text
    for key in table.keys:
        row = re.search(rf"^\| `{re.escape(key)}` \|.*$", text, re.M)
        assert row, f"[{table.name}] key `{key}` is not documented"
        assert ("validated only" in row.group(0)) == (key in table.pending), row.group(0)


def test_every_plane_and_section_plane_is_documented():
    for plane, what in schema.PLANES.items():
        assert f"| {plane} |" in DOC and what in DOC
    for section, plane in schema.SECTION_PLANES.items():
        assert plane in schema.PLANES and section in schema.TOP.keys


def test_selector_vocabulary_is_documented():
    for name, values in selectors.PREDICATES.items():
        assert f"| `{name}` |" in DOC
        for v in values or ():
            assert f"`{v}`" in DOC
    for word in (*selectors.ALIASES, *selectors.COMBINATORS, *selectors.RESOLVED_LAYERS,
                 *schema.ADDITIVE_BUILD_KEYS, *schema.PLATFORM_KEYS, *triples.ENVS):
        assert f"`{word}" in DOC, word


@pytest.mark.parametrize("key,known,expected", [
    ("include-dirs", schema.BUILD.keys, "include_dirs"),
    ("default_features", schema.DEPENDENCY.keys, "default-features"),
    ("host_module", schema.DEPENDENCY.keys, "host-module"),
    ("dev_dependencies", schema.TOP.keys, "dev-dependencies"),
    ("feature_deps", schema.TOP.keys, "feature-deps"),
    ("rule-module", schema.FEATURE.keys, "rule_module"),
    ("Include_Dirs", schema.BUILD.keys, "include_dirs"),
    ("flavour", schema.PACKAGE.keys, None),
    ("include_dirs", schema.BUILD.keys, None),  # already right
])
def test_wrong_case_names_the_right_key(key, known, expected):
    assert schema.did_you_mean(key, known) == expected


def test_each_table_keeps_one_case():
    """A table's multi-word keys all follow its surface's case (SPEC-004 §5.1)."""
    for table in schema.ALL_TABLES:
        for key in table.keys:
            assert schema.case_of(key) in (None, table.case), (table.name, key)
