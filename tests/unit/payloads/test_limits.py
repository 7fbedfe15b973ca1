"""How much an archive may unpack to: the descriptor's `unpacked-size`, the default, and the
user's ceiling `MCPP_PAYLOAD_MAX_UNPACKED` over both."""
from __future__ import annotations

import pytest

from mcpp.engine.payloads.descriptor import Source
from mcpp.engine.payloads.errors import PayloadError
from mcpp.engine.payloads.limits import DEFAULT_MAX_BYTES, DEFAULT_MAX_MEMBERS, limits_for


def archive(unpacked_size=None) -> Source:
    return Source("archive", url="a.tar.zst", blake3="0" * 64, unpacked_size=unpacked_size)


def test_the_default_applies_when_the_descriptor_states_no_size():
    limits = limits_for(archive(), {})
    assert limits.max_bytes == DEFAULT_MAX_BYTES and limits.max_members == DEFAULT_MAX_MEMBERS
    assert "default limit" in limits.bytes_origin and "MCPP_PAYLOAD_MAX_UNPACKED" in limits.bytes_origin


def test_the_descriptors_unpacked_size_replaces_the_default_either_way():
    assert limits_for(archive(10), {}).max_bytes == 10
    big = limits_for(archive(64 << 30), {})
    assert big.max_bytes == 64 << 30 and big.bytes_origin == "the descriptor's `unpacked-size`"


@pytest.mark.parametrize("stated, expected", [(None, 2 << 20), (10, 10), (64 << 30, 2 << 20)])
def test_the_environment_is_a_ceiling_over_both(stated, expected):
    limits = limits_for(archive(stated), {"MCPP_PAYLOAD_MAX_UNPACKED": "2Mi", "MCPP_PAYLOAD_MAX_MEMBERS": "7"})
    assert limits.max_bytes == expected and limits.max_members == 7
    if expected == 2 << 20:
        assert limits.bytes_origin == "the limit set by MCPP_PAYLOAD_MAX_UNPACKED"


def test_a_malformed_setting_is_one_error_naming_it():
    with pytest.raises(PayloadError, match="MCPP_PAYLOAD_MAX_UNPACKED: invalid size 'lots'"):
        limits_for(archive(), {"MCPP_PAYLOAD_MAX_UNPACKED": "lots"})
