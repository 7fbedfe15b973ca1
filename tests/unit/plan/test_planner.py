"""The planner against a small graph of real packages and a fake toolchain: which actions it
plans, their command lines, inputs, outputs and order, and the errors it reports. No compiler
runs; each test takes milliseconds."""
from __future__ import annotations

import json

import pytest

from mcpp.engine.core.errors import McppError, ScanError
from mcpp.engine.plan.model import ArtifactKind
from mcpp.engine.package.program_result import ProgramResult, RuleAction

from tests.unit.plan.planning import action, load, plan_of

APP = '''
    [package]
    name = "app"
    version = "0.1.0"

    [dependencies]
    geo = { path = "../geo" }
'''
GEO = '[package]\nname = "geo"\nversion = "0.1.0"\n\n[lib]\n'


@pytest.fixture
def root(tmp_path, project):
    """`app` (a binary importing module `geo` and including `geo.h`) and its dependency `geo`
    (a library: a module interface, a C++ source and two headers). Returns app's root."""
    project({
        "mcpp.toml": GEO,
        "src/geo.cppm": "export module geo;\nexport int area(int w, int h) { return w * h; }\n",
        "src/perimeter.cpp": '#include "geo.h"\nint perimeter(int w, int h) { return 2 * (w + h); }\n',
        "include/geo.h": "int perimeter(int w, int h);\n",
        "include/unused.h": "int unused();\n",
    }, name="geo")
    return project({
        "mcpp.toml": APP,
        "src/main.cpp": '#include "geo.h"\nimport geo;\nint helper();\nint main() { return area(2, 3) + helper(); }\n',
        "src/helper.cpp": "int helper() { return 1; }\n",
        "tests/smoke.cpp": '#include "geo.h"\nint helper();\nint main() { return helper() - 1; }\n',
    }, name="app")


def test_a_library_and_a_binary_plan_compiles_an_archive_and_a_link(root, tmp_path):
    plan = plan_of(root, execroot=tmp_path)
    assert {a.id: a.kind for a in plan.actions} == {
        "compile geo:src/geo.cppm": "compile",
        "compile geo:src/perimeter.cpp": "compile",
        "archive geo": "archive",
        "compile app:src/helper.cpp": "compile",
        "compile app:src/main.cpp": "compile",
        "link app:app": "link",
    }
    assert plan.execroot == str(tmp_path)
    assert {a.id: plan.package_of[a.id] for a in plan.actions}["archive geo"] == "geo"

    archive = action(plan, "archive geo")
    objs = ("app/target/dev/.mcpp/obj/geo/src/geo.cppm.o", "app/target/dev/.mcpp/obj/geo/src/perimeter.cpp.o")
    assert archive.argv == ("/fake/bin/ar", "rcsD", "app/target/dev/.mcpp/deps/libgeo.a", *objs)
    assert archive.inputs == objs and archive.outputs == ("app/target/dev/.mcpp/deps/libgeo.a",)
    assert set(plan.prereqs["archive geo"]) == {"compile geo:src/geo.cppm", "compile geo:src/perimeter.cpp"}

    link = action(plan, "link app:app")
    assert link.argv[:3] == ("/fake/bin/g++", "-o", "app/target/dev/app")
    assert link.inputs == ("app/target/dev/.mcpp/obj/app/src/main.cpp.o", "app/target/dev/.mcpp/obj/app/src/helper.cpp.o",
                           "app/target/dev/.mcpp/deps/libgeo.a")
    assert "archive geo" in plan.prereqs["link app:app"]  # the archive before the link
    assert [(a.package, a.name, a.kind, a.path) for a in plan.artifacts] == [
        ("geo", "geo", "lib", "app/target/dev/.mcpp/deps/libgeo.a"), ("app", "app", "bin", "app/target/dev/app")]


def test_a_module_interface_compiles_before_its_importer_gcc(root, tmp_path):
    plan = plan_of(root, "gcc", execroot=tmp_path)
    iface = action(plan, "compile geo:src/geo.cppm")
    assert iface.outputs == ("app/target/dev/.mcpp/obj/geo/src/geo.cppm.o", "app/target/dev/.mcpp/bmi/geo.gcm",
                             "app/target/dev/.mcpp/obj/geo/src/geo.cppm.d")
    argv = list(iface.argv)
    assert argv[0] == "/fake/bin/g++" and "-std=c++23" in argv
    assert "-fmodules-ts" in argv and "-fmodule-mapper=app/target/dev/.mcpp/obj/geo/src/geo.cppm.map" in argv
    assert argv[argv.index("-x") + 1] == "c++"
    assert argv[argv.index("-c") + 1] == "geo/src/geo.cppm"
    assert plan.generated["app/target/dev/.mcpp/obj/geo/src/geo.cppm.map"] == b"geo app/target/dev/.mcpp/bmi/geo.gcm\n"

    main = action(plan, "compile app:src/main.cpp")
    assert "compile geo:src/geo.cppm" in plan.prereqs["compile app:src/main.cpp"]
    assert main.inputs == ("app/src/main.cpp", "app/target/dev/.mcpp/bmi/geo.gcm", "app/target/dev/.mcpp/obj/app/src/main.cpp.map")
    assert plan.generated["app/target/dev/.mcpp/obj/app/src/main.cpp.map"] == b"geo app/target/dev/.mcpp/bmi/geo.gcm\n"
    assert "-Igeo/include" in main.argv
    assert main.depfile == "app/target/dev/.mcpp/obj/app/src/main.cpp.d" and main.depfile in main.outputs
    # The include scan stages the header main.cpp names, not every header of the dependency.
    assert main.may_read == ("geo/include/geo.h",)
    assert action(plan, "compile app:src/helper.cpp").may_read == ()
    assert plan.prereqs["compile app:src/helper.cpp"] == ()
    assert [c["file"] for c in plan.compile_commands][-1] == str(root / "src/main.cpp")


def test_clang_passes_each_bmi_on_the_command_line_and_writes_no_mapper(root, tmp_path):
    plan = plan_of(root, "clang", execroot=tmp_path)
    iface = action(plan, "compile geo:src/geo.cppm")
    assert iface.argv[0] == "/fake/bin/clang++-19"
    assert "-fmodule-output=app/target/dev/.mcpp/bmi/geo.pcm" in iface.argv
    assert iface.argv[iface.argv.index("-x") + 1] == "c++-module"
    main = action(plan, "compile app:src/main.cpp")
    assert "-fmodule-file=geo=app/target/dev/.mcpp/bmi/geo.pcm" in main.argv
    assert main.inputs == ("app/src/main.cpp", "app/target/dev/.mcpp/bmi/geo.pcm")
    assert plan.generated == {}


def test_paths_are_relative_to_the_execroot_the_caller_gives(root, tmp_path):
    plan = plan_of(root, execroot=tmp_path.parent)
    prefix = tmp_path.name + "/"
    assert plan.execroot == str(tmp_path.parent)
    assert action(plan, "compile app:src/helper.cpp").inputs == (prefix + "app/src/helper.cpp",)
    assert action(plan, "link app:app").outputs == (prefix + "app/target/dev/app",
                                                     prefix + "app/target/dev/.mcpp/link-deps/app.d")


def test_a_link_writes_a_depfile_of_what_it_read_and_keys_the_linker_program(root, tmp_path):
    """The linker's `--dependency-file` names the crt objects and libraries outside the build
    (keyed through the two-level lookup, as a compile's headers); the linker the driver runs is
    a tool of the link."""
    link = action(plan_of(root, execroot=tmp_path), "link app:app")
    assert link.depfile == "app/target/dev/.mcpp/link-deps/app.d" and link.depfile in link.outputs
    assert "-Wl,--dependency-file=app/target/dev/.mcpp/link-deps/app.d" in link.argv
    assert link.tools[0] == link.argv[0] and len(link.tools) > 1


def test_under_with_tests_each_test_source_becomes_a_test_binary(root, tmp_path):
    assert not [a for a in plan_of(root, execroot=tmp_path).actions if "tests/" in a.id]
    plan = plan_of(root, execroot=tmp_path, with_tests=True)
    compile_test = action(plan, "compile app:tests/smoke.cpp")
    assert compile_test.outputs[0] == "app/target/dev/.mcpp/test-obj/app/tests/smoke.cpp.o"
    test = action(plan, "link-test app:smoke")
    assert test.kind == "link"
    assert test.outputs == ("app/target/dev/.mcpp/tests/app/smoke", "app/target/dev/.mcpp/link-deps/tests/app/smoke.d")
    # The package's library objects (not its main) and its dependency's archive.
    assert test.inputs == ("app/target/dev/.mcpp/test-obj/app/tests/smoke.cpp.o",
                           "app/target/dev/.mcpp/obj/app/src/helper.cpp.o", "app/target/dev/.mcpp/deps/libgeo.a")
    assert set(plan.prereqs["link-test app:smoke"]) == {
        "compile app:tests/smoke.cpp", "compile app:src/helper.cpp", "archive geo"}
    tests = [a for a in plan.artifacts if a.kind is ArtifactKind.TEST]
    assert [(a.name, a.path) for a in tests] == [("smoke", "app/target/dev/.mcpp/tests/app/smoke")]


def test_artifact_kinds_are_strings_in_comparisons_and_json(root, tmp_path):
    kinds = [a.kind for a in plan_of(root, execroot=tmp_path, with_tests=True).artifacts]
    assert kinds == [ArtifactKind.LIB, ArtifactKind.BIN, ArtifactKind.TEST]
    assert kinds == ["lib", "bin", "test"] and f"{kinds[1]}" == "bin"
    assert json.dumps(kinds) == '["lib", "bin", "test"]'


def test_an_import_no_source_exports_is_an_error_at_the_import(project, tmp_path):
    root = project({"mcpp.toml": '[package]\nname = "solo"\nversion = "0.1.0"\n',
                    "src/main.cpp": "int x;\nimport nowhere;\nint main() {}\n"})
    with pytest.raises(ScanError) as err:
        plan_of(root, execroot=tmp_path)
    assert err.value.message == "module `nowhere` is imported but no source of `solo` or its dependencies exports it"
    assert err.value.pos.line == 2 and err.value.pos.path.endswith("src/main.cpp")


def test_an_import_cycle_among_interfaces_is_named(project, tmp_path):
    root = project({"mcpp.toml": '[package]\nname = "cyc"\nversion = "0.1.0"\n',
                    "src/main.cpp": "import a;\nint main() {}\n",
                    "src/a.cppm": "export module a;\nimport b;\n",
                    "src/b.cppm": "export module b;\nimport c;\n",
                    "src/c.cppm": "export module c;\nimport a;\n"})
    with pytest.raises(McppError, match=r"^module cycle: a -> b -> c -> a$"):
        plan_of(root, execroot=tmp_path)


def test_two_sources_exporting_one_module_is_an_error(project, tmp_path):
    root = project({"mcpp.toml": '[package]\nname = "dup"\nversion = "0.1.0"\n',
                    "src/main.cpp": "int main() {}\n",
                    "src/one.cppm": "export module m;\n", "src/two.cppm": "export module m;\n"})
    with pytest.raises(McppError, match=r"module `m` is declared by two sources: `.*src/one.cppm` and `.*src/two.cppm`"):
        plan_of(root, execroot=tmp_path)


def test_import_std_with_gcc_is_an_error_that_names_clang(project, tmp_path):
    root = project({"mcpp.toml": '[package]\nname = "s"\nversion = "0.1.0"\n',
                    "src/main.cpp": "import std;\nint main() {}\n"})
    with pytest.raises(ScanError, match=r"`import std;` needs clang-19 with libc\+\+") as err:
        plan_of(root, "gcc", execroot=tmp_path)
    assert err.value.pos.line == 1


def test_a_build_programs_object_joins_the_archive_and_its_artifact_runs_after_the_link(root, tmp_path):
    """A build program's `object` output is archived with the package; an `artifact` action waits
    for the package's links; a rule input nobody makes is an error."""
    graph = load(root)
    app = next(p for p in graph.order if p.name == "app")
    geo = next(p for p in graph.order if p.name == "geo")
    gen = str(root / "target/dev/.mcpp/gen")
    geo.program = ProgramResult(actions=[RuleAction(
        "table", ("/fake/bin/mktable", "-o", f"{gen}/geo/table.o"), (), (f"{gen}/geo/table.o",),
        ("/fake/bin/mktable",), role="object")])
    app.program = ProgramResult(actions=[RuleAction(
        "copy", ("/bin/cp", str(root / "target/dev/app"), f"{gen}/app/app.copy"), (str(root / "target/dev/app"),),
        (f"{gen}/app/app.copy",), ("/bin/cp",), role="artifact")])
    plan = plan_of(root, execroot=tmp_path, graph=graph)

    rule = action(plan, "rule geo:table")
    assert rule.kind == "rule" and rule.cwd == "geo"
    assert rule.argv == ("/fake/bin/mktable", "-o", "@@EXECROOT@@/app/target/dev/.mcpp/gen/geo/table.o")
    assert "app/target/dev/.mcpp/gen/geo/table.o" in action(plan, "archive geo").inputs
    assert "rule geo:table" in plan.prereqs["archive geo"]

    assert plan.actions[-1].id == "rule app:copy"
    assert set(plan.prereqs["rule app:copy"]) == {"link app:app"}

    app.program.actions.append(RuleAction("stray", ("/bin/true",), (str(root / "missing.txt"),),
                                          (f"{gen}/app/stray",), ("/bin/true",), role="check"))
    with pytest.raises(McppError, match=r"package `app`, action `stray`: input `app/missing.txt` does not exist"):
        plan_of(root, execroot=tmp_path, graph=graph)


# -- the first compile handed on before the rest is planned (engine/exec/head_start.py) ----------

def _handed(root, execroot):
    """The plan, and each compile the planner handed on: with how many sources it had scanned."""
    from mcpp.engine.manifest import globs
    from mcpp.engine.package.layout import Layout
    from mcpp.engine.package.profiles import resolve_profile
    from mcpp.engine.plan.planner import Planner
    from tests.unit.plan.planning import fake_toolchain, includes, scan

    graph = load(root)
    profile = resolve_profile(graph.root_manifest, "dev")
    layout = Layout(graph.workspace_root, graph.target_dir, str(execroot), profile.name)
    scanned: list[str] = []
    handed = []

    def counting_scan(path, *a):
        scanned.append(path)
        return scan(path, *a)

    def listing(root, patterns, boundary=None):
        listed.append(tuple(patterns))
        return globs.expand(root, patterns, boundary)

    plan = Planner(graph, fake_toolchain("gcc"), profile, layout=layout, scan=counting_scan, includes=includes,
                   expand=listing, first_compile=lambda a: (handed.append((a, len(scanned))),
                                                            listed_when_handed.append(len(listed)))).build()
    return plan, handed


listed: list[tuple[str, ...]] = []  # what `_handed`'s planner expanded, in order
listed_when_handed: list[int] = []  # how many expansions it had made when it handed a compile on


def test_the_first_ordinary_compile_is_handed_on_as_soon_as_its_source_is_scanned(project, tmp_path):
    root = project({"mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
                    "src/a.cpp": '#include "a.h"\nint a() { return A; }\n', "src/a.h": "#define A 1\n",
                    "src/b.cpp": "int b() { return 2; }\n",
                    "src/main.cpp": "int a();\nint b();\nint main() { return a() + b(); }\n"})
    plan, handed = _handed(root, tmp_path)
    assert [(a.id, n) for a, n in handed] == [("compile p:src/a.cpp", 1)]  # once, before b and main
    assert handed[0][0] == action(plan, "compile p:src/a.cpp")  # its header included
    assert any(p.endswith("src/a.h") for p in handed[0][0].may_read)


def test_the_first_compile_is_handed_on_before_the_packages_sources_are_all_listed(project, tmp_path):
    """A quick look (`globs.first`) finds a source before the glob lists the whole package (10,000
    sources take tens of milliseconds): a first build's compile starts that much sooner."""
    from mcpp.engine.core.conventions import DEFAULT_GLOBS

    root = project({"mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
                    **{f"src/m{i}/u{j}.cpp": f"int u{i}_{j}() {{ return {j}; }}\n" for i in range(3) for j in range(3)},
                    "src/main.cpp": "int main() { return 0; }\n"})
    listed.clear()
    listed_when_handed.clear()
    plan, handed = _handed(root, tmp_path)
    assert [(a.id, n) for a, n in handed] == [("compile p:src/main.cpp", 1)]  # the first in name order
    assert handed[0][0] == action(plan, "compile p:src/main.cpp")
    [before] = listed_when_handed
    assert listed[:before] == []  # handed on before the sources, or the header pool, were listed
    assert tuple(DEFAULT_GLOBS) in listed[before:]


def test_the_first_compiles_headers_are_looked_up_not_walked_and_are_the_plans(project, tmp_path):
    """The first compile's headers are the pool headers its include scan reaches, asked path by
    path (plan/pool_lookup.py) instead of walking the pool (10,000 units: ~20 ms): a header
    beside the source and headers under an include directory; neither a header no include
    names, nor one under a `.` directory, nor a directory an include names."""
    root = project({"mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
                    "src/a.cpp": '#include "a.h"\n#include <p/api.h>\n#include <.hidden/h.h>\n'
                                 '#include <p>\nint a() { return A; }\n',
                    "src/a.h": "#define A 1\n", "src/unused.h": "int unused();\n",
                    "include/p/api.h": '#include "more.h"\n', "include/p/more.h": "int more();\n",
                    "include/.hidden/h.h": "int hidden();\n",
                    "src/main.cpp": "int a();\nint main() { return a(); }\n"}, name="p")
    listed.clear()
    listed_when_handed.clear()
    plan, handed = _handed(root, tmp_path)
    [(started, _)] = handed
    assert started.id == "compile p:src/a.cpp" and started == action(plan, started.id)
    assert sorted(started.may_read) == ["p/include/p/api.h", "p/include/p/more.h", "p/src/a.h"]
    assert listed[:listed_when_handed[0]] == []  # no pool was walked before it was handed on


def test_the_first_compile_of_a_dependency_looks_up_its_own_dependencys_headers(root, tmp_path):
    """geo's compile (the first: dependencies are planned first) reaches geo.h in geo's include
    directory, looked up as the walk would list it."""
    listed.clear()
    listed_when_handed.clear()
    plan, handed = _handed(root, tmp_path)
    [(started, _)] = handed
    from mcpp.engine.core.conventions import HEADER_GLOBS

    assert started == action(plan, started.id) and started.may_read == ("geo/include/geo.h",)
    before = listed[:listed_when_handed[0]]  # (geo's sources were: its first unit is a module's)
    assert tuple(HEADER_GLOBS) not in before and ("**/*",) not in before


def test_a_first_compile_whose_headers_the_lookup_cannot_place_walks_the_pool_as_before(project, tmp_path):
    """A header reached through a symbolic link: the walk's rules for links decide, so the pool
    is walked for it; the compile handed on is still the plan's."""
    import os

    root = project({"mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
                    "src/a.cpp": '#include <linked/x.h>\nint a() { return X; }\n',
                    "include/real/x.h": "#define X 1\n",
                    "src/main.cpp": "int a();\nint main() { return a(); }\n"}, name="p")
    os.symlink("real", os.path.join(root, "include", "linked"))
    listed.clear()
    listed_when_handed.clear()
    plan, handed = _handed(root, tmp_path)
    [(started, _)] = handed
    assert started == action(plan, started.id)
    assert listed[:listed_when_handed[0]] != []  # the pool was walked for it


def test_a_header_linked_out_of_the_package_is_never_read_by_the_lookup(project, tmp_path, monkeypatch):
    """The lookup places no path through a symlink: `include/evil.h -> <outside>` goes to the
    walk, which refuses it (containment.py), so nothing is handed on and planning names the link
    (the outside file is neither read nor staged)."""
    import os

    outside = tmp_path / "outside.h"
    outside.write_text("#define SECRET 1\n")
    root = project({"mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n',
                    "src/a.cpp": '#include <evil.h>\nint a() { return SECRET; }\n', "include/ok.h": "\n",
                    "src/main.cpp": "int a();\nint main() { return a(); }\n"}, name="p")
    os.symlink(outside, os.path.join(root, "include", "evil.h"))
    opened: list[str] = []
    from tests.unit.plan import planning

    real = planning.includes
    monkeypatch.setattr(planning, "includes", lambda path: (opened.append(path), real(path))[1])
    with pytest.raises(McppError, match=r"evil\.h.*leads outside"):
        _handed(root, tmp_path)
    assert not any(p.endswith("evil.h") for p in opened)


def test_a_quick_look_that_finds_an_excluded_or_feature_source_hands_on_what_make_makes(project, tmp_path):
    """`!` patterns are applied to the quick look; a package whose features name sources is
    listed whole first (a feature's file may be one the build leaves out)."""
    root = project({"mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n\n[build]\n'
                                 'sources = ["src/**/*.cpp", "!src/a*.cpp"]\n',
                    "src/a.cpp": "int a() { return 1; }\n", "src/b.cpp": "int b() { return 2; }\n",
                    "src/main.cpp": "int main() { return 0; }\n"})
    plan, handed = _handed(root, tmp_path)
    assert [a.id for a, _ in handed] == ["compile p:src/b.cpp"]
    assert "compile p:src/a.cpp" not in {a.id for a in plan.actions}
    feature = project({"mcpp.toml": '[package]\nname = "q"\nversion = "0.1.0"\n\n[features]\n'
                                    'fast = { sources = ["src/a.cpp"] }\n',
                       "src/a.cpp": "int a() { return 1; }\n", "src/main.cpp": "int main() { return 0; }\n"},
                      name="q")
    plan, handed = _handed(feature, tmp_path / "q-exec")
    assert [a.id for a, _ in handed] == ["compile q:src/main.cpp"]  # a.cpp is the feature's, off


def test_a_module_unit_is_not_handed_on_the_next_ordinary_one_is(root, tmp_path):
    """geo's interface (`geo.cppm`, made first) needs the module graph of every unit."""
    plan, handed = _handed(root, tmp_path)
    assert [a.id for a, _ in handed] == ["compile geo:src/perimeter.cpp"]
    assert handed[0][0] == action(plan, "compile geo:src/perimeter.cpp")


def test_a_compile_the_whole_plan_makes_otherwise_is_handed_on_as_it_was_then(project, tmp_path):
    """A package whose only target is shared compiles its library position-independent, which
    only the whole plan knows: the compile handed on is not the plan's (HeadStart.settle)."""
    from mcpp.engine.exec.head_start import adoptable

    root = project({"mcpp.toml": '[package]\nname = "p"\nversion = "0.1.0"\n\n[targets.p]\nkind = "shared"\n',
                    "src/a.cpp": "int a() { return 1; }\n"})
    plan, handed = _handed(root, tmp_path)
    started = handed[0][0]
    assert "-fPIC" not in started.argv and "-fPIC" in action(plan, started.id).argv
    assert not adoptable(started, {a.id: a for a in plan.actions}, plan.prereqs)
