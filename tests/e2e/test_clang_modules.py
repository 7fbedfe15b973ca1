"""clang-19 modules across packages in every sandbox mode: a library package whose interfaces
include headers in their global module fragment and export templates, and a consumer package
that instantiates them across an import (clang reopens the interface's sources when it does)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.e2e.e2e_support import Mcpp

needs_clang = pytest.mark.skipif(shutil.which("clang++-19") is None,
                                 reason="clang-19 is not installed (scripts/install-system-deps.sh)")
pytestmark = needs_clang

LIB = {
    "ops/mcpp.toml": '[package]\nname = "ops"\nversion = "0.1.0"\n\n[toolchain]\ndefault = "clang-19"\n',
    "ops/src/detail/traits.hpp": (
        "#pragma once\n#include <type_traits>\n"
        "namespace ops::detail {\n"
        "template <class T> constexpr bool is_number = std::is_arithmetic_v<T>;\n"
        "template <class T> T twice(T x) { return x + x; }\n}\n"),
    "ops/src/traits.cppm": (
        "module;\n#include \"detail/traits.hpp\"\n#include <vector>\n"
        "export module ops.traits;\n"
        "export namespace ops {\n"
        "template <class T> requires detail::is_number<T> T quad(T x) { return detail::twice(detail::twice(x)); }\n"
        "template <class T> T sum(const std::vector<T>& v) { T s{}; for (const T& x : v) s += x; return s; }\n}\n"),
    "ops/src/ops.cppm": (
        "export module ops;\nexport import ops.traits;\n"
        "export namespace ops { template <class T> T eight(T x) { return twice_of_quad(x); } }\n"
        "template <class T> T twice_of_quad(T x) { return ops::quad(x) * 2; }\n"),
}
APP = {
    "app/mcpp.toml": ('[package]\nname = "app"\nversion = "0.1.0"\n\n[toolchain]\ndefault = "clang-19"\n\n'
                      '[dependencies]\nops = { path = "../ops" }\n'),
    "app/src/main.cpp": (
        "#include <cstdio>\n#include <vector>\nimport ops;\n"
        "int main() { std::printf(\"%d %g %ld\\n\", ops::quad(3), ops::quad(0.5),\n"
        "  ops::sum(std::vector<long>{1, 2, 3})); }\n"),
}
EXPECTED = "12 2 6"


def library_and_consumer(project, name="proj") -> Path:
    return project({**LIB, **APP}, name) / "app"


@pytest.mark.parametrize("sandbox", ["bwrap", "dir"])  # `off` always worked
def test_templates_instantiate_across_packages_in_every_sandbox(project, mcpp, sandbox):
    app = library_and_consumer(project)
    res = mcpp("run", "--sandbox", sandbox, cwd=app)
    assert res.code == 0, res.err
    assert res.out.strip().endswith(EXPECTED)


def test_objects_and_bmis_are_byte_identical_across_checkouts(project, mcpp, tmp_path_factory):
    """The same project in two directories, each with its own cache: under bwrap every object,
    BMI and the binary are the same bytes (a BMI names `/execroot`, never the checkout)."""
    first = library_and_consumer(project, "one")
    second = library_and_consumer(project, "elsewhere/two")
    mcpp("build", cwd=first, check=True)
    Mcpp(tmp_path_factory.mktemp("other-home"))("build", cwd=second, check=True)
    out_one, out_two = first / "target" / "dev", second / "target" / "dev"
    built = sorted(p.relative_to(out_one) for p in out_one.rglob("*")
                   if p.is_file() and (p.suffix in (".o", ".pcm") or p.name == "app"))
    assert {p.suffix for p in built} >= {".o", ".pcm", ""}
    for rel in built:
        assert (out_one / rel).read_bytes() == (out_two / rel).read_bytes(), rel


@pytest.mark.parametrize("first, then", [("bwrap", "dir"), ("dir", "bwrap")])
def test_a_bmi_is_never_served_across_bwrap_and_dir(project, mcpp, first, then):
    """dir cannot prove what an action read (a depfile leaves out `.incbin` and driver-loaded
    files), so its results are keyed apart from bwrap's (engine/trust/policy.py): after `rm -rf target`,
    a build in the other sandbox compiles every module interface and importer itself, and the
    program it links runs."""
    app = library_and_consumer(project)
    mcpp("build", "--sandbox", first, cwd=app, check=True)
    shutil.rmtree(app / "target")
    res = mcpp("run", "--sandbox", then, "--message-format", "json", cwd=app)
    assert res.code == 0, res.err
    assert sorted(res.executed("compile")) == ["compile app:src/main.cpp", "compile ops:src/ops.cppm",
                                               "compile ops:src/traits.cppm"]
    assert EXPECTED in res.out
