"""The archive download: streamed to a file, hashed on the way, bounded before it is unpacked."""
from __future__ import annotations

import pytest

from mcpp.engine.payloads.descriptor import Descriptor, Source
from mcpp.engine.payloads.errors import PayloadError
from mcpp.engine.payloads.install import _download
from mcpp.engine.payloads.tree import Limits

DESC = Descriptor("xim", "gen", "", (), (), "idx/pkgs/xim/gen.toml")
LIMITS = Limits(1000, "the limit set by TEST", 10, "TEST")


def test_a_download_longer_than_the_stated_size_stops_there(tmp_path):
    (tmp_path / "a.tar.zst").write_bytes(b"x" * 5000)
    with pytest.raises(PayloadError, match="size mismatch: the descriptor says 100 bytes, more were read"):
        _download(str(tmp_path / "a.tar.zst"), str(tmp_path / "out"), DESC,
                  Source("archive", blake3="0" * 64, size=100), LIMITS)


def test_a_download_without_a_stated_size_is_bounded_by_what_it_may_unpack_to(tmp_path):
    (tmp_path / "a.tar.zst").write_bytes(b"x" * (3 << 20))
    with pytest.raises(PayloadError) as e:
        _download(str(tmp_path / "a.tar.zst"), str(tmp_path / "out"), DESC, Source("archive", blake3="0" * 64), LIMITS)
    assert "the download passed 1050576 bytes, more than an archive that may unpack to 1000 bytes (the limit set " \
           "by TEST) can be; nothing was installed" in e.value.message
