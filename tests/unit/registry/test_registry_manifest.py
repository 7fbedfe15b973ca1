"""Index dependencies in a manifest (engine/manifest/deps.py) and library releases in a
descriptor (engine/payloads/descriptor.py)."""
from __future__ import annotations

import pytest

from mcpp.engine.core.errors import ManifestError
from mcpp.engine.manifest.load import parse_manifest
from mcpp.engine.payloads.descriptor import parse_descriptor
from mcpp.engine.payloads.errors import PayloadError
from mcpp.engine.registry.presence import has_index_entries
from mcpp.engine.registry.requirements import read_entries

HEAD = '[package]\nname = "app"\nversion = "0.1.0"\n\n'


def manifest(tmp_path, body: str):
    path = tmp_path / "mcpp.toml"
    path.write_text(HEAD + body)
    return parse_manifest(str(path))


def test_the_spellings_of_an_index_dependency(tmp_path):
    src = manifest(tmp_path, '[features]\nx = []\n\n[dependencies]\ngreet = "1.2"\n'
                             'shout = { version = "~1", features = ["loud"], default-features = false }\n'
                             'extra.calc = ">=1, <2"\n\n[dev-dependencies]\ntester = "*"\n\n'
                             '[feature-deps.x]\nfancy = "=1.0.0"\n')
    deps = {d.key: d for d in src.base.dependencies}
    assert deps["greet"].index and deps["greet"].namespace == "mcpplibs" and deps["greet"].version == "1.2"
    assert deps["shout"].features == ("loud",) and deps["shout"].default_features is False
    assert deps["calc"].namespace == "extra" and deps["calc"].version == ">=1, <2"
    assert src.base.dev_dependencies[0].index and src.base.feature_deps["x"][0].key == "fancy"
    got = sorted((r.namespace, r.name, r.requirement) for r in read_entries(src, "app", dev=True).index)
    assert got == [("extra", "calc", ">=1, <2"), ("mcpplibs", "fancy", "=1.0.0"), ("mcpplibs", "greet", "1.2"),
                   ("mcpplibs", "shout", "~1"), ("mcpplibs", "tester", "*")]
    assert [r.name for r in read_entries(src, "app", dev=False).index if r.name == "tester"] == []


def test_a_conditional_section_is_read_whatever_the_build(tmp_path):
    src = manifest(tmp_path, "[target.'cfg(os = \"windows\")'.dependencies]\nwinonly = \"1\"\n")
    assert has_index_entries(src.doc)
    assert [r.name for r in read_entries(src, "app", dev=False).index] == ["winonly"]


def test_a_path_dependency_with_a_version_is_a_path_dependency_here_and_a_requirement_once_published(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "mcpp.toml").write_text('[package]\nname = "lib"\nversion = "0.3.1"\n')
    src = manifest(tmp_path, '[dependencies]\nlib = { path = "lib", version = "0.3" }\n')
    assert not src.base.dependencies[0].index and not has_index_entries(src.doc)
    here = read_entries(src, "app", dev=False)
    assert here.index == () and here.paths == (str(tmp_path / "lib"),)
    published = read_entries(src, "app 0.1.0", dev=False, origin=("mcpplibs", "app", "0.1.0"))
    assert [(r.name, r.requirement) for r in published.index] == [("lib", "0.3")] and published.paths == ()


def test_a_project_of_path_dependencies_has_no_index_entries(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "mcpp.toml").write_text('[package]\nname = "lib"\nversion = "0.3.1"\n')
    src = manifest(tmp_path, '[dependencies]\nlib = { path = "lib" }\n\n[build-dependencies.mcpp]\n'
                             'plugins = { version = "0.3.0", host-module = true }\n')
    assert not has_index_entries(src.doc)


@pytest.mark.parametrize("body, message, line", [
    ('[dependencies]\ngreet = "1.x"\n', "`1.x` is not a version requirement", 6),
    ('[dependencies]\ngreet = { features = ["a"] }\n', "needs a `version`", 6),
    ('[dependencies]\ngreet = { version = "^^1" }\n', "is not a version requirement", 6),
    ('[dependencies]\n"../x" = "1"\n', "use letters, digits", 6),
])
def test_a_bad_index_dependency_is_refused_at_its_position(tmp_path, body, message, line):
    with pytest.raises(ManifestError) as e:
        manifest(tmp_path, body)
    assert message in e.value.message and e.value.pos is not None and e.value.pos.line == line


LIB = '''
[package]
name = "greet"
namespace = "mcpplibs"
[[release]]
version = "1.0.0"
source = { url = "archives/greet-1.0.0.tar.zst", blake3 = "%s", size = 12, strip = 1 }
yanked = true
[[release]]
version = "1.1.0"
source = { url = "archives/greet-1.1.0.tar.zst", blake3 = "%s" }
''' % ("ab" * 32, "cd" * 32)


def test_a_library_release_has_a_source_and_may_be_yanked():
    d = parse_descriptor(LIB, "idx/pkgs/mcpplibs/greet.toml", "mcpplibs", "greet")
    assert [(r.version, r.yanked, r.library.blake3[:2]) for r in d.releases] == [("1.0.0", True, "ab"),
                                                                              ("1.1.0", False, "cd")]
    assert d.versions_for("linux-x86_64") == []  # no payload for any platform


@pytest.mark.parametrize("old, new, message", [
    ("yanked = true", 'yanked = "yes"', "`yanked` must be true or false"),
    ('source = { url = "archives/greet-1.1.0.tar.zst", blake3 = "%s" }' % ("cd" * 32),
     'source = { dir = "trees/greet" }', "a library's `source` is an archive"),
])
def test_a_malformed_library_release_is_refused(old, new, message):
    text = LIB.replace(old, new)
    with pytest.raises(PayloadError, match=message):
        parse_descriptor(text, "idx/pkgs/mcpplibs/greet.toml", "mcpplibs", "greet")


@pytest.mark.parametrize("body, message", [
    ('[source]\nvendor = "../elsewhere"\n', "`vendor` must be a directory inside the workspace"),
    ('[source]\nvendor = 3\n', "`vendor` must be a directory inside the workspace"),
    ('[source]\nregistry = "x"\n', "unknown key `registry` in [source]"),
])
def test_a_bad_source_table_is_refused_at_its_position_with_or_without_index_dependencies(tmp_path, body, message):
    with pytest.raises(ManifestError) as e:
        manifest(tmp_path, body)
    assert message in e.value.message and e.value.pos is not None and e.value.pos.line == 6


def test_the_source_table_names_the_vendor_directory(tmp_path):
    assert manifest(tmp_path, '[source]\nvendor = "third_party/vendor"\n').base.vendor == str(
        tmp_path / "third_party" / "vendor")
