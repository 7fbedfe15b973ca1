"""`install_cmd.elf_soname`: the SONAME read from a shared object the real compiler links, which
`mcpp install` turns into the link the loader opens."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from mcpp.engine.cli.install import elf_soname


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs cc")
@pytest.mark.parametrize("bits", ["64", "32"])
def test_the_soname_of_a_real_shared_object(tmp_path, bits):
    src = tmp_path / "f.c"
    src.write_text("int f(void) { return 1; }\n")
    with_name, without = tmp_path / "libf.so.1.2", tmp_path / "libg.so"
    flags = ["-m32"] if bits == "32" else []
    made = subprocess.run(["cc", *flags, "-shared", "-fPIC", "-Wl,-soname,libf.so.1", str(src), "-o", str(with_name)],
                          capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"no {bits}-bit toolchain here")
    subprocess.run(["cc", *flags, "-shared", "-fPIC", str(src), "-o", str(without)], check=True)
    assert elf_soname(str(with_name)) == "libf.so.1"
    assert elf_soname(str(without)) is None


def test_not_an_elf_file_or_a_truncated_one_has_none(tmp_path):
    text = tmp_path / "libx.so"
    text.write_text("INPUT(-lx_real)\n")  # a linker script named like a library
    assert elf_soname(str(text)) is None
    truncated = tmp_path / "liby.so"
    truncated.write_bytes(b"\x7fELF\x02\x01\x01" + b"\0" * 57 + b"\xff" * 8)
    assert elf_soname(str(truncated)) is None
    assert elf_soname(str(tmp_path / "missing.so")) is None
