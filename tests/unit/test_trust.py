"""engine/trust.py: results of `--sandbox off` are keyed apart and never uploaded."""
from mcpp.cas.remote.config import RemoteSettings
from mcpp.engine import trust


def test_only_off_gets_a_namespace():
    assert trust.platform_for("gcc", "x86_64-linux-gnu", "off").namespace
    for mode in (None, "bwrap", "dir"):
        assert trust.platform_for("gcc", "x86_64-linux-gnu", mode).namespace == ""


def test_off_turns_uploading_off_and_says_so():
    warned = []
    settings = RemoteSettings("grpc://h:1", "h:1", upload=True)
    assert trust.without_upload(settings, "off", warned.append).upload is False
    assert len(warned) == 1 and "not uploaded" in warned[0]
    assert trust.without_upload(settings, "bwrap", warned.append) is settings
    assert trust.without_upload(None, "off", warned.append) is None


def test_a_host_tool_built_by_an_off_build_is_keyed_apart():
    assert trust.tool_host("x86_64-linux-gnu", "off") != "x86_64-linux-gnu"
    assert trust.tool_host("x86_64-linux-gnu", None) == trust.tool_host("x86_64-linux-gnu", "bwrap") == "x86_64-linux-gnu"
