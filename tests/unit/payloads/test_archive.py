"""Archives are checked whole before anything is written."""
from __future__ import annotations

import io
import os
import tarfile
import zipfile

import pytest
import zstandard

from mcpp.engine.payloads.archive import extract
from mcpp.engine.payloads.errors import PayloadError


def tar(members, compress=None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
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


def test_a_zst_archive_unpacks_with_strip_and_keeps_inner_links(tmp_path):
    data = tar([f("gen-1/bin/gen", b"#!/bin/sh\n"), ("gen-1/bin/g", None, tarfile.SYMTYPE, "gen")], "zst")
    extract(data, "a.tar.zst", str(tmp_path), strip=1)
    assert (tmp_path / "bin" / "gen").read_bytes() == b"#!/bin/sh\n"
    assert os.readlink(tmp_path / "bin" / "g") == "gen" and os.access(tmp_path / "bin" / "gen", os.X_OK)


@pytest.mark.parametrize("members, message", [
    ([f("/etc/passwd")], "has an absolute path"),
    ([f("a/../../x")], "has a `..` component"),
    ([("a/l", None, tarfile.SYMTYPE, "/etc")], "is a link to `/etc`, outside the payload"),
    ([("a/l", None, tarfile.SYMTYPE, "../../x")], "is a link to `../../x`, outside the payload"),
    ([("a/h", None, tarfile.LNKTYPE, "/etc/shadow")], "has an absolute link path"),
    ([("a/d", None, tarfile.SYMTYPE, "."), f("a/d/x")], "lies under the link `d`"),
    ([("a/fifo", None, tarfile.FIFOTYPE, "")], "is a device, fifo"),
])
def test_refusals_write_nothing(tmp_path, members, message):
    dest = tmp_path / "d"
    dest.mkdir()
    with pytest.raises(PayloadError) as e:
        extract(tar([f("a/ok")] + members), "u.tar", str(dest), strip=1)
    assert message in e.value.message and "nothing was installed" in e.value.message
    assert list(dest.iterdir()) == []


def test_a_zip_with_a_dotdot_member_is_refused(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("ok", "x")
        z.writestr("../evil", "x")
    with pytest.raises(PayloadError, match="has a `..` component"):
        extract(buf.getvalue(), "u.zip", str(tmp_path))
    assert list(tmp_path.iterdir()) == []
