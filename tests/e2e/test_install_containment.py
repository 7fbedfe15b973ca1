"""`mcpp install` reads only inside the package and never widens who may read a file: a header
reached through a symlink that leaves the package is an error naming the link (nothing is
installed), and a header only its owner may read is installed so."""
from __future__ import annotations

import os
import shutil
import stat

import pytest

from tests.e2e.e2e_support import Mcpp

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")

LIB = {
    "mcpp.toml": '[package]\nname = "zed"\nversion = "1.0.0"\n\n[targets.zed]\nkind = "lib"\n',
    "include/zed.h": "int zed(void);\n",
    "src/zed.c": '#include "zed.h"\nint zed(void) { return 1; }\n',
}


# A header-only package: no compile reads its headers (whose header pool would refuse the link
# first), only the install does.
HEADER_ONLY = {"mcpp.toml": '[package]\nname = "zed"\nversion = "1.0.0"\n\n[build]\nsources = []\n'}


@pytest.mark.parametrize("how", ["include directory", "directory inside it", "header"])
def test_a_header_symlink_leading_out_of_the_package_is_refused(project, mcpp: Mcpp, tmp_path, how):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.h").write_text("#define SECRET 42\n")
    if how == "include directory":  # the package's include/ is itself a link out
        root = project(HEADER_ONLY)
        (root / "include").symlink_to(outside, target_is_directory=True)
        link = root / "include"
    elif how == "directory inside it":
        root = project({**HEADER_ONLY, "include/zed.h": "int zed;\n"})
        (root / "include" / "ext").symlink_to(outside, target_is_directory=True)
        link = root / "include" / "ext"
    else:
        root = project({**HEADER_ONLY, "include/zed.h": "int zed;\n"})
        (root / "include" / "secret.h").symlink_to(outside / "secret.h")
        link = root / "include" / "secret.h"
    prefix = tmp_path / "prefix"
    res = mcpp("install", "--prefix", str(prefix), cwd=root)
    installed = [os.path.join(d, f) for d, _, fs in os.walk(prefix) for f in fs]
    assert not any(f.endswith("secret.h") for f in installed), installed
    if res.code == 0:  # a link the walk does not follow is no header of the package
        assert how == "directory inside it", res.err
    else:
        assert res.code == 2 and "Traceback" not in res.err, res.err
        assert str(link) in res.err and "outside" in res.err, res.err
        assert not prefix.exists() or installed == [], installed


def test_a_header_only_its_owner_may_read_stays_so_when_installed(project, mcpp: Mcpp, tmp_path):
    root = project({**LIB, "include/private.h": "#define PRIVATE 1\n"})
    os.chmod(root / "include" / "private.h", 0o600)
    prefix = tmp_path / "prefix"
    mcpp("install", "--prefix", str(prefix), cwd=root, check=True)
    mode = stat.S_IMODE(os.stat(prefix / "include" / "private.h").st_mode)
    assert mode & 0o077 == 0, oct(mode)
    assert stat.S_IMODE(os.stat(prefix / "include" / "zed.h").st_mode) == 0o644
