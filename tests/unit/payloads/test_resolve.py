"""resolve_environment on real manifests (loaded as a build loads them) and a local index with
`dir` and `system` sources: arbitration, validation, ranges, gates, adoption."""
from __future__ import annotations

import os
import textwrap

import pytest

from mcpp.engine.package.graph import load_graph
from mcpp.engine.package.model import Selection
from mcpp.engine.payloads import PayloadError, resolve_environment
from mcpp.engine.payloads.index import IndexSet
from mcpp.engine.payloads.resolve import host_platform_key
from mcpp.engine.manifest.triples import host_triple
from mcpp.engine.core.settings import Settings


def write(root, files):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip())
    return root


@pytest.fixture
def index(tmp_path):
    root = tmp_path / "index"
    releases = "".join(f'[[release]]\nversion = "{v}"\nlinux-x86_64 = {{ dir = "trees/{v}" }}\n'
                       for v in ("1.0.0", "1.5.0", "2.0.0"))
    write(root, {"index.toml": '[index]\nname = "t"\nformat = 1\n',
                 "pkgs/xim/gen.toml": f'[package]\nname = "gen"\nnamespace = "xim"\nbins = ["bin/gen"]\n{releases}'})
    for v in ("1.0.0", "1.5.0", "2.0.0"):
        write(root, {f"trees/{v}/bin/gen": f"#!/bin/sh\necho {v}\n"})
    # A `system` root whose probe says 3.1.4
    sysroot = tmp_path / "opt-tool"
    write(sysroot, {"bin/tool": "#!/bin/sh\necho 'tool version 3.1.4'\n"})
    os.chmod(sysroot / "bin" / "tool", 0o755)
    write(root, {"pkgs/xim/tool.toml": f'''
        [package]
        name = "tool"
        bins = ["bin/tool"]
        [[release]]
        version = "3.1.4"
        linux-x86_64 = {{ system = "{sysroot}", probe = ["bin/tool"], match = "version ([0-9.]+)" }}
        [[release]]
        version = "9.0.0"
        linux-x86_64 = {{ system = "{sysroot}", probe = ["bin/tool"], match = "version ([0-9.]+)" }}
        '''})
    return root


def project(tmp_path, app: str, deps: dict[str, str] | None = None):
    files = {"app/mcpp.toml": '[package]\nname = "app"\nversion = "0.1.0"\n'
                              + ("[dependencies]\n" + "".join(f'{d} = {{ path = "../{d}" }}\n' for d in deps)
                                 if deps else "") + app,
             "app/src/main.cpp": "int main() {}\n"}
    for d, text in (deps or {}).items():
        files[f"{d}/mcpp.toml"] = f'[package]\nname = "{d}"\nversion = "0.1.0"\n' + text
        files[f"{d}/src/{d}.cpp"] = "int f() { return 1; }\n"
    return write(tmp_path, files) / "app"


def resolve(tmp_path, index, root, install=True, **selection):
    graph = load_graph(str(root), None, Selection(**selection))
    return resolve_environment(graph, Settings.read({"MCPP_HOME": str(tmp_path / "home")}),
                               install_missing=install, indexes=IndexSet([str(index)]))


def only(env):
    (p,) = env.payloads
    return p


def test_the_nearer_declaration_wins_and_must_satisfy_the_others(tmp_path, index):
    root = project(tmp_path, '[xlings.workspace]\n"xim:gen" = "1.5.0"\n',
                   {"a": '[xlings.workspace]\n"xim:gen" = ">=1.2"\n', "b": '[xlings.workspace]\n"gen" = ""\n'})
    p = only(resolve(tmp_path, index, root))
    assert (p.version, p.declared_by, p.source) == ("1.5.0", "app", "dir")
    assert os.path.isfile(os.path.join(p.directory, "bin", "gen"))


def test_a_pin_failing_a_requirement_is_refused_naming_both(tmp_path, index):
    root = project(tmp_path, '[xlings.workspace]\n"xim:gen" = "1.0.0"\n', {"a": '[xlings.workspace]\n"xim:gen" = "^1.5"\n'})
    with pytest.raises(PayloadError) as e:
        resolve(tmp_path, index, root)
    assert "pinned to 1.0.0" in e.value.message and "package `a`" in e.value.message and "`^1.5`" in e.value.message
    assert not (tmp_path / "home" / "payloads" / "xim").exists()  # refused before anything was installed


def test_ranges_meet_against_the_index(tmp_path, index):
    root = project(tmp_path, '[xlings.workspace]\n"xim:gen" = ">=1.0"\n', {"a": '[xlings.workspace]\n"xim:gen" = "<2"\n'})
    assert only(resolve(tmp_path, index, root)).version == "1.5.0"


def test_versionless_declarations_take_the_highest(tmp_path, index):
    root = project(tmp_path, '[xlings.workspace]\n"gen" = ""\n', {"a": '[xlings]\ndeps = ["xim:gen"]\n'})
    p = only(resolve(tmp_path, index, root, install=False))
    assert p.version == "2.0.0" and p.directory == "" and p.why == "no declaration names a version"


def test_a_gate_applies_only_with_its_feature(tmp_path, index):
    root = project(tmp_path, '[features]\nextra = []\n[feature-xlings.extra]\n"xim:gen" = "2.0.0"\n')
    assert resolve(tmp_path, index, root).payloads == []
    assert only(resolve(tmp_path, index, root, features=("extra",))).version == "2.0.0"


def test_a_system_installation_is_adopted_only_at_the_version_its_probe_reports(tmp_path, index):
    root = project(tmp_path, '[xlings.workspace]\n"xim:tool" = ">=1"\n')
    p = only(resolve(tmp_path, index, root))
    assert (p.version, p.source, p.directory) == ("3.1.4", "system", str(tmp_path / "opt-tool"))
    root = project(tmp_path / "b", '[xlings.workspace]\n"xim:tool" = "9.0.0"\n')
    with pytest.raises(PayloadError) as e:
        resolve(tmp_path, index, root)
    assert "has no release 9.0.0" in e.value.message and "reports version 3.1.4" in e.value.message


def test_a_package_in_no_index_is_refused_at_its_declaration(tmp_path, index):
    root = project(tmp_path, '[xlings.workspace]\n"xim:nope" = ""\n')
    with pytest.raises(PayloadError) as e:
        resolve(tmp_path, index, root)
    assert "`xim:nope` is not in any payload index" in e.value.message and e.value.pos.line == 5


def test_a_dir_source_with_a_link_out_of_it_is_refused(tmp_path, index):
    os.symlink("/etc", index / "trees" / "2.0.0" / "etc")
    root = project(tmp_path, '[xlings.workspace]\n"xim:gen" = "2.0.0"\n')
    with pytest.raises(PayloadError, match="trees/2.0.0/etc is a link to `/etc`, outside the payload; nothing was "
                                           "installed"):
        resolve(tmp_path, index, root)
    assert not (tmp_path / "home" / "payloads" / "xim" / "gen" / "2.0.0").exists()


def test_a_dir_release_that_is_a_symlink_out_of_the_index_is_refused(tmp_path, index):
    host = tmp_path / "host"
    write(host, {"bin/gen": "a host file\n"})
    os.rename(index / "trees" / "2.0.0", tmp_path / "moved")
    os.symlink(host, index / "trees" / "2.0.0")
    root = project(tmp_path, '[xlings.workspace]\n"xim:gen" = "2.0.0"\n')
    with pytest.raises(PayloadError) as e:
        resolve(tmp_path, index, root)
    assert f"directory {index}/trees/2.0.0 of the index leads outside the index ({index}): " \
           f"`{index}/trees/2.0.0` is a symlink to `{host}`; nothing was installed" in e.value.message
    assert not (tmp_path / "home" / "payloads" / "xim" / "gen" / "2.0.0").exists()


def test_a_dir_release_may_be_a_link_inside_the_index_and_is_copied_as_what_it_names(tmp_path, index):
    os.rename(index / "trees" / "2.0.0", tmp_path / "moved")
    os.symlink("1.5.0", index / "trees" / "2.0.0")
    os.symlink("gen", index / "trees" / "1.5.0" / "bin" / "g")
    root = project(tmp_path, '[xlings.workspace]\n"xim:gen" = "2.0.0"\n')
    env = resolve(tmp_path, index, root)
    installed = tmp_path / "home" / "payloads" / "xim" / "gen" / "2.0.0"
    assert not installed.is_symlink() and (installed / "bin" / "gen").read_text() == "#!/bin/sh\necho 1.5.0\n"
    assert os.readlink(installed / "bin" / "g") == "gen"
    assert only(env).directory == str(installed)


@pytest.mark.parametrize("target", ["../../1.0.0/bin/gen", "../../../pkgs"])
def test_a_dir_release_with_a_link_out_of_itself_is_refused(tmp_path, index, target):
    """A link that leaves the release (even to elsewhere in the index) would lead out of the
    payload once copied into the store."""
    os.symlink(target, index / "trees" / "2.0.0" / "bin" / "other")
    root = project(tmp_path, '[xlings.workspace]\n"xim:gen" = "2.0.0"\n')
    with pytest.raises(PayloadError) as e:
        resolve(tmp_path, index, root)
    assert f"trees/2.0.0/bin/other is a link to `{target}`, outside the payload" in e.value.message
    assert not (tmp_path / "home" / "payloads" / "xim" / "gen" / "2.0.0").exists()


def test_a_fifo_in_a_dir_release_is_refused_not_read(tmp_path, index):
    os.mkfifo(index / "trees" / "2.0.0" / "pipe")
    root = project(tmp_path, '[xlings.workspace]\n"xim:gen" = "2.0.0"\n')
    with pytest.raises(PayloadError, match="trees/2.0.0/pipe is a device, fifo or other special file"):
        resolve(tmp_path, index, root)


def test_a_cross_build_takes_target_axis_payloads_for_the_target_and_host_axis_ones_for_the_host(tmp_path, index):
    host = host_platform_key()
    write(index, {"pkgs/xim/libs.toml": f'''
        [package]
        name = "libs"
        bins = []
        [[release]]
        version = "1.0.0"
        {host} = {{ dir = "trees/libs-host" }}
        linux-aarch64 = {{ dir = "trees/libs-arm" }}
        ''', "trees/libs-host/which": "host\n", "trees/libs-arm/which": "aarch64\n"})
    root = project(tmp_path, '[xlings.workspace]\n"xim:gen" = "2.0.0"\n'
                             '[target.\'cfg(os = "linux")\'.xlings.workspace]\n"xim:libs" = ""\n')
    env = resolve(tmp_path, index, root, target="aarch64-linux-gnu")
    by_name = {p.name: p for p in env.payloads}
    assert (by_name["libs"].axis, by_name["gen"].axis) == ("target", "host")
    assert open(os.path.join(by_name["libs"].directory, "which")).read() == "aarch64\n"
    assert open(os.path.join(by_name["gen"].directory, "bin", "gen")).read() == "#!/bin/sh\necho 2.0.0\n"
    assert by_name["libs"].directory.endswith("/libs/1.0.0+linux-aarch64")  # stored apart from the host's
    # Built for the host, the same target-axis block takes the host's release.
    native = {p.name: p for p in resolve(tmp_path, index, root, target=host_triple().text).payloads}
    assert open(os.path.join(native["libs"].directory, "which")).read() == "host\n"
