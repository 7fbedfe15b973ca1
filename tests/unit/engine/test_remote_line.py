"""The human `Remote` status line (engine/build/compose.remote_line) says what a build without the
bytes left on the server and what it fetched after all, as the JSON `build-finished` event does."""
from __future__ import annotations

from mcpp.engine.build.compose import remote_line


def _summary(**over) -> dict:
    base = {"url": "grpc://cache:8980", "hits": 12, "misses": 0, "uploads": 0, "republished": 0,
            "bytes_down": 2048, "bytes_up": 0, "retries": 0, "corrupt": 0, "download": "all",
            "kept_remote": 0, "fetched_later": 0, "refused": {"count": 0, "reasons": {}, "keys": []},
            "disabled": None}
    return {**base, **over}


def test_a_full_download_says_nothing_of_outputs_left_remote():
    assert remote_line(_summary()) == "grpc://cache:8980: 12 hits, 0 misses, 0 uploads, 2.0 KiB down, 0 B up"


def test_toplevel_and_minimal_say_what_stayed_on_the_server_and_what_came_later():
    line = remote_line(_summary(download="minimal", kept_remote=14, fetched_later=2))
    assert line.endswith(", 14 outputs left remote, 2 fetched later"), line
