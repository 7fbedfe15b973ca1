"""A small library shaped like zlib, for the per-target, shared-library and build-program e2e
tests: C sources at the package root with `include_dirs = ["."]`, a config header its build
program generates (`zconf.h` from `zconf.h.in`), a version script and a SONAME for the shared
library, and two example programs built from their own sources with different defines."""
from __future__ import annotations

MANIFEST = """
    [package]
    name = "zlike"
    version = "1.3.1"

    [build]
    sources = ["*.c"]
    include_dirs = ["."]
    cflags = ["-std=c11"]

    [targets.zlike]
    kind = "lib"

    [targets.zlike-shared]
    kind = "shared"
    soname = "libzlike.so.1"
    version = "1.3.1"
    ldflags = ["-Wl,--version-script=zlike.map"]
    link_inputs = ["zlike.map"]

    [targets.example]
    main = "test/example.c"
    defines = ["EXAMPLE_NAME=\\"example\\""]

    [targets.minigzip]
    main = "test/minigzip.c"
    sources = ["test/args.c"]
    defines = ["EXAMPLE_NAME=\\"minigzip\\"", "MINIGZIP_LEVEL=9"]
"""

FILES = {
    "mcpp.toml": MANIFEST,
    # The build program makes zconf.h in its output directory and adds that directory.
    "build.star": """
        out = mcpp.out_dir()
        mcpp.action(id = "zconf", argv = ["/bin/cp", "zconf.h.in", out + "/zconf.h"], inputs = ["zconf.h.in"],
                    outputs = [out + "/zconf.h"], tools = ["/bin/cp"], role = "check")
        mcpp.include_dir(out)
    """,
    "zconf.h.in": "#define ZLIKE_CONFIG 131\n",
    "zlike.h": """
        #ifndef ZLIKE_H
        #define ZLIKE_H
        #include "zconf.h"
        unsigned zl_adler(const char* s);
        int zl_config(void);
        #endif
    """,
    "adler.c": """
        #include "zlike.h"
        #include "zutil.h"
        unsigned zl_adler(const char* s) {
            unsigned a = 1, b = 0;
            for (; *s; ++s) { a = (a + (unsigned char)*s) % 65521; b = (b + a) % 65521; }
            return zl_combine(a, b);
        }
    """,
    "zutil.h": "unsigned zl_combine(unsigned a, unsigned b);\n",
    "zutil.c": """
        #include "zutil.h"
        unsigned zl_combine(unsigned a, unsigned b) { return (b << 16) | a; }
    """,
    "config.c": '#include "zlike.h"\nint zl_config(void) { return ZLIKE_CONFIG; }\n',
    # The version script exports the public API only: zl_combine stays internal.
    "zlike.map": "ZLIKE_1.0 {\n  global: zl_adler; zl_config;\n  local: *;\n};\n",
    "test/example.c": """
        #include <stdio.h>
        #include "zlike.h"
        int main(void) { printf("%s %u %d\\n", EXAMPLE_NAME, zl_adler("abc"), zl_config()); return 0; }
    """,
    "test/minigzip.c": """
        #include <stdio.h>
        #include "zlike.h"
        int level(void);
        int main(void) { printf("%s %u level=%d\\n", EXAMPLE_NAME, zl_adler("abc"), level()); return 0; }
    """,
    "test/args.c": "int level(void) { return MINIGZIP_LEVEL; }\n",
}

ADLER_ABC = 38600999  # zlib's adler32("abc") = 0x024d0127
