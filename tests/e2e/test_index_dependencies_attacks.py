"""What the library plane refuses (docs/dependencies.md, threat model): a tampered archive before
anything is unpacked, a hostile archive, an unsigned plain-http index, a lock that pins another
archive than the index serves, a hostile lockfile, a stale vendor copy, a cache entry of another
archive, and a release whose manifest is another package's."""
from __future__ import annotations

import re
import tarfile
import io
from pathlib import Path

import blake3
import pytest
import zstandard

from e2e_support import Mcpp
from library_index_support import IndexServer, LibraryIndex, calc_files, consumer, index_env


@pytest.fixture
def served(tmp_path):
    index = LibraryIndex.standard(tmp_path / "index")
    with IndexServer(index.root) as server:
        yield index, server


def hostile_archive(name: str) -> bytes:
    """A `.tar.zst` whose second member climbs out of the unpack directory."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for member, data in ((f"{name}/mcpp.toml", b'[package]\nname = "calc"\nversion = "1.0.0"\n'),
                             (f"{name}/../../escaped", b"owned\n")):
            info = tarfile.TarInfo(member)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return zstandard.ZstdCompressor().compress(buf.getvalue())


def nothing_unpacked(home: Path, app: Path, ns: str, name: str, version: str) -> None:
    assert not (home / "registry" / ns / name / version).exists()
    tmp = home / "registry" / ".tmp"
    assert not tmp.exists() or list(tmp.iterdir()) == []
    assert not (app / "target" / "registry" / ns / f"{name}-{version}").exists()


def test_a_tampered_archive_is_refused_before_anything_is_unpacked(tmp_path, mcpp, served):
    index, server = served
    # The index's signed descriptor pins the honest archive; the server now serves another, whose
    # members would climb out if it were ever unpacked.
    index.archive("extra", "calc", "1.0.0").write_bytes(hostile_archive("calc-1.0.0"))
    app = consumer(tmp_path / "app", 'extra.calc = "1"\n', main="int main() {}\n")
    res = mcpp("build", cwd=app, env=index_env(server.url))
    assert res.code == 2 and "Traceback" not in res.err
    assert "blake3 mismatch" in res.err or "size mismatch" in res.err, res.err
    assert "extra.calc 1.0.0" in res.err
    nothing_unpacked(mcpp.home, app, "extra", "calc", "1.0.0")
    assert not list(tmp_path.rglob("escaped"))
    assert not (app / "mcpp.lock").exists()


def test_a_hostile_archive_the_descriptor_vouches_for_is_refused_member_by_member(tmp_path, mcpp, served):
    index, server = served
    index.releases[("extra", "calc")] = []
    data = hostile_archive("calc-1.0.0")
    index.archive("extra", "calc", "1.0.0").write_bytes(data)
    index.releases[("extra", "calc")].append({"version": "1.0.0", "url": "archives/extra-calc-1.0.0.tar.zst",
                                              "blake3": blake3.blake3(data).hexdigest(), "size": len(data),
                                              "yanked": False})
    index._write("extra", "calc")
    app = consumer(tmp_path / "app", 'extra.calc = "1"\n', main="int main() {}\n")
    res = mcpp("build", cwd=app, env=index_env(server.url))
    assert res.code == 2 and "`..` component" in res.err and "Traceback" not in res.err
    nothing_unpacked(mcpp.home, app, "extra", "calc", "1.0.0")
    assert not list(tmp_path.rglob("escaped"))


def test_an_unsigned_plain_http_index_is_refused_unless_accepted_insecure(tmp_path, mcpp, served):
    _index, server = served
    app = consumer(tmp_path / "app", 'extra.calc = "1"\n', main="int main() {}\n")
    res = mcpp("build", cwd=app, env={"MCPP_INDEX": server.url})
    assert res.code == 2 and "plain http, which is refused" in res.err
    assert not (mcpp.home / "registry").exists()
    res = mcpp("build", cwd=app, env={"MCPP_INDEX": server.url, "MCPP_PAYLOAD_INDEX_INSECURE": "1"})
    assert res.code == 0, res.err
    assert "accepts it unverified" in res.err


def test_a_lock_pinning_another_archive_than_the_index_serves_is_refused(tmp_path, mcpp, served):
    index, server = served
    env = index_env(server.url)
    app = consumer(tmp_path / "app", 'extra.calc = "1"\n', main="int main() {}\n")
    mcpp("build", cwd=app, env=env, check=True)
    # The index republishes 1.0.0 with other contents (and a descriptor to match): the lock wins.
    index.releases[("extra", "calc")] = [r for r in index.releases[("extra", "calc")] if r["version"] != "1.0.0"]
    files = calc_files("1.0.0")
    files["src/calc.cppm"] += "// changed\n"
    index.add_release("extra", "calc", "1.0.0", files)
    other = Mcpp(tmp_path / "second-home")
    res = other("build", cwd=app, env=env)
    assert res.code == 2 and "blake3 mismatch" in res.err and "Traceback" not in res.err
    nothing_unpacked(other.home, app.parent / "nowhere", "extra", "calc", "1.0.0")
    # The first home's cache holds the locked archive's tree: it still builds.
    assert mcpp("build", cwd=app, env=env).code == 0


@pytest.mark.parametrize("lock, message, line", [
    ('version = 1\n[[package]\n', "not valid TOML", 2),
    ('version = 1\n\n[[package]]\nname = "calc"\nnamespace = "extra"\nversion = "../../x"\nsource = "index+x"\n'
     'blake3 = "' + "0" * 64 + '"\n', "is not a package version", 6),
    ('version = 1\n\n[[package]]\nname = "calc"\nnamespace = "extra"\nversion = "1.0.0"\nsource = "index+x"\n'
     'blake3 = "nothex"\n', "`blake3` must be 64 lowercase hex digits", 8),
    ('version = 2\n', "expected `version = 1`", 1),
])
def test_a_hostile_lockfile_is_a_positioned_error(tmp_path, mcpp, served, lock, message, line):
    _index, server = served
    app = consumer(tmp_path / "app", 'extra.calc = "1"\n', main="int main() {}\n")
    (app / "mcpp.lock").write_text(lock)
    res = mcpp("build", cwd=app, env=index_env(server.url))
    assert res.code == 2 and message in res.err and "Traceback" not in res.err
    assert re.search(rf"mcpp\.lock:{line}:\d+: error", res.err), res.err
    assert (app / "mcpp.lock").read_text() == lock  # nothing rewritten
    assert not (mcpp.home / "registry").exists()


def test_a_vendor_copy_of_another_archive_is_refused(tmp_path, mcpp, served):
    _index, server = served
    app = consumer(tmp_path / "app", 'extra.calc = "1"\n', main="int main() {}\n")
    mcpp("vendor", cwd=app, env=index_env(server.url), check=True)
    (app / "mcpp.toml").write_text((app / "mcpp.toml").read_text() + '\n[source]\nvendor = "vendor"\n')
    (app / "vendor" / "extra" / "calc-1.0.0.blake3").write_text("0" * 64 + "\n")
    res = mcpp("build", cwd=app)
    assert res.code == 2 and "`extra.calc 1.0.0`: the vendor directory" in res.err and "another archive" in res.err


def test_a_cache_entry_of_another_archive_is_refused(tmp_path, mcpp, served):
    _index, server = served
    app = consumer(tmp_path / "app", 'extra.calc = "1"\n', main="int main() {}\n")
    mcpp("build", cwd=app, env=index_env(server.url), check=True)
    stamp = mcpp.home / "registry" / "extra" / "calc" / "1.0.0.blake3"
    stamp.write_text("f" * 64 + "\n")
    import shutil
    shutil.rmtree(app / "target")
    res = mcpp("build", cwd=app, env=index_env(server.url))
    assert res.code == 2 and "the source cache holds an archive with blake3" in res.err


def test_a_release_whose_manifest_is_another_package_is_refused(tmp_path, mcpp, served):
    index, server = served
    files = calc_files("3.0.0")
    files["mcpp.toml"] = files["mcpp.toml"].replace('name = "calc"', 'name = "greet"')
    index.add_release("extra", "calc", "3.0.0", files)
    app = consumer(tmp_path / "app", 'extra.calc = "3"\n', main="int main() {}\n")
    res = mcpp("build", cwd=app, env=index_env(server.url))
    assert res.code == 2 and "holds a manifest for `extra.greet 3.0.0`; refused" in res.err


@pytest.mark.parametrize("entry", ['"..".x = "1"', 'mcpplibs."../../etc" = "1"', '"a/b" = { version = "1" }'])
def test_an_index_dependency_named_like_a_path_is_refused_before_any_read(tmp_path, mcpp, served, entry):
    """The name and namespace pick the descriptor's URL and the cache directory: never a path."""
    _index, server = served
    app = consumer(tmp_path / "app", entry + "\n", main="int main() {}\n")
    res = mcpp("build", cwd=app, env=index_env(server.url))
    assert res.code == 2 and "use letters, digits, `-` and `_`" in res.err and "Traceback" not in res.err
    assert re.search(r"mcpp\.toml:6:\d+: error", res.err), res.err
    assert server.requests == [] and not (mcpp.home / "registry").exists()
