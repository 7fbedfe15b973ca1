"""Every `mcpp` subcommand, once: the table click registers from (engine/cli/app.py) and the thin
client routes by (engine/server/client.py), as ninja's `kTools[]` is for its tools.

Each row: the command's name, the name of its click command in `engine/cli/app.py`'s namespace
(defined there or imported into it), and whether it builds, so that the warm build server runs it
(docs/server.md). A command missing here is not registered at all; one named here whose click
command is missing stops `mcpp` at start-up. Plain tuples, nothing imported: the client reads this
before anything else.
"""
from __future__ import annotations

COMMANDS: tuple[tuple[str, str, bool], ...] = (
    ("build", "build_cmd", True),
    ("run", "run_cmd", True),
    ("test", "test_cmd", True),
    ("install", "install_cmd", False),
    ("clean", "clean_cmd", False),
    ("new", "new_cmd", False),
    ("init", "init_cmd", False),
    ("explain", "explain_cmd", False),
    ("metadata", "metadata_cmd", False),
    ("update", "update_cmd", False),
    ("vendor", "vendor_cmd", False),
    ("tree", "tree_cmd", False),
    ("cache", "cache_group", False),
    ("payload", "payload_group", False),
    ("add", "add_cmd", False),
    ("remove", "remove_cmd", False),
    ("package", "package_cmd", False),
    ("pack", "pack_cmd", False),
    ("publish", "publish_cmd", False),
    ("server", "server_group", False),
    ("worker", "worker_command", False),
)

# The commands a warm build server runs for the client.
SERVED: tuple[str, ...] = tuple(name for name, _attr, served in COMMANDS if served)
