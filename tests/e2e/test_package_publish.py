"""`mcpp package` and `mcpp publish --index DIR` on real packages (docs/dependencies.md,
"Packaging" and "Publishing"): what the archive holds, that it is deterministic, that it is
verified by building it unpacked, and what publishing writes into (and refuses for) an index."""
from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path

import blake3
import pytest
import zstandard

LIB = {
    "mcpp.toml": """
        # the greeting library
        [package]
        name = "greet"
        version = "0.1.0"
        description = "says hello"

        [dev-dependencies]
        helper = { path = "../helper" }   # tests only
    """,
    "src/greet.cppm": "export module greet;\nexport namespace greet { int answer() { return 42; } }\n",
    "README.md": "# greet\n",
    "tests/basic.cpp": "import greet;\nint main() { return greet::answer() == 42 ? 0 : 1; }\n",
}


def _lib(project, name: str = "greet") -> Path:
    root = project(LIB, name)
    project({"mcpp.toml": '[package]\nname = "helper"\nversion = "0.1.0"\n',
             "src/helper.cppm": "export module helper;\n"}, "helper")
    return root


class Member:
    """One member of an archive: its header and, for a file, its bytes."""

    def __init__(self, info: tarfile.TarInfo, content: bytes):
        self.info, self.content, self.name = info, content, info.name


def _members(archive: Path) -> list[Member]:
    with open(archive, "rb") as f, zstandard.ZstdDecompressor().stream_reader(f) as z, \
            tarfile.open(fileobj=z, mode="r|") as t:
        return [Member(m, t.extractfile(m).read() if m.isfile() else b"") for m in t]


def _digest(path: Path) -> str:
    return blake3.blake3(path.read_bytes()).hexdigest()


def test_package_holds_only_the_package_files_and_is_deterministic(mcpp, project, tmp_path):
    root = _lib(project)
    outside = tmp_path / "secret.txt"
    outside.write_text("do not publish\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]\n")
    (root / ".env").write_text("TOKEN=1\n")
    (root / "target" / "dev").mkdir(parents=True)
    (root / "target" / "dev" / "junk.o").write_text("x")
    (root / "examples" / "demo" / "src").mkdir(parents=True)  # a nested package: published by itself
    (root / "examples" / "demo" / "mcpp.toml").write_text('[package]\nname = "demo"\nversion = "0.1.0"\n')
    (root / "examples" / "notes.txt").write_text("kept\n")
    (root / "leak").symlink_to(outside)
    (root / "docs").mkdir()
    (root / "docs" / "readme-link.md").symlink_to("../README.md")
    (root / "tests" / "fifo").parent.mkdir(exist_ok=True)
    os.mkfifo(root / "tests" / "fifo")

    res = mcpp("package", cwd=root)
    assert res.code == 0, res.err
    assert "`leak` is a link to" in res.err and "outside the package; it is not packaged" in res.err
    assert "Verifying greet v0.1.0" in res.err
    archive = root / "target" / "package" / "greet-0.1.0.tar.zst"
    members = _members(archive)
    assert [m.name for m in members] == [
        "greet-0.1.0/README.md", "greet-0.1.0/docs/readme-link.md", "greet-0.1.0/examples/notes.txt",
        "greet-0.1.0/mcpp.toml", "greet-0.1.0/src/greet.cppm", "greet-0.1.0/tests/basic.cpp"]
    link = members[1].info
    assert link.issym() and link.linkname == "../README.md"
    assert {(m.info.mtime, m.info.uid, m.info.gid, m.info.uname, m.info.gname) for m in members} == {(0, 0, 0, "", "")}
    assert {m.info.mode for m in members if m.info.isfile()} == {0o644}
    # The published manifest: the path-only dev-dependency is not a consumer's to build.
    manifest = next(m for m in members if m.name.endswith("mcpp.toml")).content.decode()
    assert manifest == ('# the greeting library\n[package]\nname = "greet"\nversion = "0.1.0"\n'
                        'description = "says hello"\n\n[dev-dependencies]\n')

    first = _digest(archive)
    os.utime(root / "src" / "greet.cppm", (1, 1))  # other times, another checkout: the same bytes
    copy = tmp_path / "elsewhere" / "greet"
    shutil.copytree(root, copy, symlinks=True, ignore=shutil.ignore_patterns("target", "fifo"))
    shutil.copytree(tmp_path / "helper", tmp_path / "elsewhere" / "helper")
    assert mcpp("package", "--no-verify", cwd=root).code == 0
    assert _digest(archive) == first
    assert mcpp("package", "--no-verify", cwd=copy).code == 0
    assert _digest(copy / "target" / "package" / "greet-0.1.0.tar.zst") == first


def test_package_verify_fails_when_the_archive_misses_a_file_it_needs(mcpp, project):
    root = project({
        "mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n[build]\ninclude_dirs = [".config"]\n',
        "src/main.cpp": '#include <cstdio>\n#include "cfg.h"\nint main() { std::puts(GREETING); }\n',
        ".config/cfg.h": '#define GREETING "hi"\n',
    }, "app")
    assert mcpp("run", cwd=root).out.strip().endswith("hi")  # it builds in its checkout
    res = mcpp("package", cwd=root)
    assert res.code == 1
    assert "cfg.h: No such file or directory" in res.err
    assert "error: verifying app v0.1.0: the package does not build from its archive" in res.err
    assert "names starting with `.`" in res.err
    assert "Traceback" not in res.err
    assert mcpp("package", "--no-verify", cwd=root).code == 0  # the archive itself was written


def test_package_refuses_more_than_a_consumer_unpacks(mcpp, project):
    root = project({"mcpp.toml": '[package]\nname = "big"\nversion = "0.1.0"\n',
                    "src/big.cppm": "export module big;\n"}, "big")
    (root / "data.bin").write_bytes(bytes(200_000))
    res = mcpp("package", cwd=root, env={"MCPP_PAYLOAD_MAX_UNPACKED": "100K"})
    assert res.code == 2, res.err
    assert "error: package `big` holds" in res.err and "`data.bin` (200000 bytes)" in res.err
    assert not (root / "target" / "package").exists()
    for i in range(4):
        (root / "src" / f"part{i}.h").write_text("\n")
    res = mcpp("package", cwd=root, env={"MCPP_PAYLOAD_MAX_MEMBERS": "5"})
    assert res.code == 2 and "error: package `big` holds 7 files, more than a consumer unpacks (5" in res.err


def test_publish_into_a_new_index_then_the_same_version_is_refused(mcpp, project, tmp_path):
    root = _lib(project)
    index = tmp_path / "index"
    res = mcpp("publish", "--index", str(index), cwd=root)
    assert res.code == 0, res.err
    assert "Published mcpplibs.greet v0.1.0" in res.err
    archive = index / "archives" / "greet-0.1.0.tar.zst"
    assert archive.read_bytes() == (root / "target" / "package" / "greet-0.1.0.tar.zst").read_bytes()
    assert (index / "index.toml").read_text() == '[index]\nname = "index"\nformat = 1\n'
    unpacked = sum(len(m.content) for m in _members(archive))
    descriptor = index / "pkgs" / "mcpplibs" / "greet.toml"
    assert descriptor.read_text() == (
        '[package]\nname = "greet"\nnamespace = "mcpplibs"\ndescription = "says hello"\n\n'
        f'[[release]]\nversion = "0.1.0"\nsource = {{ url = "archives/greet-0.1.0.tar.zst", blake3 = '
        f'"{_digest(archive)}", size = {archive.stat().st_size}, strip = 1, unpacked-size = {unpacked} }}\n')
    before = {p: p.read_bytes() for p in index.rglob("*") if p.is_file()}

    again = mcpp("publish", "--index", str(index), cwd=root)
    assert again.code == 2
    assert "error: mcpplibs.greet 0.1.0 is already published in" in again.err
    assert {p: p.read_bytes() for p in index.rglob("*") if p.is_file()} == before

    # A new version appends its release; what was there stays byte for byte.
    manifest = root / "mcpp.toml"
    manifest.write_text(manifest.read_text().replace("0.1.0", "0.2.0"))
    assert mcpp("publish", "--index", str(index), "--no-verify", cwd=root).code == 0
    text = descriptor.read_text()
    assert text.startswith(before[descriptor].decode() + '\n[[release]]\nversion = "0.2.0"\n')
    assert sorted(p.name for p in (index / "archives").iterdir()) == ["greet-0.1.0.tar.zst", "greet-0.2.0.tar.zst"]


WORKSPACE = {
    "mcpp.toml": '[workspace]\nmembers = ["libs/greet", "app"]\n',
    "libs/greet/mcpp.toml": '[package]\nname = "greet"\nversion = "0.3.0"\nnamespace = "acme"\n',
    "libs/greet/src/greet.cppm": 'export module greet;\nexport namespace greet { const char* hello() { return "hello from greet"; } }\n',
    "app/mcpp.toml": """
        [package]
        name = "app"
        version = "1.0.0"

        [dependencies]
        acme.greet = { path = "../libs/greet", version = "0.3" }   # published as an index dependency
    """,
    "app/src/main.cpp": '#include <cstdio>\nimport greet;\nint main() { std::puts(greet::hello()); }\n',
}


def test_publish_a_workspace_member(mcpp, project, tmp_path):
    ws = project(WORKSPACE, "ws")
    index = tmp_path / "index"
    res = mcpp("publish", "-p", "greet", "--index", str(index), cwd=ws)
    assert res.code == 0, res.err
    assert (ws / "target" / "package" / "greet-0.3.0.tar.zst").is_file()  # the workspace's target/
    assert (index / "pkgs" / "acme" / "greet.toml").is_file()
    assert (index / "archives" / "greet-0.3.0.tar.zst").is_file()
    # From inside the member, without -p: that member (already published: refused by name).
    inside = mcpp("publish", "--index", str(index), "--no-verify", cwd=ws / "libs" / "greet")
    assert inside.code == 2 and "acme.greet 0.3.0 is already published" in inside.err
    # The virtual root is no package.
    root = mcpp("package", cwd=ws)
    assert root.code == 2 and "virtual workspace" in root.err and "-p NAME" in root.err

    # A member depending on a sibling is packaged with that dependency as an index requirement.
    assert mcpp("package", "-p", "app", "--no-verify", cwd=ws).code == 0
    members = _members(ws / "target" / "package" / "app-1.0.0.tar.zst")
    manifest = next(m for m in members if m.name == "app-1.0.0/mcpp.toml").content.decode()
    assert 'acme.greet = { version = "0.3" }   # published as an index dependency' in manifest
    assert [m.name for m in members] == ["app-1.0.0/mcpp.toml", "app-1.0.0/src/main.cpp"]


def test_package_refuses_a_path_dependency_without_version(mcpp, project):
    ws = project({**WORKSPACE, "app/mcpp.toml": '[package]\nname = "app"\nversion = "1.0.0"\n\n'
                                                '[dependencies]\nacme.greet = { path = "../libs/greet" }\n'}, "ws")
    res = mcpp("package", "-p", "app", "--no-verify", cwd=ws)
    assert res.code == 2
    assert "app/mcpp.toml:6:1: error: dependency `acme.greet` in [dependencies] is a path dependency without a " \
           "`version`" in res.err
    assert not (ws / "target" / "package").exists()


def test_a_published_member_is_consumed_through_the_index(mcpp, project, tmp_path):
    ws = project(WORKSPACE, "ws")
    index = tmp_path / "index"
    assert mcpp("publish", "-p", "greet", "--index", str(index), cwd=ws).code == 0
    consumer = project({"mcpp.toml": '[package]\nname = "consumer"\nversion = "0.1.0"\n',
                        "src/main.cpp": '#include <cstdio>\nimport greet;\nint main() { std::puts(greet::hello()); }\n'},
                       "consumer")
    env = {"MCPP_INDEX": str(index)}
    assert mcpp("add", "acme.greet", cwd=consumer, env=env).code == 0
    assert 'acme.greet = "0.3.0"' in (consumer / "mcpp.toml").read_text()
    res = mcpp("run", cwd=consumer, env=env)
    assert res.code == 0, res.err
    assert res.out.strip().endswith("hello from greet")
    assert 'name = "greet"\nnamespace = "acme"\nversion = "0.3.0"\n' in (consumer / "mcpp.lock").read_text()
    # A member depending on its sibling is verified through the index its sibling is in.
    assert mcpp("publish", "-p", "app", "--index", str(index), cwd=ws, env=env).code == 0


# -- what publishing must refuse ------------------------------------------------------------------

def test_publish_refuses_a_namespace_that_is_not_a_plain_name(mcpp, project, tmp_path):
    root = project({"mcpp.toml": '[package]\nname = "evil"\nversion = "0.1.0"\nnamespace = "../../x"\n',
                    "src/evil.cppm": "export module evil;\n"}, "evil")
    index = tmp_path / "index"
    res = mcpp("publish", "--index", str(index), "--no-verify", cwd=root)
    assert res.code == 2
    assert "namespace `../../x` is not a plain name" in res.err
    assert not (tmp_path / "x").exists() and not (index / "pkgs").exists()


def test_publish_never_overwrites_another_archive_or_writes_into_a_non_index(mcpp, project, tmp_path):
    root = _lib(project)
    index = tmp_path / "index"
    (index / "archives").mkdir(parents=True)
    (index / "index.toml").write_text('[index]\nname = "i"\nformat = 1\n')
    taken = index / "archives" / "greet-0.1.0.tar.zst"  # another namespace's greet 0.1.0
    taken.write_bytes(b"other bytes")
    res = mcpp("publish", "--index", str(index), "--no-verify", cwd=root)
    assert res.code == 2 and "archives/greet-0.1.0.tar.zst already exists in the index with other contents" in res.err
    assert taken.read_bytes() == b"other bytes"
    assert not (index / "pkgs").exists()

    descriptor = index / "pkgs" / "mcpplibs" / "greet.toml"
    descriptor.parent.mkdir(parents=True)
    descriptor.write_text("[package\n")  # damaged: reported, never appended to
    taken.unlink()
    res = mcpp("publish", "--index", str(index), "--no-verify", cwd=root)
    assert res.code == 2 and "cannot publish into" in res.err and "not valid TOML" in res.err
    assert descriptor.read_text() == "[package\n" and not taken.exists()

    stranger = tmp_path / "not-an-index"
    stranger.mkdir()
    (stranger / "notes.txt").write_text("mine\n")
    res = mcpp("publish", "--index", str(stranger), "--no-verify", cwd=root)
    assert res.code == 2 and "is not an index (no index.toml) and not empty" in res.err
    assert sorted(p.name for p in stranger.iterdir()) == ["notes.txt"]


def test_package_and_publish_have_help(mcpp, tmp_path):
    for command in ("package", "publish"):
        res = mcpp(command, "--help", cwd=tmp_path)
        assert res.code == 0 and "--no-verify" in res.out and "-p, --package NAME" in res.out
    assert "--index DIR" in mcpp("publish", "--help", cwd=tmp_path).out


def test_publish_into_a_signed_index_says_the_signature_is_stale(mcpp, project, tmp_path):
    root = _lib(project)
    index = tmp_path / "index"
    assert mcpp("publish", "--index", str(index), "--no-verify", cwd=root).code == 0
    assert mcpp("cache", "keygen", "idx", cwd=tmp_path).code == 0
    assert mcpp("payload", "sign", "--key", str(tmp_path / "idx.secret"), str(index), cwd=tmp_path).code == 0
    manifest = root / "mcpp.toml"
    manifest.write_text(manifest.read_text().replace("0.1.0", "0.2.0"))
    res = mcpp("publish", "--index", str(index), "--no-verify", cwd=root)
    assert res.code == 0, res.err
    assert "pkgs/mcpplibs/greet.toml.sig no longer matches: sign the index again" in res.err
