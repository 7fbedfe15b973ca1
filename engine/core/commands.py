"""Every `mcpp` subcommand, once: the table click registers from (engine/cli/app.py) and the thin
client routes by (engine/server/client.py), as ninja's `kTools[]` is for its tools.

Each row: the command's name, where its click command is, and whether it builds, so that the warm
build server runs it (docs/server.md). Where: a name in `engine/cli/app.py`'s namespace, or
`module:attr` with the module under `mcpp.engine`, imported only when that command runs (or `--help`
lists it), so that a build never imports the modules of the commands it is not. A command missing
here is not registered at all; one named here whose click command is missing stops `mcpp` at
start-up (`module:attr`: when it is run; tests/unit/engine/test_command_table.py resolves every
row). Plain tuples, nothing imported: the client reads this before anything else.
"""

COMMANDS: tuple[tuple[str, str, bool], ...] = (
    ("build", "build_cmd", True),
    ("run", "cli.build_commands:run_cmd", True),
    ("test", "cli.build_commands:test_cmd", True),
    ("install", "cli.build_commands:install_cmd", False),
    ("clean", "clean_cmd", False),
    ("new", "new_cmd", False),
    ("init", "init_cmd", False),
    ("explain", "explain_cmd", False),
    ("metadata", "metadata_cmd", False),
    ("update", "cli.dependencies:update_cmd", False),
    ("vendor", "cli.dependencies:vendor_cmd", False),
    ("tree", "cli.dependencies:tree_cmd", False),
    ("cache", "cli.cache:cache_group", False),
    ("payload", "cli.payload:payload_group", False),
    ("add", "cli.deps_edit:add_cmd", False),
    ("remove", "cli.deps_edit:remove_cmd", False),
    ("package", "cli.publish:package_cmd", False),
    ("pack", "cli.publish:pack_cmd", False),
    ("publish", "cli.publish:publish_cmd", False),
    ("server", "server.commands:server_group", False),
    ("worker", "bot.command:worker_command", False),
)

# The commands a warm build server runs for the client.
SERVED: tuple[str, ...] = tuple(name for name, _attr, served in COMMANDS if served)

# `mcpp`'s own options that take a value (the next word, or after `=`), before the subcommand
_GLOBAL_WITH_VALUE = ("--color", "-j", "--jobs", "--manifest-path")


def subcommand(argv: list[str]) -> tuple[str | None, str | None]:
    """(the subcommand, the global `--manifest-path`) of the command line `argv`, read as click
    reads it: the first word that is neither one of `mcpp`'s options nor its value. No subcommand
    for `-h`, `--help` or `--version` before it, or none before `--`."""
    manifest_path = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            break
        if a in _GLOBAL_WITH_VALUE:
            if a == "--manifest-path" and i + 1 < len(argv):
                manifest_path = argv[i + 1]
            i += 2
            continue
        if a.startswith("--manifest-path="):
            manifest_path = a.split("=", 1)[1]
        elif a in ("-h", "--help", "--version"):
            return None, manifest_path
        elif not a.startswith("-"):
            return a, manifest_path
        i += 1
    return None, manifest_path
