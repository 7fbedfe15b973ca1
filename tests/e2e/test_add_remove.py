"""`mcpp add` and `mcpp remove` (docs/dependencies.md, "Adding and removing"): the manifest is
edited keeping its comments and layout (the exact resulting text is asserted), the requirement
comes from the library index, and every refusal is a clear error that leaves the file alone."""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import blake3
import pytest
import zstandard


MANIFEST = """\
# my application
[package]
name = "app"      # the binary
version = "0.1.0"

[dependencies]
# formatting
fmt = { path = "../fmt" }   # vendored

[features]
fast = []
"""

FEATURES = "[features]\ncolor = []\nwide = []\nloud = []\n"


def _archive(index: Path, ns: str, name: str, version: str) -> tuple[str, str, int]:
    """A real release archive of a tiny library (its module, features `color`, `wide`, `loud`),
    written into `index/archives/`: (its url in the index, its blake3, its size)."""
    files = {"mcpp.toml": f'[package]\nname = "{name}"\nversion = "{version}"\nnamespace = "{ns}"\n\n{FEATURES}',
             f"src/{name}.cppm": f"export module {name};\nexport namespace {name} {{ int v() {{ return 1; }} }}\n"}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for rel, text in sorted(files.items()):
            info = tarfile.TarInfo(f"{name}-{version}/{rel}")
            info.size, info.mode = len(text.encode()), 0o644
            t.addfile(info, io.BytesIO(text.encode()))
    data = zstandard.ZstdCompressor().compress(buf.getvalue())
    url = f"archives/{ns}-{name}-{version}.tar.zst"
    (index / "archives").mkdir(exist_ok=True)
    (index / url).write_bytes(data)
    return url, blake3.blake3(data).hexdigest(), len(data)


def _index(root: Path, packages: dict[tuple[str, str], list[str]]) -> Path:
    """A directory index describing each (namespace, name) with its releases (`yanked` after a
    version: `"1.1.0 yanked"`), each a real archive."""
    (root / "pkgs").mkdir(parents=True)
    (root / "index.toml").write_text('[index]\nname = "test"\nformat = 1\n')
    for (ns, name), releases in packages.items():
        text = f'[package]\nname = "{name}"\nnamespace = "{ns}"\n'
        for release in releases:
            version, _, yanked = release.partition(" ")
            url, digest, size = _archive(root, ns, name, version)
            text += (f'\n[[release]]\nversion = "{version}"\n{"yanked = true" + chr(10) if yanked else ""}'
                     f'source = {{ url = "{url}", blake3 = "{digest}", size = {size}, strip = 1 }}\n')
        (root / "pkgs" / ns).mkdir(exist_ok=True)
        (root / "pkgs" / ns / f"{name}.toml").write_text(text)
    return root


@pytest.fixture
def app(project, tmp_path):
    index = _index(tmp_path / "index", {
        ("mcpplibs", "greet"): ["1.2.0", "1.10.1", "0.9.0"],
        ("acme", "shout"): ["2.0.0"],
    })
    project({"mcpp.toml": '[package]\nname = "fmt"\nversion = "0.4.2"\n', "src/fmt.cppm": "export module fmt;\n"},
            "fmt")
    root = project({"mcpp.toml": MANIFEST, "src/main.cpp": "int main() {}\n"}, "app")
    return root, {"MCPP_INDEX": str(index)}


def test_add_writes_the_highest_release_as_a_caret_requirement_keeping_the_layout(mcpp, app):
    root, env = app
    res = mcpp("add", "greet", cwd=root, env=env)
    assert res.code == 0, res.err
    assert "Adding greet 1.10.1 to dependencies" in res.err
    assert (root / "mcpp.toml").read_text() == MANIFEST.replace(
        "fmt = { path = \"../fmt\" }   # vendored\n",
        "fmt = { path = \"../fmt\" }   # vendored\ngreet = \"1.10.1\"\n")


def test_add_dev_features_no_default_and_namespaced(mcpp, app):
    root, env = app
    assert mcpp("add", "greet@~1.2", "--dev", "--features", "color,wide", "--no-default-features",
                cwd=root, env=env).code == 0
    assert mcpp("add", "acme.shout", cwd=root, env=env).code == 0
    assert (root / "mcpp.toml").read_text() == MANIFEST.replace(
        "fmt = { path = \"../fmt\" }   # vendored\n",
        "fmt = { path = \"../fmt\" }   # vendored\nacme.shout = \"2.0.0\"\n") + (
        '\n[dev-dependencies]\ngreet = { version = "~1.2", features = ["color", "wide"], default-features = false }\n')


def test_add_path_and_add_again_updates_the_entry(mcpp, app):
    root, env = app
    res = mcpp("add", "fmt", "--path", "../fmt", "--features", "extra", cwd=root, env=env)
    assert res.code == 0, res.err
    assert "Updating fmt 0.4.2 (path ../fmt) in dependencies" in res.err
    assert (root / "mcpp.toml").read_text() == MANIFEST.replace(
        'fmt = { path = "../fmt" }   # vendored',
        'fmt = { path = "../fmt", version = "0.4.2", features = ["extra"] }   # vendored')
    # Added again with another requirement: the features it has stay, the new one joins them.
    assert mcpp("add", "fmt@0.4", "--path", "../fmt", "--features", "more", cwd=root, env=env).code == 0
    assert 'fmt = { path = "../fmt", version = "0.4", features = ["extra", "more"] }   # vendored' in \
        (root / "mcpp.toml").read_text()


def test_remove_keeps_the_rest_of_the_manifest(mcpp, app):
    root, env = app
    assert mcpp("add", "greet", "--dev", cwd=root, env=env).code == 0
    res = mcpp("remove", "fmt", cwd=root)
    assert res.code == 0 and "Removing fmt from dependencies" in res.err
    assert mcpp("remove", "greet", "--dev", cwd=root).code == 0
    assert (root / "mcpp.toml").read_text() == MANIFEST.replace(
        "fmt = { path = \"../fmt\" }   # vendored\n", "") + "\n[dev-dependencies]\n"


def test_refusals_are_clear_and_change_nothing(mcpp, app, tmp_path):
    root, env = app
    manifest = root / "mcpp.toml"
    cases = [
        (("add", "nosuch"), f"error: package `nosuch` is not in the index {env['MCPP_INDEX']}"),
        (("add", "greet@>=3"), "error: no release of `greet` matches `>=3` in the index"),
        (("add", "greet@banana"), "`banana` is not a version requirement"),
        (("add", "bad/name"), "is not a package name"),
        (("add", "a" * 129), "is not a package name"),  # the index's own bound on a name
        (("add", "fmt", "--path", "../app"), "--path ../app holds package `app`, not `fmt`"),
        (("remove", "greet"), "error: dependency `greet` is not in [dependencies] of mcpp.toml"),
        (("remove", "fmt", "--dev"), "help: `fmt` is in [dependencies]; drop `--dev`"),
    ]
    for args, message in cases:
        res = mcpp(*args, cwd=root, env=env)
        assert res.code == 2, (args, res.err)
        assert message in res.err, (args, res.err)
        assert "Traceback" not in res.err
        assert manifest.read_text() == MANIFEST
    res = mcpp("add", "greet", cwd=root, env={"MCPP_INDEX": ""})
    assert res.code == 2 and "needs the library index, and none is configured" in res.err
    assert sorted(p.name for p in root.iterdir()) == ["mcpp.toml", "src"]  # no temp file left


def test_add_reads_the_index_configured_in_mcpp_home(mcpp, app):
    root, env = app
    (mcpp.home / "config.toml").write_text(f'[index]\nurl = "{env["MCPP_INDEX"]}"\n')
    assert mcpp("add", "acme.shout@2", cwd=root, env={"MCPP_INDEX": ""}).code == 0
    assert 'acme.shout = "2"\n' in (root / "mcpp.toml").read_text()


def test_add_never_picks_a_yanked_release(mcpp, project, tmp_path):
    index = _index(tmp_path / "index", {("mcpplibs", "greet"): ["1.0.0", "1.1.0 yanked"]})
    root = project({"mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n'}, "app")
    assert mcpp("add", "greet", cwd=root, env={"MCPP_INDEX": str(index)}).code == 0
    assert 'greet = "1.0.0"' in (root / "mcpp.toml").read_text()


def test_add_and_remove_have_help(mcpp, tmp_path):
    res = mcpp("add", "--help", cwd=tmp_path)
    assert res.code == 0
    for flag in ("--dev", "--features", "--no-default-features", "--path DIR", "NAME[@REQ]"):
        assert flag in res.out
    assert "--dev" in mcpp("remove", "--help", cwd=tmp_path).out


def test_an_entry_under_a_namespace_table_is_found_updated_and_removed(mcpp, project, tmp_path):
    index = _index(tmp_path / "index", {("acme", "shout"): ["2.0.0", "2.1.0"]})
    text = ('[package]\nname = "app"\nversion = "0.1.0"\n\n[dependencies.acme]\nshout = "2.0"  # pinned low\n\n'
            '[features]\nfast = []\n')
    root = project({"mcpp.toml": text}, "app")
    env = {"MCPP_INDEX": str(index)}
    res = mcpp("add", "acme.shout", "--features", "loud", cwd=root, env=env)
    assert res.code == 0 and "Updating acme.shout 2.1.0 in dependencies" in res.err, res.err
    assert (root / "mcpp.toml").read_text() == text.replace(
        'shout = "2.0"  # pinned low', 'shout = { version = "2.1.0", features = ["loud"] }  # pinned low')
    assert mcpp("remove", "acme.shout", cwd=root).code == 0
    assert (root / "mcpp.toml").read_text() == '[package]\nname = "app"\nversion = "0.1.0"\n\n[features]\nfast = []\n'


def test_add_in_a_virtual_workspace_root_is_refused(mcpp, project):
    ws = project({"mcpp.toml": '[workspace]\nmembers = ["a"]\n',
                  "a/mcpp.toml": '[package]\nname = "a"\nversion = "0.1.0"\n'}, "ws")
    res = mcpp("add", "fmt", "--path", "a", cwd=ws)
    assert res.code == 2 and "is a virtual workspace, not a package" in res.err
    assert (ws / "mcpp.toml").read_text() == '[workspace]\nmembers = ["a"]\n'


def test_add_and_remove_update_the_lock(mcpp, app):
    root, env = app
    assert mcpp("add", "greet", cwd=root, env=env).code == 0
    lock = (root / "mcpp.lock").read_text()
    assert 'name = "greet"\nnamespace = "mcpplibs"\nversion = "1.10.1"\n' in lock
    assert mcpp("remove", "greet", cwd=root, env=env).code == 0
    assert 'name = "greet"' not in (root / "mcpp.lock").read_text()


def test_an_add_the_lock_cannot_follow_leaves_the_manifest_alone(mcpp, app):
    root, env = app
    archive = Path(env["MCPP_INDEX"]) / "archives" / "mcpplibs-greet-1.10.1.tar.zst"
    archive.write_bytes(archive.read_bytes()[:-1] + b"\0")  # tampered after the descriptor was written
    res = mcpp("add", "greet", cwd=root, env=env)
    assert res.code == 2 and "blake3" in res.err, res.err
    assert (root / "mcpp.toml").read_text() == MANIFEST
