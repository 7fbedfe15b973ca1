"""The built-in device table: which extensions are device sources, which are headers, and that
none of them is in the default glob."""
from __future__ import annotations

import pytest

from mcpp.engine.core.conventions import DEFAULT_GLOBS, DEVICE_EXTS, HEADER_EXTS, ROLES, Role
from mcpp.engine.package.sources import role_of

SEED_TABLE = [".cu", ".hip", ".sycl", ".asc", ".cce", ".comp", ".vert", ".frag", ".geom", ".tesc", ".tese",
              ".mesh", ".task", ".rgen", ".rint", ".rahit", ".rchit", ".rmiss", ".rcall", ".glsl", ".hlsl",
              ".cl", ".metal"]


@pytest.mark.parametrize("ext", SEED_TABLE)
def test_every_extension_of_the_table_is_a_device_source(ext):
    assert role_of(f"src/kernels/x{ext}") == Role.DEVICE


def test_the_table_is_exactly_the_documented_one():
    assert sorted(DEVICE_EXTS) == sorted(SEED_TABLE)


@pytest.mark.parametrize("ext", [".cuh", ".hiph"])
def test_device_headers_are_headers(ext):
    assert ext in HEADER_EXTS and ROLES[ext] == Role.HEADER


def test_no_device_extension_is_in_the_default_glob():
    assert not [g for g in DEFAULT_GLOBS for e in DEVICE_EXTS if g.endswith("*" + e)]


def test_a_package_declared_extension_is_a_device_source_too():
    assert role_of("src/a.slang") is None
    assert role_of("src/a.slang", frozenset({".slang"})) == Role.DEVICE
