"""Assembler sources: `.S` is preprocessed by the C driver with the package's defines and include
directories (and rebuilt when a header it includes changes); `.s` is assembled as written. Both
link into a C program that runs."""
from __future__ import annotations

import platform
import subprocess

import pytest

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="the sources are x86-64 assembly")

# The header is shared by the assembler and the C side, as real projects do (zlib's, OpenSSL's
# perlasm output): `__ASSEMBLER__` hides the C declarations from the assembler.
PROJECT = {
    "mcpp.toml": """
        [package]
        name = "asmdemo"
        version = "0.1.0"

        [build]
        defines = ["ASM_EXTRA=2"]
        include_dirs = ["include"]
        sources = ["src/*.c", "src/*.S", "src/*.s"]

        [targets.asmdemo]
        kind = "bin"
        main = "src/main.c"
    """,
    "include/asmcfg.h": """
        #define MAGIC_BASE 40
        #ifndef __ASSEMBLER__
        int magic(void);
        int twice(int);
        #endif
    """,
    "src/magic.S": """
        #include "asmcfg.h"
            .text
            .globl magic
            .type magic, @function
        magic:
            movl $(MAGIC_BASE + ASM_EXTRA), %eax
            ret
            .section .note.GNU-stack,"",@progbits
    """,
    # No preprocessor runs on `.s`: a `#` starts a comment for the x86 assembler.
    "src/twice.s": """
        # twice(x) = x + x
            .text
            .globl twice
            .type twice, @function
        twice:
            leal (%rdi,%rdi), %eax
            ret
            .section .note.GNU-stack,"",@progbits
    """,
    "src/main.c": """
        #include <stdio.h>
        #include "asmcfg.h"
        int main(void) { printf("magic=%d twice=%d\\n", magic(), twice(21)); return 0; }
    """,
}


def test_dot_S_takes_defines_and_headers_and_dot_s_assembles_as_written(project, mcpp):
    root = project(PROJECT)
    res = mcpp("build", "--message-format", "json", cwd=root)
    assert res.code == 0, res.out + res.err
    compiled = res.executed("compile")
    assert any("magic.S" in a for a in compiled) and any("twice.s" in a for a in compiled), compiled
    run = subprocess.run([str(root / "target" / "dev" / "asmdemo")], capture_output=True, text=True)
    assert run.stdout == "magic=42 twice=42\n", run

    # The header `magic.S` includes is an input of its compile (its depfile), not of `twice.s`.
    (root / "include/asmcfg.h").write_text(PROJECT["include/asmcfg.h"].replace("40", "50").replace("        ", ""))
    res = mcpp("build", "--message-format", "json", cwd=root)
    assert res.code == 0, res.out + res.err
    rebuilt = res.executed("compile")
    assert any("magic.S" in a for a in rebuilt) and not any("twice.s" in a for a in rebuilt), rebuilt
    run = subprocess.run([str(root / "target" / "dev" / "asmdemo")], capture_output=True, text=True)
    assert run.stdout == "magic=52 twice=42\n", run


def test_assembler_sources_join_the_default_glob(project, mcpp):
    files = {k: v for k, v in PROJECT.items() if k != "mcpp.toml"}
    files["mcpp.toml"] = ('[package]\nname = "asmdemo"\nversion = "0.1.0"\n[build]\ndefines = ["ASM_EXTRA=2"]\n'
                          'include_dirs = ["include"]\n[targets.asmdemo]\nkind = "bin"\nmain = "src/main.c"\n')
    root = project(files)
    res = mcpp("run", "-v", "--sandbox", "dir", cwd=root)
    assert res.code == 0, res.out + res.err
    # C and assembler objects alone: the C driver links, so no C++ runtime is pulled in.
    [link] = [line for line in res.err.splitlines() + res.out.splitlines() if "-o target/dev/asmdemo " in line]
    assert "g++" not in link and "clang++" not in link, link
    assert res.out.endswith("magic=42 twice=42\n"), res.out
