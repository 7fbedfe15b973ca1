"""Features (array and table forms, defaults, implies, sources), profiles and explicit targets."""
from __future__ import annotations

import subprocess

PRINT_FEATURES = """
#include <cstdio>
int extra();
int main() {
#ifdef MCPP_FEATURE_FAST
    std::puts("fast");
#endif
#ifdef MCPP_FEATURE_SIMD_X86
    std::puts("simd-x86");
#endif
#ifdef TURBO
    std::printf("turbo=%d\\n", TURBO);
#endif
#ifdef HAS_EXTRA
    std::printf("extra=%d\\n", extra());
#endif
}
"""

FEATURES = {
    "mcpp.toml": """
        [package]
        name = "feat"
        version = "0.1.0"

        [features]
        default = ["fast"]
        fast = []
        simd-x86 = { defines = ["TURBO=2"], implies = ["fast"] }
        extra = { defines = ["HAS_EXTRA"], sources = ["src/extra/*.cpp"] }
        everything = ["simd-x86", "extra"]
    """,
    "src/main.cpp": PRINT_FEATURES,
    "src/extra/extra.cpp": "int extra() { return 5; }\n",
}


def run_out(mcpp, root, *flags):
    res = mcpp("-q", "run", *flags, cwd=root)
    assert res.code == 0, res.err
    return res.out.split()


def test_default_features_and_their_define(project, mcpp):
    root = project(FEATURES)
    assert run_out(mcpp, root) == ["fast"]
    assert run_out(mcpp, root, "--no-default-features") == []


def test_table_form_defines_and_implies(project, mcpp):
    root = project(FEATURES)
    assert run_out(mcpp, root, "--no-default-features", "--features", "simd-x86") == ["fast", "simd-x86", "turbo=2"]


def test_feature_sources_are_built_only_with_the_feature(project, mcpp):
    root = project(FEATURES)
    res = mcpp.build_json(cwd=root)
    assert not any("extra.cpp" in i for i in res.executed())  # a broad default glob does not pull it in
    assert run_out(mcpp, root, "--features", "everything") == ["fast", "simd-x86", "turbo=2", "extra=5"]
    assert run_out(mcpp, root, "--all-features") == ["fast", "simd-x86", "turbo=2", "extra=5"]


def test_dependency_features_and_default_features_false(project, mcpp):
    root = project({
        "app/mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n'
                         '[dependencies]\nlib = { path = "../lib", features = ["loud"], default-features = false }\n',
        "app/src/main.cpp": "#include <cstdio>\nconst char* mode();\nint main() { std::puts(mode()); }\n",
        "lib/mcpp.toml": '[package]\nname = "lib"\nversion = "0.1.0"\n[features]\ndefault = ["quiet"]\nquiet = []\nloud = []\n',
        "lib/src/lib.cpp": 'const char* mode() {\n#if defined(MCPP_FEATURE_LOUD) && !defined(MCPP_FEATURE_QUIET)\n'
                           ' return "loud only";\n#else\n return "other";\n#endif\n}\n',
    })
    assert run_out(mcpp, root / "app") == ["loud", "only"]


def test_unknown_feature_on_a_dependency_edge_is_positioned(project, mcpp):
    root = project({
        "app/mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n[dependencies]\nlib = { path = "../lib", features = ["nope"] }\n',
        "app/src/main.cpp": "int main() {}\n",
        "lib/mcpp.toml": '[package]\nname = "lib"\nversion = "0.1.0"\n',
    })
    res = mcpp("build", cwd=root / "app")
    assert res.code == 2 and "mcpp.toml:5:38: error: dependency `lib` has no feature `nope`" in res.err


def test_custom_profile_inherits_and_adds_flags(project, mcpp):
    root = project({
        "mcpp.toml": '[package]\nname = "prof"\nversion = "0.1.0"\n'
                     '[profile.bench]\ninherits = "release"\ndebug = true\ncxxflags = ["-DBENCH_MODE=1"]\n',
        "src/main.cpp": "#include <cstdio>\nint main() {\n#ifdef BENCH_MODE\nstd::puts(\"bench\");\n#endif\n}\n",
    })
    res = mcpp("run", "--profile", "bench", cwd=root)
    assert res.code == 0, res.err
    assert "Finished bench [optimized + debuginfo] in" in res.err and "bench\n" in res.out
    assert (root / "target" / "bench" / "prof").is_file()
    res = mcpp("build", "--profile", "nope", cwd=root)
    assert res.code == 2 and "profile `nope` is not defined; known profiles: bench, dev, release" in res.err


def test_explicit_targets_bin_lib_and_shared_with_c_sources(project, mcpp):
    root = project({
        "mcpp.toml": '[package]\nname = "multi"\nversion = "0.1.0"\n'
                     '[targets.tool]\nkind = "bin"\nmain = "src/tool.cpp"\n'
                     '[targets.multi]\nkind = "lib"\n'
                     '[targets.plug]\nkind = "shared"\n',
        "src/tool.cpp": '#include <cstdio>\nextern "C" int c_add(int, int);\nint main() { std::printf("%d\\n", c_add(40, 2)); }\n',
        "src/add.c": "int c_add(int a, int b) { return a + b; }\n",
    })
    res = mcpp("run", "tool", cwd=root)
    assert res.code == 0, res.err
    assert res.out.strip().endswith("42")
    out = root / "target" / "dev"
    assert (out / "libmulti.a").is_file()
    shared = out / "libplug.so"
    assert shared.is_file()
    symbols = subprocess.run(["nm", "-D", shared], capture_output=True, text=True).stdout
    assert " T c_add" in symbols


def test_message_format_json_reports_every_action(project, mcpp):
    root = project(FEATURES)
    res = mcpp.build_json(cwd=root)
    kinds = sorted(e["kind"] for e in res.events if e["reason"] == "action-finished")
    assert kinds == ["compile", "link"]
    finished = res.events[-1]
    assert finished["reason"] == "build-finished" and finished["success"] is True and finished["executed"] == 2
