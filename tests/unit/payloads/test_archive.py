"""Unpacking an archive: streamed into a `Tree` that never writes through a link, resolves links
by walking, lets no member replace another and bounds what it unpacks; a refusal leaves nothing."""
from __future__ import annotations

import io
import os
import stat
import tarfile
import zipfile

import pytest
import zstandard

from mcpp.engine.payloads.archive import MAX_METADATA, extract
from mcpp.engine.payloads.errors import PayloadError
from mcpp.engine.payloads.tree import Limits
from tests.e2e.payload_index_support import climbing_links, zeros_tar_zst


def tar(members, compress=None, fmt=tarfile.GNU_FORMAT) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for name, content, kind, link in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = link
            info.mode = 0o755
            data = content or b""
            info.size = len(data) if kind == tarfile.REGTYPE else 0
            t.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    raw = buf.getvalue()
    return zstandard.ZstdCompressor().compress(raw) if compress == "zst" else raw


def f(name, content=b"x"):
    return (name, content, tarfile.REGTYPE, "")


def sym(name, target):
    return (name, None, tarfile.SYMTYPE, target)


def chain(prefix: str, levels: int):
    links, top = climbing_links(prefix, levels)
    return [sym(name, target) for name, _, target in links], top


def unpack(tmp_path, data: bytes, url="u.tar", strip=0, limits=None, dest=None):
    archive = tmp_path / ("archive" + os.path.splitext(url)[1])
    archive.write_bytes(data)
    dest = dest or tmp_path / "d"
    extract(str(archive), url, str(dest), strip, limits)
    return dest


def refused(tmp_path, data: bytes, url="u.tar", strip=0, limits=None, dest=None) -> str:
    dest = dest or tmp_path / "d"
    with pytest.raises(PayloadError) as e:
        unpack(tmp_path, data, url, strip, limits, dest)
    assert "nothing was installed" in e.value.message and url in e.value.message
    assert not dest.exists()  # however far it got, the tree is removed
    return e.value.message


def test_a_zst_archive_unpacks_with_strip_and_keeps_inner_links(tmp_path):
    data = tar([f("gen-1/bin/gen", b"#!/bin/sh\n"), sym("gen-1/bin/g", "gen"), sym("gen-1/lib", "bin/../bin"),
                ("gen-1/bin/h", None, tarfile.LNKTYPE, "gen-1/bin/gen"), ("gen-1/bin/", None, tarfile.DIRTYPE, "")],
               "zst")
    d = unpack(tmp_path, data, "a.tar.zst", strip=1)
    assert (d / "bin" / "gen").read_bytes() == b"#!/bin/sh\n" and os.access(d / "bin" / "gen", os.X_OK)
    assert os.readlink(d / "bin" / "g") == "gen" and (d / "lib" / "g").read_bytes() == b"#!/bin/sh\n"
    assert os.stat(d / "bin" / "h").st_ino == os.stat(d / "bin" / "gen").st_ino


def test_a_link_that_dangles_inside_the_payload_is_kept(tmp_path):
    d = unpack(tmp_path, tar([sym("a/l", "../missing/x")]))
    assert os.readlink(d / "a" / "l") == "../missing/x"


@pytest.mark.parametrize("members, message", [
    ([f("/etc/passwd")], "member `/etc/passwd` has an absolute path"),
    ([f("a/../../x")], "has a `..` component"),
    ([sym("a/l", "/etc")], "member `a/l` is a link to `/etc`, outside the payload"),
    ([sym("a/l", "../../x")], "member `a/l` is a link to `../../x`, outside the payload"),
    ([("a/h", None, tarfile.LNKTYPE, "/etc/shadow")], "has an absolute link path"),
    ([("a/h", None, tarfile.LNKTYPE, "a/../../x")], "has a `..` component in its link path"),
    ([sym("a/s", "ok"), ("a/h", None, tarfile.LNKTYPE, "a/s")], "is a hard link to `s`, which is not an earlier file"),
    ([("a/h", None, tarfile.LNKTYPE, "a/later"), f("a/later")], "is a hard link to `later`, which is not an earlier"),
    ([sym("a/d", "."), f("a/d/x")], "member `a/d/x` lies under the symlink `d`"),
    ([f("a/ok2"), f("a/ok2/x")], "lies under the file `ok2`"),
    ([("a/fifo", None, tarfile.FIFOTYPE, "")], "is a device, fifo"),
    ([("a/dev", None, tarfile.CHRTYPE, "")], "is a device, fifo"),
    ([f("a/ok")], "is listed twice (first as a file)"),
    ([("a/sub", None, tarfile.DIRTYPE, ""), sym("a/sub", ".")],
     "member `a/sub` is listed twice (first as a directory)"),
    ([sym("a/x", "y"), sym("a/y", "x")], "does not resolve (more than 40 links deep)"),
])
def test_refusals_remove_what_was_unpacked(tmp_path, members, message):
    assert message in refused(tmp_path, tar([f("a/ok")] + members), strip=1)


def test_a_chain_of_links_that_each_look_inside_is_refused_and_nothing_is_written_through_it(tmp_path):
    """Each link's text normalizes to a path inside the payload, yet the chain leads two
    directories above it, to `victim`; a later regular member of the link's name would be
    written (and made executable) there by an unpacker that opens paths."""
    victim = tmp_path / "victim"
    victim.write_text("original")
    victim.chmod(0o600)
    dest = tmp_path / "a" / "d"
    dest.parent.mkdir()
    links, top = chain("p/", 2)
    members = links + [sym("p/x", f"{top}/victim"), f("p/x", b"overwritten")]
    message = refused(tmp_path, tar(members), strip=1, dest=dest)
    assert "member `p/x` is listed twice (first as a symlink)" in message
    assert victim.read_text() == "original" and stat.S_IMODE(victim.stat().st_mode) == 0o600

    # Alone, the chain is refused once the tree is complete, naming the first link that leaves it.
    message = refused(tmp_path, tar(links + [sym("p/x", f"{top}/victim")]), strip=1, dest=dest)
    assert "member `p/c2/u` is a link to `../c1/u/..`, outside the payload (through the link `c1/u` -> `..`)" \
           in message


def test_a_member_is_never_written_through_a_directory_link(tmp_path):
    (tmp_path / "outside").mkdir()
    dest = tmp_path / "a" / "d"
    dest.parent.mkdir()
    links, top = chain("", 2)
    message = refused(tmp_path, tar(links + [f(f"{top}/outside/evil")]), dest=dest)
    assert "lies under the symlink `c3/u`" in message
    assert list((tmp_path / "outside").iterdir()) == []


def test_a_zip_chain_of_links_is_refused(tmp_path):
    buf = io.BytesIO()
    links, top = climbing_links("", 2)
    with zipfile.ZipFile(buf, "w") as z:
        for name, _, target in links + [("x", None, f"{top}/victim")]:
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            z.writestr(info, target)
    assert "member `c2/u` is a link to `../c1/u/..`, outside the payload" in refused(tmp_path, buf.getvalue(), "u.zip")


def test_a_zip_with_a_dotdot_member_is_refused(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("ok", "x")
        z.writestr("../evil", "x")
    assert "has a `..` component" in refused(tmp_path, buf.getvalue(), "u.zip")
    assert not (tmp_path.parent / "evil").exists()


def limits(max_bytes=1 << 20, max_members=100) -> Limits:
    return Limits(max_bytes, "the limit set by TEST", max_members, "the members limit set by TEST")


def test_a_decompression_bomb_stops_at_the_limit(tmp_path):
    bomb = tmp_path / "bomb.tar.zst"
    zeros_tar_zst(bomb, "gen/zeros", 64 << 20)
    assert bomb.stat().st_size < 64 << 10
    dest = tmp_path / "d"
    with pytest.raises(PayloadError) as e:
        extract(str(bomb), "b.tar.zst", str(dest), 1, limits())
    assert ("payload archive b.tar.zst: member `gen/zeros` takes the unpacked payload past 1.0 MiB (1048576 bytes), "
            "the limit set by TEST; nothing was installed") == e.value.message
    assert not dest.exists()


def test_the_member_count_is_bounded(tmp_path):
    message = refused(tmp_path, tar([f(f"a/f{i}") for i in range(20)]), limits=limits(max_members=10))
    assert "takes the payload past 10 members, the members limit set by TEST" in message
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for i in range(20):
            z.writestr(f"f{i}", "x")
    assert "has 20 members, more than 10" in refused(tmp_path, buf.getvalue(), "u.zip", limits=limits(max_members=10))


def test_a_metadata_block_larger_than_a_path_needs_is_refused_before_it_is_read(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        info = tarfile.TarInfo("a/x")
        info.pax_headers = {"comment": "z" * (MAX_METADATA + 1)}
        t.addfile(info, io.BytesIO(b""))
    assert "has a" in refused(tmp_path, buf.getvalue()) and "metadata block" in refused(tmp_path, buf.getvalue())


def test_an_unreadable_archive_is_one_error(tmp_path):
    assert "not a readable archive" in refused(tmp_path, b"not a tar at all" * 64, "u.tar.zst")


def test_data_attached_to_a_link_counts_against_the_limit_though_it_is_skipped(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        info = tarfile.TarInfo("a/l")
        info.type, info.linkname, info.size = tarfile.SYMTYPE, "x", 2 << 20
        t.addfile(info, io.BytesIO(bytes(2 << 20)))
    message = refused(tmp_path, buf.getvalue(), limits=limits())
    assert "member `a/l` takes the unpacked payload past 1.0 MiB" in message


def test_a_member_nested_past_the_depth_bound_is_refused_at_once(tmp_path):
    """2,000 directories deep (a 4,001-byte name): making each missing parent from the root
    again took time cubic in the depth, and removing the refused tree overflowed the stack of a
    recursive removal; the name is refused before anything is made."""
    import time

    start = time.monotonic()
    message = refused(tmp_path, tar([f("a/" * 2000 + "f"), f("../evil")], fmt=tarfile.PAX_FORMAT))
    assert time.monotonic() - start < 10

    from mcpp.engine.payloads.tree import MAX_DEPTH

    assert f"has a path deeper than {MAX_DEPTH} directories or longer than 4095 bytes" in message
    deep = unpack(tmp_path, tar([f("a/" * (MAX_DEPTH - 1) + "f", b"deep")], fmt=tarfile.PAX_FORMAT), dest=tmp_path / "ok")
    assert (deep / ("a/" * (MAX_DEPTH - 1) + "f")).read_bytes() == b"deep"


def test_the_walk_that_resolves_links_is_bounded(tmp_path, monkeypatch):
    """Links whose long texts each pass through a chain of links: resolving them all costs the
    product of their counts, lengths and the chain's depth. The walk is bounded overall (here
    lowered, so the archive stays small) and the payload refused when it passes the bound."""
    from mcpp.engine.payloads import tree

    monkeypatch.setattr(tree, "MAX_LINK_STEPS", 100_000, raising=False)
    pad = "d/../" * 100
    members = [("d", None, tarfile.DIRTYPE, ""), f("f")]
    members += [sym(f"l{k}", pad + (f"l{k + 1}" if k < 37 else "f")) for k in range(38)]
    members += [sym(f"m{k}", pad + "l0") for k in range(20)]
    message = refused(tmp_path, tar(members, fmt=tarfile.PAX_FORMAT))
    assert "is a link whose resolution takes the payload's links past 100000 path components walked" in message
