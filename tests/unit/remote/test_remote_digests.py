"""Digest functions: choosing one from the server's capabilities, hashing, resource names."""
from __future__ import annotations

import hashlib

from mcpp.cas.digest import digest_bytes
from mcpp.cas.remote import protocol as pb
from mcpp.cas.remote.digests import BLAKE3, SHA256, RemoteDigest, choose


def test_blake3_is_preferred_and_sha256_is_the_fallback():
    v = pb.DIGEST_FUNCTION
    assert choose([v["SHA256"], v["BLAKE3"]]) is BLAKE3
    assert choose([v["SHA256"]]) is SHA256  # BuildGrid 0.4.4
    assert choose([]) is SHA256  # a server from before CacheCapabilities.digest_functions
    assert choose([v["MD5"], v["SHA1"]]) is None


def test_blake3_remote_digests_are_the_local_ones():
    data = b"int main() {}\n"
    local = digest_bytes(data)
    assert BLAKE3.of_bytes(data) == RemoteDigest(local.hash, local.size)
    assert SHA256.of_bytes(data) == RemoteDigest(hashlib.sha256(data).hexdigest(), len(data))


def test_file_and_message_digests(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"x" * 3_000_000)
    assert SHA256.of_file(p) == SHA256.of_bytes(p.read_bytes())
    d, data = SHA256.of_message(pb.Digest(hash="ab", size_bytes=2))
    assert d == SHA256.of_bytes(data) and pb.Digest.FromString(data).hash == "ab"


def test_resource_names_carry_the_blake3_segment_only():
    d = RemoteDigest("a" * 64, 12)
    assert SHA256.read_resource("", d) == f"blobs/{'a' * 64}/12"
    assert BLAKE3.read_resource("", d) == f"blobs/blake3/{'a' * 64}/12"
    assert BLAKE3.read_resource("main", d) == f"main/blobs/blake3/{'a' * 64}/12"
    assert SHA256.write_resource("ci", "u-1", d) == f"ci/uploads/u-1/blobs/{'a' * 64}/12"
    assert BLAKE3.write_resource("", "u-1", d) == f"uploads/u-1/blobs/blake3/{'a' * 64}/12"


def test_mismatch_names_size_and_content():
    d = SHA256.of_bytes(b"abc")
    assert SHA256.mismatch(d, b"abc") is None
    assert "bytes" in SHA256.mismatch(d, b"abcd")
    assert "hashes to" in SHA256.mismatch(d, b"abd")
