"""Descriptors are checked whole, with their location in every message."""
from __future__ import annotations

import pytest

from mcpp.engine.payloads.descriptor import parse_descriptor
from mcpp.engine.payloads.errors import PayloadError

GOOD = '''
[package]
name = "gen"
namespace = "xim"
bins = ["bin/gen"]
[[release]]
version = "1.2.0"
linux-x86_64 = { dir = "trees/gen-1.2.0" }
[[release]]
version = "2.0.0"
linux-x86_64 = { url = "archives/gen-2.0.0.tar.zst", blake3 = "%s", size = 12, strip = 1 }
[[release]]
version = "13.0.88"
linux-x86_64 = { system = "/usr/local/cuda", probe = ["bin/nvcc", "--version"], match = "V([0-9.]+)" }
''' % ("ab" * 32)


def test_the_three_sources():
    d = parse_descriptor(GOOD, "idx/pkgs/xim/gen.toml", "xim", "gen")
    assert d.versions_for("linux-x86_64") == ["1.2.0", "2.0.0", "13.0.88"] and d.versions_for("macos-arm64") == []
    assert d.source("1.2.0", "linux-x86_64").kind == "dir"
    assert d.source("2.0.0", "linux-x86_64").strip == 1
    assert d.source("2.0.0", "linux-x86_64").unpacked_size is None
    stated = parse_descriptor(GOOD.replace("strip = 1 }", "strip = 1, unpacked-size = 4096 }"), "d", "xim", "gen")
    assert stated.source("2.0.0", "linux-x86_64").unpacked_size == 4096
    assert d.source("13.0.88", "linux-x86_64").probe == ("bin/nvcc", "--version")


@pytest.mark.parametrize("edit, message", [
    (('blake3 = "' + "ab" * 32, 'blake3 = "xyz'), "needs its `blake3`"),
    (('{ dir = "trees/gen-1.2.0" }', '{ dir = "../x" }'), "`dir` must be a path inside the index"),
    (('{ dir = "trees/gen-1.2.0" }', '{ dir = "a", system = "/x" }'), "names exactly one source"),
    (('match = "V([0-9.]+)"', 'match = "V"'), "must have a group"),
    (('name = "gen"', 'name = "other"'), "but its path says `xim:gen`"),
    (("strip = 1 }", 'strip = 1, unpacked-size = "big" }'), "`unpacked-size` must be a byte count"),
    (('version = "1.2.0"', 'version = ".."'), "version `..` is not a version"),
    (('version = "1.2.0"', 'version = "1.2/../../x"'), "version `1.2/../../x` is not a version"),
])
def test_refusals_name_the_descriptor(edit, message):
    with pytest.raises(PayloadError) as e:
        parse_descriptor(GOOD.replace(*edit), "idx/pkgs/xim/gen.toml", "xim", "gen")
    assert message in e.value.message and "idx/pkgs/xim/gen.toml" in e.value.message


def test_the_shipped_index_adopts_the_cuda_toolkit():
    import os

    from mcpp.engine.payloads.index import SHIPPED, Index

    assert os.path.isfile(os.path.join(SHIPPED, "index.toml"))
    for name in ("cuda-nvcc", "cuda-cudart"):
        d = Index(SHIPPED).descriptor("xim", name)
        s = d.source(d.releases[0].version, "linux-x86_64")
        assert s.kind == "system" and s.system == "/usr/local/cuda"
