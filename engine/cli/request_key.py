"""Which earlier build a server's build may take its plan and knowledge from: the same request.

A request is everything a build may depend on besides the files (server/warm.py): its command line,
working directory, environment and umask. Options that change only what the build prints or
reports beside its outputs (`-v`, `-q`, `--color`, `--message-format`, `--timings`, `--trace`)
change neither its plan nor any action's key (a compiler's colours are asked for when it runs,
not in its command's key), so a build with `--trace` and the same build without it are one
request: the plan and knowledge of either serve the other. Only a line the engine's plain
reading understands (cli/flags.py `plain_build`, the options as click would pass them) is read
so; any other is compared word for word. The server is given this reading (engine/entry.py):
which options only print is the command line's to say.
"""
from __future__ import annotations

from ..server.plan_memo import same_request
from .flags import plain_build

# the options (their destinations) that change only what is printed or reported
PRESENTATION = frozenset({"verbose", "quiet", "color", "message_format", "timings", "trace",
                          "verbose_local", "quiet_local"})


def request_key(request: dict) -> str:
    argv = request["argv"]
    read = plain_build(argv)
    if read is None:
        line: object = argv
    else:
        group, command = read
        line = ["build", *([[k, v] for k, v in sorted(options.items()) if k not in PRESENTATION]
                           for options in (group, command))]
    return same_request({**request, "argv": line})
