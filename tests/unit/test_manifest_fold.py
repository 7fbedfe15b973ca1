"""Folding a manifest for a build context: order, replacement, narrowing, positions, warnings."""
from __future__ import annotations

import textwrap

import pytest

from mcpp.engine.core.accel import AccelSet, parse_accel
from mcpp.engine.core.errors import ManifestError
from mcpp.engine.manifest.context import BuildContext, resolve_context
from mcpp.engine.manifest.fold import fold, read_manifest
from mcpp.engine.manifest.load import parse_manifest
from mcpp.engine.manifest.triples import host_triple, parse_triple
from mcpp.engine.core.errors import McppError

HEAD = '[package]\nname = "fold"\nversion = "0.1.0"\n\n'


def write(tmp_path, body: str, name: str = "mcpp.toml") -> str:
    path = tmp_path / name
    path.write_text(HEAD + textwrap.dedent(body).lstrip("\n"))
    return str(path)


def ctx(triple: str = "x86_64-linux-gnu", accel: str = "") -> BuildContext:
    return BuildContext(parse_triple(triple), host_triple(), parse_accel(accel))


def test_conditional_entries_append_after_unconditional_ones_and_triples_after_cfgs(tmp_path):
    path = write(tmp_path, """
        [target.x86_64-linux-gnu.build]
        defines = ["TRIPLE"]
        [target.'cfg(unix)'.build]
        defines = ["UNIX"]
        [target.'cfg(linux)'.build]
        defines = ["LINUX"]
        [build]
        defines = ["BASE"]
    """)
    assert fold(parse_manifest(path), ctx()).build.defines == ("BASE", "UNIX", "LINUX", "TRIPLE")
    assert fold(parse_manifest(path), ctx("x86_64-apple-darwin")).build.defines == ("BASE", "UNIX")


def test_a_dependency_stated_again_under_a_selector_is_replaced(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "mcpp.toml").write_text(f'[package]\nname = "{name}"\nversion = "0.1.0"\n')
    path = write(tmp_path, """
        [dependencies]
        a = { path = "a" }
        b = { path = "b" }
        [target.'cfg(unix)'.dependencies]
        a = { path = "a", features = [], default-features = false }
    """)
    m = fold(parse_manifest(path), ctx())
    assert [(d.key, d.default_features) for d in m.dependencies] == [("b", True), ("a", False)]
    assert m.dependencies[1].keypath == ("target", "cfg(unix)", "dependencies", "a")


def test_a_folded_entry_is_reported_where_it_is_written(tmp_path):
    path = write(tmp_path, """
        [build]
        cxxflags = ["-O2"]

        [target.'cfg(unix)'.dependencies]
        missing = { path = "nowhere" }
    """)
    parse_manifest(path)  # valid as a file: the path is only checked once the block applies
    with pytest.raises(ManifestError) as e:
        fold(parse_manifest(path), ctx())
    assert (e.value.pos.line, e.value.pos.col) == (9, 20)  # the `path` value in the block
    assert fold(parse_manifest(path), ctx("x86_64-pc-windows-msvc")).dependencies == ()


def test_accel_narrows_source_entries_and_selects_blocks(tmp_path):
    path = write(tmp_path, """
        [build]
        sources = ["src/*.cpp", { glob = "k/*.cu", accel = "cuda12.9" }, { glob = "s/*.comp", accel = "vulkan1.2" }]
        [target.'cfg(accelerator = "none")'.build]
        sources = ["src/cpu/*.cpp"]
    """)
    source = parse_manifest(path)
    assert fold(source, ctx()).build.sources == ("src/*.cpp", "src/cpu/*.cpp")
    assert fold(source, ctx(accel="cuda12.9+{sm_89}")).build.sources == ("src/*.cpp", "k/*.cu")
    assert fold(source, ctx(accel="cuda12.9, vulkan1.3")).build.sources == ("src/*.cpp", "k/*.cu", "s/*.comp")


def test_conditional_sources_append_to_the_convention_globs(tmp_path):
    path = write(tmp_path, """
        [target.'cfg(unix)'.build]
        sources = ["extra/*.cpp"]
    """)
    sources = fold(parse_manifest(path), ctx()).build.sources
    assert sources[0] == "src/**/*.c" and sources[-1] == "extra/*.cpp"
    assert fold(parse_manifest(path), ctx("x86_64-pc-windows-msvc")).build.sources is None


def test_one_payload_one_entry_target_axis_wins_and_is_reported(tmp_path):
    path = write(tmp_path, """
        [xlings]
        deps = ["xim:cmake@3.28"]
        [xlings.workspace]
        "xim:glibc" = "2.39"
        [target.'cfg(linux)'.xlings]
        deps = ["cmake@3.30"]
        [target.'cfg(linux)'.xlings.workspace]
        "xim:glibc@2.40" = ""
    """)
    m = fold(parse_manifest(path), ctx())
    assert [(p.address, p.version, p.axis) for p in m.xlings.workspace] == [("xim:glibc@2.40", "2.40", "target")]
    assert [(p.address, p.axis) for p in m.xlings.deps] == [("cmake@3.30", "target")]
    assert sum("declared on both axes" in w for w in m.warnings) == 2


def test_runner_and_sysroot_apply_to_their_triple_only(tmp_path):
    lib = tmp_path / "sysroot" / "usr" / "lib"
    lib.mkdir(parents=True)
    (lib / "crt1.o").write_bytes(b"")
    (lib / "libc.a").write_bytes(b"")
    path = write(tmp_path, """
        [target.x86_64-linux-gnu]
        runner = ["tools/run.sh", "{}"]
        sysroot = "sysroot"
    """)
    m = fold(parse_manifest(path), ctx())
    assert m.runner == (str(tmp_path / "tools" / "run.sh"), "{}")  # a path resolves against the manifest
    assert m.sysroot == str(tmp_path / "sysroot")
    other = fold(parse_manifest(path), ctx("aarch64-linux-gnu"))
    assert other.runner is None and other.sysroot is None


def test_strict_turns_unknown_keys_into_errors_also_in_blocks_that_do_not_apply(tmp_path):
    path = write(tmp_path, """
        [target.'cfg(windows)'.dependencies]
        foo = { path = "foo", colour = "blue" }
    """)
    assert any("unknown key `colour`" in w for w in read_manifest(path).warnings)
    with pytest.raises(ManifestError) as e:
        parse_manifest(path, strict=True)
    assert "(--strict); known keys: path, version, features, default-features" in e.value.message


def test_context_from_flags():
    declared = parse_accel("cuda12.9")
    assert resolve_context(None, None, False, declared).accel_from == "[build] accel"
    assert resolve_context(None, "hip", False, declared).accel.names == {"hip"}
    assert resolve_context(None, None, True, declared).accel == AccelSet()
    assert resolve_context("aarch64-linux-gnu", None, False, None).cross
    with pytest.raises(McppError, match="--accel conflicts with --no-accel"):
        resolve_context(None, "hip", True, None)
    with pytest.raises(McppError, match="invalid --accel `cuda,`"):
        resolve_context(None, "cuda,", False, None)
    with pytest.raises(McppError, match="invalid --target `sparc-sun-solaris`: unknown arch `sparc`"):
        resolve_context("sparc-sun-solaris", None, False, None)
