"""How module units are planned: a `.cc` interface and an implementation partition write a BMI
under clang (compiled as `c++-module`, embedding what they read) and under gcc (a mapper entry)."""
from __future__ import annotations

import pytest

from mcpp.engine.core.errors import ScanError
from mcpp.engine.modules.p1689 import scan_deps_tool

from tests.unit.plan.planning import action, plan_of

FILES = {
    "mcpp.toml": '[package]\nname = "geo"\nversion = "0.1.0"\n',
    "src/geo.cc": "module;\n#include \"scale.hpp\"\nexport module geo;\nimport :secret;\nexport int area();\n",
    "src/scale.hpp": "int scale(int);\n",
    "src/secret.cpp": "module geo:secret;\nint bias() { return 0; }\n",
    "src/impl.cpp": "module geo;\nimport :secret;\nint area() { return bias(); }\n",
    "src/main.cpp": "import geo;\nint main() { return area(); }\n",
}


@pytest.fixture
def root(project):
    return project(FILES)


def test_clang_compiles_a_cc_interface_and_an_implementation_partition_as_module_units(root, tmp_path):
    plan = plan_of(root, "clang", execroot=tmp_path)
    for src, bmi in (("src/geo.cc", "geo.pcm"), ("src/secret.cpp", "geo-secret.pcm")):
        a = action(plan, f"compile geo:{src}")
        assert f"-fmodule-output=proj/target/dev/.mcpp/bmi/{bmi}" in a.argv
        assert a.argv[a.argv.index("-x") + 1] == "c++-module"
        assert "-fmodules-embed-all-files" in a.argv  # importers need the BMI and nothing else
    impl = action(plan, "compile geo:src/impl.cpp")
    assert "-fmodule-file=geo:secret=proj/target/dev/.mcpp/bmi/geo-secret.pcm" in impl.argv
    assert "-x" not in impl.argv and "-fmodules-embed-all-files" not in impl.argv
    assert "proj/target/dev/.mcpp/bmi/geo-secret.pcm" in action(plan, "compile geo:src/geo.cc").inputs


def test_gcc_maps_the_implementation_partition_for_its_importers(root, tmp_path):
    plan = plan_of(root, "gcc", execroot=tmp_path)
    mapper = plan.generated["proj/target/dev/.mcpp/obj/geo/src/impl.cpp.map"].decode()
    assert "geo:secret proj/target/dev/.mcpp/bmi/geo-secret.gcm\n" in mapper
    assert "proj/target/dev/.mcpp/bmi/geo-secret.gcm" in action(plan, "compile geo:src/secret.cpp").outputs


def test_a_clang_without_clang_scan_deps_refuses_a_conditional_import_and_says_what_is_missing(
        project, tmp_path, monkeypatch):
    """The fake toolchain's clang has no clang-scan-deps beside it, and PATH has none either."""
    monkeypatch.setenv("PATH", str(tmp_path))
    scan_deps_tool.cache_clear()  # it remembers an answer per compiler for the process
    root = project({"mcpp.toml": '[package]\nname = "c"\nversion = "0.1.0"\n',
                    "src/main.cpp": "#ifdef FAST\nimport fast;\n#endif\nint main() {}\n"})
    with pytest.raises(ScanError) as info:
        plan_of(root, "clang", execroot=tmp_path)
    assert "inside a preprocessor conditional" in info.value.message
    assert "`clang-scan-deps` of `/fake/bin/clang++-19` was not found" in info.value.render()
    scan_deps_tool.cache_clear()
