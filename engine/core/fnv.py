"""The 64-bit FNV-1a hash of a short byte string: a stable name for a few hundred bytes (a server's
workspace and home, an import path), computed here rather than by `zlib` or `hashlib`, whose
extension modules cost a command ~0.3 ms to load before it has done anything."""

_OFFSET = 0xCBF2_9CE4_8422_2325
_PRIME = 0x0000_0100_0000_01B3


def fnv1a_64(data: bytes) -> int:
    h = _OFFSET
    for byte in data:
        h = ((h ^ byte) * _PRIME) & 0xFFFF_FFFF_FFFF_FFFF
    return h
