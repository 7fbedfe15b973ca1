"""`mcpp metadata` and the one funnel: what metadata prints is what build, run and test use."""
from __future__ import annotations

import json
from pathlib import Path

from mcpp.engine.manifest.triples import host_triple

TESTS = Path(__file__).resolve().parent.parent
HOST = host_triple().text

PRINT_MODE = """
#include <cstdio>
int main(int argc, char** argv) {
#ifdef UNIX_BUILD
    std::puts("unix");
#endif
#ifdef WINDOWS_BUILD
    std::puts("windows");
#endif
#ifdef CPU_ONLY
    std::puts("cpu");
#endif
#ifdef WITH_CUDA
    std::puts("cuda");
#endif
    for (int i = 1; i < argc; ++i) std::puts(argv[i]);
    return argc > 1 ? 3 : 0;
}
"""

CONDITIONED = {
    "mcpp.toml": """
        [package]
        name = "cond"
        version = "0.1.0"

        [build]
        accel = "cuda12.9+{sm_89}"

        [target.'cfg(unix)'.build]
        defines = ["UNIX_BUILD"]

        [target.'cfg(windows)'.build]
        defines = ["WINDOWS_BUILD"]

        [target.'cfg(accelerator = "none")'.build]
        defines = ["CPU_ONLY"]

        [target.'cfg(accelerator = "cuda")'.build]
        defines = ["WITH_CUDA"]
    """,
    "src/main.cpp": PRINT_MODE,
}


def test_the_cli_prints_exactly_the_golden_expect(mcpp):
    """The golden test runs the CLI in-process; this runs the installed command on two cases."""
    for case in ("ok-cross-aarch64-target-axis", "err-two-place-condition"):
        toml = TESTS / "manifest" / f"{case}.toml"
        first = toml.read_text().splitlines()[0]
        args = first[len("# args:"):].split() if first.startswith("# args:") else []
        res = mcpp("--manifest-path", f"manifest/{case}.toml", "metadata", *args, cwd=TESTS)
        assert res.err + res.out == (TESTS / "manifest" / f"{case}.expect").read_text()
        assert res.code == (2 if case.startswith("err-") else 0)


def test_build_and_metadata_read_the_same_folded_manifest(project, mcpp):
    root = project(CONDITIONED)
    res = mcpp("-q", "run", cwd=root)
    assert res.code == 0, res.err
    assert res.out.split() == ["unix", "cuda"]  # [build] accel declares cuda
    meta = mcpp("metadata", cwd=root)
    assert meta.code == 0, meta.err
    assert 'str  build.defines[0] = "UNIX_BUILD"  # [target.\'cfg(unix)\']' in meta.out
    assert 'str  build.defines[1] = "WITH_CUDA"  # [target.\'cfg(accelerator = "cuda")\']' in meta.out
    assert "WINDOWS_BUILD" not in meta.out and "CPU_ONLY" not in meta.out


def test_accel_flags_select_conditional_sections_for_build_and_run(project, mcpp):
    root = project(CONDITIONED)
    assert mcpp("-q", "run", "--no-accel", cwd=root).out.split() == ["unix", "cpu"]
    assert mcpp("-q", "run", "--accel", "hip6.4", cwd=root).out.split() == ["unix"]
    assert mcpp("-q", "run", "--accel", "cuda13.0", cwd=root).out.split() == ["unix", "cuda"]
    res = mcpp("build", "--accel", "cuda12.9+{sm_89", cwd=root)
    assert res.code == 2 and "error: invalid --accel `cuda12.9+{sm_89`: malformed accelerator entry" in res.err


def test_a_cross_target_is_shown_by_metadata_and_refused_by_build_without_its_compiler(project, mcpp):
    root = project(CONDITIONED)
    res = mcpp("build", "--target", "x86_64-pc-windows-msvc", cwd=root)
    assert res.code == 2
    assert "no C++ cross compiler for `x86_64-pc-windows-msvc`: `x86_64-pc-windows-msvc-g++` was not found" in res.err
    assert "[target.x86_64-pc-windows-msvc] cxx" in res.err
    meta = mcpp("metadata", "--target", "x86_64-pc-windows-msvc", "--no-accel", cwd=root)
    assert meta.code == 0, meta.err
    assert meta.out.splitlines()[0] == f"# target x86_64-pc-windows-msvc (cross), host {HOST}, accel none (--no-accel)"
    assert '"WINDOWS_BUILD"' in meta.out and '"CPU_ONLY"' in meta.out and "UNIX_BUILD" not in meta.out
    res = mcpp("metadata", "--target", "sparc-sun-solaris", cwd=root)
    assert res.code == 2 and "invalid --target `sparc-sun-solaris`: unknown arch `sparc`" in res.err


def test_run_goes_through_the_runner_of_the_target_triple(project, mcpp):
    root = project({
        **CONDITIONED,
        "mcpp.toml": CONDITIONED["mcpp.toml"] + f"""
        [target.{HOST}]
        runner = ["sh", "-c", "echo via-runner; exec \\"$0\\" \\"$@\\"", "{{}}"]
        """,
    })
    res = mcpp("run", "--no-accel", "--", "arg1", cwd=root)
    assert res.code == 3, res.err  # the program's own exit code, through the runner
    assert res.out.split()[-4:] == ["via-runner", "unix", "cpu", "arg1"]
    assert "Running `sh -c" in res.err


def test_feature_deps_join_the_graph_when_the_feature_is_active(project, mcpp):
    root = project({
        "app/mcpp.toml": """
            [package]
            name = "app"
            version = "0.1.0"

            [features]
            extra = []

            [feature-deps.extra]
            helper = { path = "../helper" }
        """,
        "app/src/main.cpp": """
            #include <cstdio>
            #ifdef MCPP_FEATURE_EXTRA
            int helper();
            #else
            int helper() { return 0; }
            #endif
            int main() { std::printf("%d\\n", helper()); }
        """,
        "helper/mcpp.toml": '[package]\nname = "helper"\nversion = "0.3.0"\n',
        "helper/src/helper.cpp": "int helper() { return 42; }\n",
    })
    app = root / "app"
    assert mcpp("-q", "run", cwd=app).out.split() == ["0"]
    assert mcpp("-q", "run", "--features", "extra", cwd=app).out.split() == ["42"]
    meta = json.loads(mcpp("metadata", "--format", "json", "--features", "extra", cwd=app).out)
    by_name = {p["name"]: p for p in meta["packages"]}
    assert by_name["app"]["features"] == ["extra"]
    assert by_name["app"]["dependencies"] == [{"name": "helper", "id": "helper 0.3.0", "path": str(root / "helper"),
                                               "kind": "feature", "feature": "extra"}]
    assert by_name["helper"]["sources"] == ["src/helper.cpp"]
    assert meta["members"] == ["app"] and meta["context"]["target"] == HOST
    plain = json.loads(mcpp("metadata", "--format", "json", cwd=app).out)
    assert [p["name"] for p in plain["packages"]] == ["app"]


def test_strict_turns_unknown_keys_into_errors(project, mcpp):
    root = project({"mcpp.toml": '[package]\nname = "s"\nversion = "0.1.0"\n[build]\noptimise = true\n',
                    "src/main.cpp": "int main() {}\n"})
    res = mcpp("build", cwd=root)
    assert res.code == 0 and "mcpp.toml:5:1: warning: unknown key `optimise` in [build] (ignored)" in res.err
    res = mcpp("build", "--strict", cwd=root)
    assert res.code == 2 and "mcpp.toml:5:1: error: unknown key `optimise` in [build] (--strict)" in res.err
    assert "Traceback" not in res.err
