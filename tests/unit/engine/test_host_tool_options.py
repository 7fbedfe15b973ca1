"""A host tool's build takes every option of the build the user asked for (remote execution, the
sandbox, -j, the settings, and any option added later) except the ones it sets itself, which
engine/build/host_tools.py names in one place."""
from __future__ import annotations

import dataclasses

from mcpp.engine.build.compose import BuildOptions
from mcpp.engine.build.host_tools import HOST_TOOL_OVERRIDES, host_tool_options
from mcpp.engine.package.model import Selection
from mcpp.engine.core.settings import RemoteFlags, Settings


def users_options(tmp_path) -> BuildOptions:
    """Options whose every field differs from its default, as a user's command line can make them."""
    settings = Settings.read({"MCPP_HOME": str(tmp_path / "home")},
                             RemoteFlags("grpc://cache:1", upload=True, execute=True))
    return BuildOptions(cwd=str(tmp_path / "app"), manifest_path=str(tmp_path / "app" / "mcpp.toml"),
                        profile="release", selection=Selection(features=("fast",)), jobs=7, keep_going=True,
                        toolchain="clang", sandbox="dir", target_override=None, settings=settings,
                        timings="json", trace=str(tmp_path / "trace.json"), executes=True, command_started=1.0)


def test_every_option_but_the_named_overrides_reaches_a_host_tool_build(tmp_path):
    opts = users_options(tmp_path)
    defaults = BuildOptions()
    unset = [f.name for f in dataclasses.fields(BuildOptions)
             if f.name not in HOST_TOOL_OVERRIDES + ("target_override",)
             and getattr(opts, f.name) == getattr(defaults, f.name)]
    assert not unset, f"give these fields a non-default value above, so the test sees them carried: {unset}"
    tool = host_tool_options(opts, cwd=str(tmp_path / "tool"), selection=Selection(),
                             toolchain="gcc", target_override=str(tmp_path / "target" / "host" / "tool"))
    for f in dataclasses.fields(BuildOptions):
        if f.name not in HOST_TOOL_OVERRIDES:
            assert getattr(tool, f.name) == getattr(opts, f.name), f"`{f.name}` is dropped for host tool builds"
    assert tool.settings.flags.execute is True  # remote execution included


def test_a_host_tool_build_builds_its_own_package_quietly_into_its_own_directory(tmp_path):
    tool = host_tool_options(users_options(tmp_path), cwd=str(tmp_path / "tool"), selection=Selection(),
                             toolchain="gcc", target_override=str(tmp_path / "host"))
    assert (tool.cwd, tool.manifest_path, tool.toolchain, tool.target_override) == \
        (str(tmp_path / "tool"), None, "gcc", str(tmp_path / "host"))
    assert (tool.keep_going, tool.timings, tool.trace) == (False, None, None)
