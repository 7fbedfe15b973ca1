"""Index dependencies end to end (docs/dependencies.md): a library index served over HTTP on
127.0.0.1 by the test, the real `mcpp` CLI resolving, locking, fetching, building and running."""
from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from e2e_support import Mcpp
from library_index_support import IndexServer, LibraryIndex, consumer, greet_files, index_env

pytestmark = pytest.mark.heavy


@pytest.fixture
def served(tmp_path):
    index = LibraryIndex.standard(tmp_path / "index")
    with IndexServer(index.root) as server:
        yield index, server


def run(mcpp: Mcpp, app: Path, env: dict, *args: str) -> str:
    res = mcpp("run", "-q", *args, cwd=app, env=env, check=True)
    return res.out.strip()


def lock_of(app: Path) -> dict:
    return {p["name"]: p for p in tomllib.loads((app / "mcpp.lock").read_text())["package"]}


def test_a_consumer_builds_and_runs_and_the_lock_pins_versions_and_digests(tmp_path, mcpp, served):
    index, server = served
    env = index_env(server.url)
    app = consumer(tmp_path / "app", 'greet = "1"\nextra.calc = "1"\n')
    assert run(mcpp, app, env) == "greet 1.1.0 shout=11 calc=40"
    locked = lock_of(app)
    assert {n: p["version"] for n, p in locked.items()} == {"greet": "1.1.0", "shout": "1.1.0", "calc": "1.0.0"}
    for name, ns in (("greet", "mcpplibs"), ("shout", "mcpplibs"), ("calc", "extra")):
        release = next(r for r in index.releases[(ns, name)] if r["version"] == locked[name]["version"])
        assert locked[name]["blake3"] == release["blake3"] and locked[name]["namespace"] == ns
        assert locked[name]["source"] == f"index+{server.url}"
    assert locked["greet"]["dependencies"] == ["mcpplibs.shout 1.1.0"]
    text = (app / "mcpp.lock").read_text()
    # The sources are cached read-only under the home; the build reads a copy inside target/.
    cached = mcpp.home / "registry" / "mcpplibs" / "greet" / "1.1.0" / "src" / "greet.cppm"
    assert cached.is_file() and not cached.stat().st_mode & 0o222
    # A locked, cached build reads no index at all, and leaves the lock byte for byte.
    server.requests.clear()
    (app / "src" / "main.cpp").write_text((app / "src" / "main.cpp").read_text() + "\n")
    assert run(mcpp, app, env) == "greet 1.1.0 shout=11 calc=40"
    assert server.requests == [] and (app / "mcpp.lock").read_text() == text


def test_a_new_release_does_not_move_a_locked_build_and_update_takes_it(tmp_path, mcpp, served):
    index, server = served
    env = index_env(server.url)
    app = consumer(tmp_path / "app", 'greet = "1"\nextra.calc = "1"\n')
    assert run(mcpp, app, env) == "greet 1.1.0 shout=11 calc=40"
    index.add_release("mcpplibs", "greet", "1.2.0", greet_files("1.2.0", "1.1"))
    assert run(mcpp, app, env) == "greet 1.1.0 shout=11 calc=40"  # the lock holds
    assert lock_of(app)["greet"]["version"] == "1.1.0"
    moved = mcpp("update", "-p", "calc", cwd=app, env=env, check=True)
    assert "greet" not in moved.err and lock_of(app)["greet"]["version"] == "1.1.0"
    moved = mcpp("update", "-p", "greet", cwd=app, env=env, check=True)
    assert "mcpplibs.greet 1.1.0 -> 1.2.0" in moved.err
    assert lock_of(app)["greet"]["version"] == "1.2.0"
    assert run(mcpp, app, env) == "greet 1.2.0 shout=11 calc=40"


def test_locked_refuses_a_manifest_change_naming_what_would_change(tmp_path, mcpp, served):
    index, server = served
    env = index_env(server.url)
    app = consumer(tmp_path / "app", 'greet = "1"\nextra.calc = "1"\n')
    mcpp("build", "--locked", cwd=app, env=env)  # no lock yet: refused too
    assert not (app / "mcpp.lock").exists()
    mcpp("build", cwd=app, env=env, check=True)
    assert mcpp("build", "--locked", cwd=app, env=env).code == 0
    before = (app / "mcpp.lock").read_text()
    (app / "mcpp.toml").write_text((app / "mcpp.toml").read_text().replace('extra.calc = "1"', 'extra.calc = "2"'))
    res = mcpp("build", "--locked", cwd=app, env=env)
    assert res.code == 2, res.err
    assert "--locked" in res.err and "extra.calc 1.0.0 -> 2.0.0" in res.err and "Traceback" not in res.err
    assert (app / "mcpp.lock").read_text() == before
    assert run(mcpp, app, env) == "greet 1.1.0 shout=11 calc=41"  # without --locked the lock follows
    assert lock_of(app)["calc"]["version"] == "2.0.0"


def test_a_requirement_conflict_is_refused_naming_both_sides(tmp_path, mcpp, served):
    _index, server = served
    app = consumer(tmp_path / "app", 'greet = "=1.1.0"\nshout = "~1.0"\nextra.calc = "1"\n')
    res = mcpp("build", cwd=app, env=index_env(server.url))
    assert res.code == 2 and "Traceback" not in res.err
    assert "no version of `mcpplibs.shout` meets every requirement" in res.err
    assert "app requires `mcpplibs.shout` `~1.0`" in res.err
    assert "greet 1.1.0 requires `mcpplibs.shout` `1.1`" in res.err
    assert "the index has 1.0.0, 1.1.0" in res.err
    assert re.search(r"mcpp\.toml:\d+:\d+", res.err)  # the consumer's side is positioned
    assert not (app / "mcpp.lock").exists()


def test_features_are_unified_across_the_graph(tmp_path, mcpp, served):
    _index, server = served
    env = index_env(server.url)
    app = consumer(tmp_path / "app", 'greet = "1"\nextra.calc = "1"\nshout = { version = "1", features = ["loud"] }\n')
    # greet's own edge to shout asks for no feature; the one shout in the build has `loud`.
    assert run(mcpp, app, env) == "greet 1.1.0 shout=111 calc=40"
    tree = mcpp("tree", "-e", "features", cwd=app, env=env, check=True).out
    assert 'shout feature "loud"' in tree
    plain = mcpp("tree", cwd=app, env=env, check=True).out
    assert plain.splitlines()[0] == "app v0.1.0 (.)"
    assert "├── greet v1.1.0\n│   └── shout v1.1.0\n" in plain
    assert mcpp("tree", "--duplicates", cwd=app, env=env, check=True).out == ""


def test_vendor_then_a_build_with_the_index_stopped_and_an_empty_home(tmp_path, mcpp, served):
    index, server = served
    app = consumer(tmp_path / "app", 'greet = "1"\nextra.calc = "1"\n')
    res = mcpp("vendor", cwd=app, env=index_env(server.url), check=True)
    assert 'vendor = "vendor"' in res.out
    assert (app / "vendor" / "mcpplibs" / "greet-1.1.0" / "src" / "greet.cppm").is_file()
    lock = (app / "mcpp.lock").read_text()
    server.__exit__(None, None, None)  # the index is gone
    env = index_env(server.url)
    # --offline with vendor/ present, from a home that never saw the index.
    offline = Mcpp(tmp_path / "ci-home")
    assert offline("run", "-q", "--offline", cwd=app, env=env, check=True).out.strip() == "greet 1.1.0 shout=11 calc=40"
    assert not (offline.home / "registry").exists()
    # `[source] vendor` in the manifest: no flag needed, no index read, no cache.
    (app / "mcpp.toml").write_text((app / "mcpp.toml").read_text() + '\n[source]\nvendor = "vendor"\n')
    fresh = Mcpp(tmp_path / "other-home")
    assert fresh("run", "-q", cwd=app, env=env, check=True).out.strip() == "greet 1.1.0 shout=11 calc=40"
    assert (app / "mcpp.lock").read_text() == lock


def test_offline_names_the_package_the_cache_does_not_hold(tmp_path, mcpp, served):
    _index, server = served
    app = consumer(tmp_path / "app", 'greet = "1"\nextra.calc = "1"\n')
    mcpp("build", cwd=app, env=index_env(server.url), check=True)
    res = Mcpp(tmp_path / "empty-home")("build", "--offline", cwd=app, env=index_env(server.url))
    assert res.code == 2 and "--offline" in res.err and "not in the source cache" in res.err
    assert re.search(r"`(mcpplibs\.greet 1\.1\.0|extra\.calc 1\.0\.0|mcpplibs\.shout 1\.1\.0)`", res.err)
    # and with no lock, --offline cannot choose a version: it says which package needs the index
    (app / "mcpp.lock").unlink()
    res = mcpp("build", "--offline", cwd=app, env=index_env(server.url))
    assert res.code == 2 and "needs the library index" in res.err and "Traceback" not in res.err


def test_a_yanked_release_is_not_picked_for_a_new_lock_but_a_lock_keeps_it(tmp_path, mcpp, served):
    index, server = served
    env = index_env(server.url)
    kept = consumer(tmp_path / "kept", 'greet = "1"\nextra.calc = "1"\n')
    assert run(mcpp, kept, env) == "greet 1.1.0 shout=11 calc=40"
    index.yank("mcpplibs", "greet", "1.1.0")
    assert run(mcpp, kept, env) == "greet 1.1.0 shout=11 calc=40"
    new = consumer(tmp_path / "new", 'greet = "1"\nextra.calc = "1"\n')
    assert run(mcpp, new, env) == "greet 1.0.0 shout=10 calc=40"


def test_a_project_without_index_dependencies_reads_no_index_and_writes_no_lock(tmp_path, mcpp, served):
    _index, server = served
    lib = tmp_path / "lib"
    (lib / "src").mkdir(parents=True)
    (lib / "mcpp.toml").write_text('[package]\nname = "lib"\nversion = "0.1.0"\n')
    (lib / "src" / "lib.cppm").write_text("export module lib;\nexport int lib_value() { return 7; }\n")
    app = consumer(tmp_path / "app", 'lib = { path = "../lib", version = "0.1" }\n',
                   main="#include <cstdio>\nimport lib;\nint main() { std::printf(\"%d\\n\", lib_value()); }\n")
    assert run(mcpp, app, index_env(server.url)) == "7"
    assert server.requests == [] and not (app / "mcpp.lock").exists()
    assert not (mcpp.home / "registry").exists()


@pytest.mark.parametrize("entry, message", [
    ('greet = "one"', "`one` is not a version requirement"),
    ('greet = { features = ["x"] }', "needs a `version` (a package of the index) or a `path`"),
    ('greet = { version = ">=1, <" }', "is not a version requirement"),
])
def test_a_bad_index_dependency_is_a_positioned_error(tmp_path, mcpp, entry, message):
    app = consumer(tmp_path / "app", entry + "\n")
    res = mcpp("build", cwd=app)
    assert res.code == 2 and message in res.err and "Traceback" not in res.err
    assert re.search(r"mcpp\.toml:6:\d+: error", res.err), res.err


def test_update_and_vendor_and_tree_have_help(mcpp, tmp_path):
    for cmd in ("update", "vendor", "tree"):
        res = mcpp(cmd, "--help", cwd=tmp_path, check=True)
        assert f"Usage: mcpp {cmd}" in res.out


def test_the_consumer_binary_is_what_was_printed(tmp_path, mcpp, served):
    """The run above goes through `mcpp run`; the binary itself runs the same outside mcpp."""
    _index, server = served
    app = consumer(tmp_path / "app", 'greet = "1"\nextra.calc = "1"\n')
    mcpp("build", cwd=app, env=index_env(server.url), check=True)
    out = subprocess.run([app / "target" / "dev" / "app"], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "greet 1.1.0 shout=11 calc=40"


@pytest.mark.parametrize("server_on", [False, True], ids=["in-process", "warm-server"])
def test_mcpp_update_moves_a_build_the_no_op_path_or_the_server_would_answer(tmp_path, mcpp, served, server_on):
    from e2e_support import SERVER_ON

    index, server = served
    env = {**index_env(server.url), **(SERVER_ON if server_on else {})}
    app = consumer(tmp_path / "app", 'greet = "1"\nextra.calc = "1"\n')
    mcpp("build", cwd=app, env=env, check=True)
    again = mcpp("build", cwd=app, env=env, check=True)
    assert "Compiling" not in again.out + again.err
    index.add_release("mcpplibs", "greet", "1.2.0", greet_files("1.2.0", "1.1"))
    mcpp("update", cwd=app, env=env, check=True)
    moved = mcpp("build", cwd=app, env=env, check=True)
    assert "Compiling greet v1.2.0" in moved.out + moved.err, moved.out
    out = subprocess.run([app / "target" / "dev" / "app"], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "greet 1.2.0 shout=11 calc=40"
    if server_on:
        mcpp("server", "stop", cwd=app, env=env)


def test_a_workspace_locks_every_section_of_every_member_at_its_root(tmp_path, mcpp, served):
    """The lock lies at the workspace root and holds what any build of the workspace may need:
    a member's [feature-deps.<f>], [target.<selector>.dependencies] and [dev-dependencies] too."""
    _index, server = served
    env = index_env(server.url)
    ws = tmp_path / "ws"
    files = {
        "mcpp.toml": '[workspace]\nmembers = ["app", "util"]\n',
        "util/mcpp.toml": '[package]\nname = "util"\nversion = "0.1.0"\n\n[dependencies]\nextra.calc = "1"\n',
        "util/src/util.cppm": "export module util;\nimport calc;\nexport int util_value() { return calc::twice(1); }\n",
        "app/mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n\n[dependencies]\n'
                         'util = { path = "../util", version = "0.1" }\n\n[features]\nfancy = []\n\n'
                         '[feature-deps.fancy]\ngreet = "1"\n\n'
                         "[target.'cfg(os = \"linux\")'.dependencies]\nshout = \"~1.0\"\n\n"
                         '[dev-dependencies]\nmcpplibs.other = { version = "*", features = [] }\n',
        "app/src/main.cpp": '#include <cstdio>\nimport util;\nint main() { std::printf("%d\\n", util_value()); }\n',
    }
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    res = mcpp("build", cwd=ws / "app", env=env)
    assert res.code == 2 and "no package `mcpplibs.other` in the library index" in res.err  # dev-deps count
    assert re.search(r"mcpp\.toml:18:\d+: error", res.err), res.err
    (ws / "app" / "mcpp.toml").write_text(files["app/mcpp.toml"].split("[dev-dependencies]")[0])
    assert mcpp("run", "-q", cwd=ws / "app", env=env, check=True).out.strip() == "2"
    assert not (ws / "app" / "mcpp.lock").exists()
    locked = lock_of(ws)
    # shout ~1.0 from the target section, and greet (feature-deps) choosing 1.0.0 to agree with it
    assert {n: p["version"] for n, p in locked.items()} == {"calc": "1.0.0", "greet": "1.0.0", "shout": "1.0.0"}
    fancy = mcpp("build", "--features", "fancy", "--locked", cwd=ws / "app", env=env, check=True)
    assert "Compiling greet v1.0.0" in fancy.out + fancy.err


def test_refresh_lock_re_resolves_after_a_manifest_edit(tmp_path, served):
    """The entry point `mcpp add`/`mcpp remove` call after editing a manifest."""
    from mcpp.engine.core.settings import Settings
    from mcpp.engine.registry.session import refresh_lock

    _index, server = served
    app = consumer(tmp_path / "app", 'extra.calc = "1"\n')
    settings = Settings.read({"MCPP_HOME": str(tmp_path / "home"), **index_env(server.url)})
    first = refresh_lock(str(app / "mcpp.toml"), settings)
    assert first.changed == ["+ extra.calc 1.0.0"] and lock_of(app)["calc"]["version"] == "1.0.0"
    (app / "mcpp.toml").write_text((app / "mcpp.toml").read_text() + 'greet = "=1.0.0"\n')
    second = refresh_lock(str(app / "mcpp.toml"), settings)
    assert second.changed == ["+ mcpplibs.greet 1.0.0", "+ mcpplibs.shout 1.0.0"]
    (app / "mcpp.toml").write_text((app / "mcpp.toml").read_text().replace('extra.calc = "1"\n', ""))
    third = refresh_lock(str(app / "mcpp.toml"), settings)
    assert third.changed == ["- extra.calc 1.0.0"] and "calc" not in lock_of(app)


def test_vendor_follows_the_lock_and_newest_release_answers_add(tmp_path, mcpp, served):
    from mcpp.engine.core.settings import Settings
    from mcpp.engine.registry.session import newest_release

    index, server = served
    env = index_env(server.url)
    app = consumer(tmp_path / "app", 'greet = "1"\nextra.calc = "1"\n')
    mcpp("vendor", cwd=app, env=env, check=True)
    assert (app / "vendor" / "extra" / "calc-1.0.0").is_dir()
    (app / "mcpp.toml").write_text((app / "mcpp.toml").read_text().replace('extra.calc = "1"', 'extra.calc = "2"'))
    mcpp("vendor", "third_party", cwd=app, env=env, check=True)  # another directory, the lock moved first
    assert (app / "third_party" / "extra" / "calc-2.0.0" / "src" / "calc.cppm").is_file()
    mcpp("vendor", cwd=app, env=env, check=True)
    assert not (app / "vendor" / "extra" / "calc-1.0.0").exists()  # the lock no longer names it
    assert (app / "vendor" / "extra" / "calc-2.0.0").is_dir()
    settings = Settings.read({"MCPP_HOME": str(tmp_path / "h"), **env})
    index.yank("extra", "calc", "2.0.0")
    assert newest_release(settings, "extra", "calc") == "1.0.0"
    assert newest_release(settings, "mcpplibs", "greet", "~1.0") == "1.0.0"
    assert newest_release(settings, "mcpplibs", "nothing") is None


def test_an_index_dev_dependency_is_built_by_mcpp_test_only(tmp_path, mcpp, served):
    _index, server = served
    env = index_env(server.url)
    app = consumer(tmp_path / "app", 'greet = "1"\n', main='#include <cstdio>\nimport greet;\n'
                   'int main() { std::printf("%s\\n", greet::version()); }\n')
    (app / "mcpp.toml").write_text((app / "mcpp.toml").read_text() + '\n[dev-dependencies]\nextra.calc = "2"\n')
    (app / "tests").mkdir()
    (app / "tests" / "calc.cpp").write_text("import calc;\nint main() { return calc::twice(1) == 3 ? 0 : 1; }\n")
    built = mcpp("build", cwd=app, env=env, check=True)
    assert "calc" not in built.out + built.err
    assert lock_of(app)["calc"]["version"] == "2.0.0"  # locked all the same: a test build needs it
    tested = mcpp("test", "--locked", cwd=app, env=env)
    assert tested.code == 0, tested.out + tested.err
    assert "Compiling calc v2.0.0" in tested.out + tested.err


def test_an_index_dependency_with_no_index_configured_says_where_to_configure_one(tmp_path, mcpp):
    app = consumer(tmp_path / "app", 'greet = "1"\n')
    res = mcpp("build", cwd=app)
    assert res.code == 2 and "needs the library index, and none is configured" in res.err
    assert "MCPP_INDEX" in res.err and "[index]" in res.err and not (app / "mcpp.lock").exists()
