"""Module scanning as compilers accept it: `import` under `#if` (clang-scan-deps -format=p1689
with clang-19, cached), a module interface in a `.cc` file, and implementation partitions
(`module m:secret;` imported as `import :secret;`) with clang and gcc."""
from __future__ import annotations

import shutil

import pytest

needs_clang = pytest.mark.skipif(shutil.which("clang++-19") is None or shutil.which("clang-scan-deps-19") is None,
                                 reason="clang-19 and clang-tools-19 are not installed (scripts/install-system-deps.sh)")

CLANG = '\n[toolchain]\ndefault = "clang-19"\n'

# A library whose primary interface is a `.cc` file, with a header in its global module fragment,
# an implementation partition imported by the interface and by an implementation unit.
GEO = {
    "geo/mcpp.toml": '[package]\nname = "geo"\nversion = "0.1.0"\n',
    "geo/src/scale.hpp": "#pragma once\nnamespace geo::detail { template <class T> T scale(T x) { return x * 10; } }\n",
    "geo/src/geo.cc": (
        "module;\n#include \"scale.hpp\"\nexport module geo;\nimport :secret;\n"
        "export namespace geo {\n"
        "template <class T> T area(T w, T h) { return detail::scale(w * h) / 10 + hidden_bias(); }\n"
        "int perimeter(int w, int h);\n}\n"),
    "geo/src/secret.cpp": "module geo:secret;\nint hidden_bias() { return 0; }\nint hidden_twice(int x) { return 2 * x; }\n",
    "geo/src/perimeter.cpp": "module geo;\nimport :secret;\nint geo::perimeter(int w, int h) { return hidden_twice(w + h); }\n",
}
APP = {
    "app/mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n\n[dependencies]\ngeo = { path = "../geo" }\n',
    "app/src/main.cpp": "#include <cstdio>\nimport geo;\nint main() { std::printf(\"%d %d\\n\", geo::area(6, 7), geo::perimeter(2, 3)); }\n",
}


def geo_project(project, toolchain: str | None):
    files = {**GEO, **APP}
    if toolchain:
        for m in ("geo/mcpp.toml", "app/mcpp.toml"):
            files[m] += f'\n[toolchain]\ndefault = "{toolchain}"\n'
    return project(files) / "app"


@pytest.mark.parametrize("toolchain, sandbox", [
    pytest.param("clang-19", "bwrap", marks=needs_clang),
    pytest.param("clang-19", "dir", marks=needs_clang),
    ("gcc", "bwrap"),
])
def test_cc_interface_and_implementation_partition_across_packages(project, mcpp, toolchain, sandbox):
    if toolchain == "gcc":  # gcc takes a `.cc` interface as is; the partition is what is tested
        app = geo_project(project, None)
    else:
        app = geo_project(project, toolchain)
    res = mcpp("run", "--sandbox", sandbox, cwd=app)
    assert res.code == 0, res.err
    assert res.out.strip().endswith("42 10")


def conditional_project(project, defines='["FAST"]'):
    return project({
        "mcpp.toml": f'[package]\nname = "c"\nversion = "0.1.0"\n{CLANG}\n[build]\ndefines = {defines}\n',
        "src/config.hpp": "#pragma once\n#define HAVE_EXTRA 1\n",
        "src/fast.cppm": "export module fast;\nexport int speed() { return 9; }\n",
        "src/slow.cppm": "export module slow;\nexport int speed() { return 1; }\n",
        "src/extra.cppm": "export module extra;\nexport int bonus() { return 100; }\n",
        "src/main.cpp": (
            "#include <cstdio>\n#include \"config.hpp\"\n"
            "#ifdef FAST\nimport fast;\n#else\nimport slow;\n#endif\n"
            "#if HAVE_EXTRA\nimport extra;\nint more() { return bonus(); }\n#else\nint more() { return 0; }\n#endif\n"
            "int main() { std::printf(\"%d\\n\", speed() + more()); }\n"),
    })


@needs_clang
@pytest.mark.parametrize("sandbox", ["bwrap", "dir"])
def test_imports_inside_conditionals_follow_the_preprocessor(project, mcpp, sandbox):
    root = conditional_project(project)
    res = mcpp("run", "--sandbox", sandbox, cwd=root)
    assert res.code == 0, res.err
    assert res.out.strip().endswith("109")


@needs_clang
def test_a_conditional_scan_is_cached_and_follows_flags_and_headers(project, mcpp):
    root = conditional_project(project)
    mcpp("build", cwd=root, check=True)
    scans = root / "target" / "dev" / ".mcpp" / "scans"
    before = scans.stat()
    res = mcpp("run", "--message-format", "json", cwd=root, env={"MCPP_NO_FAST_PATH": "1"})
    assert res.code == 0 and res.executed() == [], res.err
    after = scans.stat()  # answered from the cache: nothing scanned, so the file is not rewritten
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    # A changed define takes the other branch ...
    manifest = root / "mcpp.toml"
    manifest.write_text(manifest.read_text().replace('["FAST"]', "[]"))
    res = mcpp("run", cwd=root)
    assert res.code == 0, res.err
    assert res.out.strip().endswith("101")
    # ... and so does a header the preprocessor read, though the source is unchanged.
    (root / "src" / "config.hpp").write_text("#pragma once\n#define HAVE_EXTRA 0\n")
    res = mcpp("run", cwd=root)
    assert res.code == 0, res.err
    assert res.out.strip().endswith("1")


@needs_clang
def test_a_failing_conditional_scan_shows_clangs_diagnostic(project, mcpp):
    root = project({"mcpp.toml": f'[package]\nname = "c"\nversion = "0.1.0"\n{CLANG}',
                    "src/main.cpp": "#include \"missing.hpp\"\n#ifdef X\nimport x;\n#endif\nint main() {}\n"})
    res = mcpp("build", cwd=root)
    assert res.code == 2 and "Traceback" not in res.err, res.err
    assert "scanning `src/main.cpp` for modules failed" in res.err
    assert "'missing.hpp' file not found" in res.err



@needs_clang
def test_a_conditional_import_edited_under_the_warm_server(project, mcpp):
    """The server reuses a plan only while every rewritten file scans the same; a file only a
    preprocessing scan answers is scanned again the way it was (with its unit's flags)."""
    on = {"MCPP_NO_SERVER": "0", "MCPP_SERVER_IDLE": "60"}
    root = conditional_project(project)
    try:
        res = mcpp("run", cwd=root, env=on)
        assert res.code == 0 and res.out.strip().endswith("109"), res.err
        main = root / "src" / "main.cpp"
        main.write_text(main.read_text().replace("speed() + more()", "speed() + more() + 1000"))  # same imports
        res = mcpp("run", cwd=root, env=on)
        assert res.code == 0 and res.out.strip().endswith("1109"), res.err
        main.write_text(main.read_text().replace("#ifdef FAST", "#ifndef FAST"))  # the other import
        res = mcpp("run", cwd=root, env=on)
        assert res.code == 0 and res.out.strip().endswith("1101"), res.err
        assert "warning" not in res.err, res.err
    finally:
        mcpp("server", "stop", cwd=root, env=on)
