"""`--target aarch64-linux-gnu`: a workspace (a C++20 module library, a C library, an app whose
build program runs a host tool that writes a header) builds for aarch64 under bwrap, runs and
tests through qemu, and a native build of the same tree afterwards compiles everything again
and runs natively. Once with the cross gcc, once with clang-19 + lld. Each test builds one tree
and asserts everything on it (the cross builds are the slow part)."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.e2e.e2e_support import Mcpp, copy_example

TRIPLE = "aarch64-linux-gnu"
HAVE_CROSS_GCC = shutil.which(f"{TRIPLE}-g++") is not None and shutil.which(f"{TRIPLE}-gcc") is not None
HAVE_QEMU = shutil.which("qemu-aarch64") is not None
HAVE_FILE = shutil.which("file") is not None
pytestmark = pytest.mark.skipif(not (HAVE_CROSS_GCC and HAVE_QEMU and HAVE_FILE),
                                reason="needs g++-aarch64-linux-gnu, qemu-user and file "
                                       "(scripts/install-system-deps.sh installs them)")
needs_clang = pytest.mark.skipif(shutil.which("clang++-19") is None or shutil.which("ld.lld-19") is None,
                                 reason="needs clang-19 and lld-19 (scripts/install-system-deps.sh installs them)")

RUNNER = f'["qemu-aarch64", "-L", "/usr/{TRIPLE}"]'


def workspace(toolchain: str | None = None) -> dict[str, str]:
    chosen = f'\n[toolchain]\ndefault = "{toolchain}"\n' if toolchain else ""
    return {
        "mcpp.toml": f"""
            [workspace]
            members = ["mathmod", "cutil", "app"]
        """ + chosen,
        # the host tool: writes a header naming the machine it runs on
        "gen/mcpp.toml": """
            [package]
            name = "gen"
            version = "0.1.0"
            [targets.gen]
            kind = "bin"
            main = "src/main.cpp"
        """,
        "gen/src/main.cpp": """
            #include <cstdio>
            int main(int, char** argv) {
            #if defined(__x86_64__)
                const char* arch = "x86_64";
            #elif defined(__aarch64__)
                const char* arch = "aarch64";
            #else
                const char* arch = "other";
            #endif
                std::FILE* f = std::fopen(argv[1], "w");
                std::fprintf(f, "#define GEN_TOOL_ARCH \\"%s\\"\\n", arch);
                return std::fclose(f) != 0;
            }
        """,
        "mathmod/mcpp.toml": '[package]\nname = "mathmod"\nversion = "0.1.0"\nstandard = "c++20"\n',
        "mathmod/src/mathmod.cppm": "export module mathmod;\nexport int twice(int x) { return 2 * x; }\n",
        # a C library whose target-axis conditions pick its value
        "cutil/mcpp.toml": f"""
            [package]
            name = "cutil"
            version = "0.1.0"
            [target.'cfg(arch = "aarch64")'.build]
            defines = ["CUTIL_ARCH=64"]
            [target.x86_64-linux-gnu.build]
            defines = ["CUTIL_ARCH=86"]
        """,
        "cutil/include/cutil.h": '#ifdef __cplusplus\nextern "C" {\n#endif\nint cutil_arch(void);\n'
                                 '#ifdef __cplusplus\n}\n#endif\n',
        "cutil/src/cutil.c": '#include "cutil.h"\nint cutil_arch(void) { return CUTIL_ARCH; }\n',
        "app/mcpp.toml": f"""
            [package]
            name = "app"
            version = "0.1.0"
            standard = "c++20"
            [dependencies]
            mathmod = {{ path = "../mathmod" }}
            cutil = {{ path = "../cutil" }}
            gen = {{ path = "../gen", tools = ["gen"] }}
            [target.{TRIPLE}]
            runner = {RUNNER}
            [target.{TRIPLE}.build]
            defines = ["APP_CROSS=1"]
        """ + chosen,
        "app/build.star": """
            gen = mcpp.dep_bin("gen", "gen")
            inc = mcpp.out_dir() + "/include"
            mcpp.action(id = "gen.h", argv = [gen, inc + "/gen.h"], inputs = [], outputs = [inc + "/gen.h"],
                        tools = [gen], role = "check")
            mcpp.include_dir(inc)
        """,
        "app/src/main.cpp": """
            #include <cstdio>
            #include "gen.h"
            #include "cutil.h"
            import mathmod;
            #ifndef APP_CROSS
            #define APP_CROSS 0
            #endif
            int main() {
            #if defined(__aarch64__)
                const char* arch = "aarch64";
            #else
                const char* arch = "x86_64";
            #endif
                std::printf("app=%s tool=%s twice=%d cutil=%d cross=%d\\n", arch, GEN_TOOL_ARCH, twice(21),
                            cutil_arch(), APP_CROSS);
            }
        """,
        "app/tests/twice.cpp": """
            #include <cstdio>
            import mathmod;
            int main() {
            #if defined(__aarch64__)
                std::puts("test runs on aarch64");
            #endif
                return twice(2) == 4 ? 0 : 1;
            }
        """,
    }


def file_says(path) -> str:
    return subprocess.run(["file", "-L", str(path)], capture_output=True, text=True, check=True).stdout


def host_tool_binary(root):
    found = [p for p in (root / "target" / "host" / "gen").rglob("gen") if p.is_file()]
    assert found, "the host tool's build left no binary under target/host/gen"
    return found[0]


def cross_then_native(root, mcpp: Mcpp, compiler_flag: str) -> None:
    app = root / "app"
    res = mcpp("build", "--target", TRIPLE, "--sandbox", "bwrap", "--message-format", "json", cwd=root)
    assert res.code == 0, res.out + res.err
    cross_compiles = set(res.executed("compile"))
    assert "compile app:src/main.cpp" in " ".join(cross_compiles) or cross_compiles, res.out
    binary = root / "target" / TRIPLE / "dev" / "app"
    assert "ARM aarch64" in file_says(binary)
    assert "x86-64" in file_says(host_tool_binary(root))
    assert not (root / "target" / "dev" / "app").exists()  # the host's directory is left alone
    commands = json.loads((root / "target" / "compile_commands.json").read_text())
    main = next(c for c in commands if c["file"].endswith("app/src/main.cpp"))
    assert compiler_flag in " ".join(main["arguments"])

    run = mcpp("-q", "run", "--target", TRIPLE, "--sandbox", "bwrap", cwd=app)
    assert run.code == 0, run.err
    assert run.out.strip().splitlines()[-1] == "app=aarch64 tool=x86_64 twice=42 cutil=64 cross=1"
    test = mcpp("test", "--target", TRIPLE, "--sandbox", "bwrap", cwd=app)
    assert test.code == 0, test.out + test.err
    assert "twice ... ok" in test.out and "test result: ok. 1 passed; 0 failed" in test.out

    # The same tree natively: every compile runs again (no aarch64 result is taken), and the
    # binary runs on this machine.
    native = mcpp("build", "--sandbox", "bwrap", "--message-format", "json", cwd=root)
    assert native.code == 0, native.out + native.err
    finished = [e for e in native.events if e.get("reason") == "action-finished" and e.get("kind") == "compile"]
    assert finished and all(e["status"] == "executed" for e in finished), finished
    assert "x86-64" in file_says(root / "target" / "dev" / "app")
    run = mcpp("-q", "run", "--sandbox", "bwrap", cwd=app)
    assert run.code == 0, run.err
    assert run.out.strip().splitlines()[-1] == "app=x86_64 tool=x86_64 twice=42 cutil=86 cross=0"


def test_a_workspace_cross_builds_runs_and_tests_with_the_cross_gcc(project, mcpp: Mcpp):
    root = project(workspace())
    cross_then_native(root, mcpp, f"/usr/bin/{TRIPLE}-g++")
    meta = mcpp("metadata", "--target", TRIPLE, "--format", "json", cwd=root / "app")
    assert meta.code == 0, meta.err
    tc = json.loads(meta.out)["toolchain"]
    assert (tc["cxx"], tc["target"], tc["runner"]) == (f"/usr/bin/{TRIPLE}-g++", TRIPLE, ["qemu-aarch64", "-L", f"/usr/{TRIPLE}"])
    assert tc["sysroot"] == "/"  # the cross gcc's own (`-print-sysroot`)


@needs_clang
def test_a_workspace_cross_builds_runs_and_tests_with_clang_and_lld(project, mcpp: Mcpp):
    root = project(workspace("clang-19"))
    cross_then_native(root, mcpp, f"--target={TRIPLE}")
    meta = mcpp("metadata", "--target", TRIPLE, "--format", "json", cwd=root / "app")
    assert meta.code == 0, meta.err
    tc = json.loads(meta.out)["toolchain"]
    assert (tc["cxx"], tc["flags"], tc["link_flags"]) == \
        ("/usr/bin/clang++-19", [f"--target={TRIPLE}", "--gcc-toolchain=/usr"], ["-fuse-ld=lld"])


@needs_clang
def test_import_std_cross_with_clang_or_a_clear_error_naming_the_missing_libcxx(project, mcpp: Mcpp):
    root = project({
        "mcpp.toml": f'[package]\nname = "s"\nversion = "0.1.0"\nstandard = "c++23"\n[toolchain]\ndefault = "clang-19"\n'
                     f'[target.{TRIPLE}]\nrunner = {RUNNER}\n',
        "src/main.cpp": 'import std;\nint main() { std::println("std {}", 42); }\n',
    })
    res = mcpp("-q", "run", "--target", TRIPLE, "--sandbox", "bwrap", cwd=root)
    missing = "libc++-19-dev:arm64 libc++abi-19-dev:arm64"
    if res.code == 2 and missing in res.err:
        assert f"`import std;` for `{TRIPLE}` needs the target's libc++" in res.err
        pytest.skip(f"no aarch64 libc++ here (Debian 12 cannot install {missing} beside the amd64 "
                    f"packages: both own /usr/lib/llvm-19/lib): `import std` cross is refused clearly")
    assert res.code == 0, res.err
    assert res.out.strip().splitlines()[-1] == "std 42"


def test_example_12_cross_builds_its_device_program_with_the_toy_compiler_on_the_host(mcpp: Mcpp, tmp_path):
    """The toy compiler (a host tool) runs on x86-64 in the build; the program it feeds is aarch64."""
    app = copy_example("12-a-new-device-language", tmp_path) / "app"
    manifest = app / "mcpp.toml"
    manifest.write_text(manifest.read_text() + f"\n[target.{TRIPLE}]\nrunner = {RUNNER}\n")
    res = mcpp("-q", "run", "--target", TRIPLE, "--sandbox", "bwrap", cwd=app)
    assert res.code == 0, res.err
    assert res.out.strip().splitlines()[-1] == "answer()       = 42"
    assert "ARM aarch64" in file_says(app / "target" / TRIPLE / "dev" / "toyapp")
    toyc = [p for p in (app / "target" / "host" / "toyc").rglob("toyc") if p.is_file()]
    assert toyc and "x86-64" in file_says(toyc[0])
