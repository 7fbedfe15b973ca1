"""The options of `mcpp` itself and of `build`, `run` and `test`, declared once and without click.

`engine/cli/app.py` makes its click options from these tables; `plain_build` reads the common
command line `mcpp [GLOBAL OPTIONS] build [BUILD OPTIONS]` from them without importing click at
all: click and the `inspect` it imports are ~30 ms of a first build's start on a 2-core machine
(bench/RESULTS.md), paid before its first compile. It reads only what it is sure of, as click would
read it; anything else (help, `--version`, another command, an argument, an unknown option, a value
click would refuse or convert in its own way) is None, and click reads the line, with its usage
messages and suggestions. tests/unit/engine/test_cli_flags.py holds the two readings equal.
"""
from __future__ import annotations

import os

from mcpp.sandbox import NAMES as SANDBOXES

FLAG = "flag"            # present or not: True / False
BOOL_PAIR = "bool_pair"  # `--x/--no-x`: True / False, None when neither is given
COUNT = "count"          # each occurrence adds one
VALUE = "value"          # one string (the last one given wins)
MULTIPLE = "multiple"    # every value given, in order, as a tuple
OPTIONAL = "optional"    # a value, or alone `flag_value` (`--timings`, `--timings=json`)


class Flag:
    """One option: its click declarations (`names`, then `dest` when it differs from what click
    derives) and what it takes. `choices`: the only values it accepts; `number`: an int option,
    `(min, max)` where bounded (None: unbounded); `path`: a click.Path() (read as given)."""

    __slots__ = ("names", "dest", "kind", "help", "metavar", "default", "choices", "number", "path",
                 "flag_value", "off")

    def __init__(self, names: tuple[str, ...], dest: str, kind: str, help: str | None = None, *,  # noqa: A002
                 metavar: str | None = None, default: object = None, choices: tuple[str, ...] | None = None,
                 number: tuple[int | None, int | None] | None = None, path: bool = False,
                 flag_value: str | None = None) -> None:
        self.names = names
        self.dest = dest
        self.kind = kind
        self.help = help
        self.metavar = metavar
        self.default = default
        self.choices = choices
        self.number = number
        self.path = path
        self.flag_value = flag_value
        # `--remote-upload/--no-remote-upload`: the names that set it False
        self.off: tuple[str, ...] = ()
        if kind == BOOL_PAIR:
            on, off = names[0].split("/")
            self.names, self.off = (on,), (off,)

    def unset(self) -> object:
        """Its value when the line does not give it, as click's."""
        if self.kind == FLAG:
            return False
        if self.kind == COUNT:
            return 0
        if self.kind == MULTIPLE:
            return ()
        return self.default

    def takes_value(self) -> bool:
        return self.kind in (VALUE, MULTIPLE, OPTIONAL)


GLOBAL_FLAGS: tuple[Flag, ...] = (
    Flag(("-v", "--verbose"), "verbose", COUNT, "Print commands as they run."),
    Flag(("-q", "--quiet"), "quiet", FLAG, "Print only errors and warnings."),
    Flag(("--color",), "color", VALUE, choices=("auto", "always", "never"), default="auto"),
    Flag(("-j", "--jobs"), "jobs", VALUE, "Parallel actions (0: number of CPUs).", metavar="N",
         number=(None, None)),
    Flag(("--manifest-path",), "manifest_path", VALUE, "Path to mcpp.toml.", path=True),
    Flag(("--no-server",), "no_server", FLAG, "Build in this process, not in the workspace's warm server."),
)

# What a manifest is folded for: shared by build, run, test and metadata.
CONTEXT_FLAGS: tuple[Flag, ...] = (
    Flag(("--target",), "target", VALUE,
         "Target triple (default: the host); selects [target.<triple>] and cfg(...) sections.", metavar="TRIPLE"),
    Flag(("--accel",), "accel", VALUE,
         "Accelerator set for this build, e.g. 'cuda12.9+{sm_89}, vulkan1.2' (default: [build] accel).",
         metavar="SPEC"),
    Flag(("--no-accel",), "no_accel", FLAG, "Build with the empty accelerator set."),
    Flag(("--strict",), "strict", FLAG, "Unknown manifest keys are errors, not warnings."),
)

# How index dependencies are resolved (docs/dependencies.md).
LOCK_FLAGS: tuple[Flag, ...] = (
    Flag(("--locked",), "locked", FLAG, "Refuse to build if mcpp.lock would change."),
    Flag(("--offline",), "offline", FLAG,
         "Never read the library index: index packages from the source cache or vendor/."),
)

# The flags `build`, `run` and `test` share.
BUILD_FLAGS: tuple[Flag, ...] = (
    Flag(("--release",), "release", FLAG, "Build with the release profile."),
    Flag(("--profile",), "profile", VALUE, "Build with the named profile.", metavar="NAME"),
    Flag(("--features",), "features", MULTIPLE, "Comma- or space-separated features to activate.", metavar="LIST"),
    Flag(("--all-features",), "all_features", FLAG, "Activate every feature."),
    Flag(("--no-default-features",), "no_default_features", FLAG, "Do not activate the `default` feature."),
    *CONTEXT_FLAGS,
    Flag(("-p", "--package"), "packages", MULTIPLE, "Package(s) to build.", metavar="NAME"),
    Flag(("--toolchain",), "toolchain", VALUE,
         "gcc (default), gcc-NN, clang (the newest installed clang-NN) or clang-NN.", metavar="NAME"),
    Flag(("--keep-going",), "keep_going", FLAG, "Build as much as possible after a failure."),
    Flag(("--sandbox",), "sandbox", VALUE, "How actions are isolated (default: bwrap when it works, else dir).",
         choices=tuple(SANDBOXES)),
    Flag(("--remote",), "remote", VALUE,
         "Remote cache (REAPI): grpcs://HOST:PORT (TLS), grpc://HOST:PORT or unix:PATH "
         "(else MCPP_REMOTE, else [remote] url in $MCPP_HOME/config.toml).", metavar="URL"),
    Flag(("--remote-upload/--no-remote-upload",), "remote_upload", BOOL_PAIR,
         "Upload results of actions run here to the remote cache."),
    Flag(("--remote-exec/--no-remote-exec",), "remote_exec", BOOL_PAIR,
         "Run actions on the remote server's workers (REAPI Execute; docs/remote.md)."),
    Flag(("--remote-retries",), "remote_retries", VALUE,
         "Retries of a remote call that failed transiently, under a per-build budget "
         "(default 5; 0: none; else [remote] retries).", metavar="N", number=(0, None)),
    Flag(("--remote-jobs",), "remote_jobs", VALUE,
         "Remote cache lookups in flight at once, whatever -j is (default 32; else [remote] jobs).",
         metavar="N", number=(1, 1024)),
    Flag(("--remote-download",), "remote_download", VALUE,
         "What remote hits download: every output, target/'s artifacts (default) "
         "or only what local actions need (else [remote] download).", choices=("all", "toplevel", "minimal")),
    Flag(("--remote-instance-name",), "remote_instance", VALUE,
         "REAPI instance name (else [remote] instance; default \"\").", metavar="NAME"),
    Flag(("--remote-header",), "remote_headers", MULTIPLE,
         "Send this header with every remote call (repeatable; with [remote] headers).", metavar="KEY=VALUE"),
    Flag(("--message-format",), "message_format", VALUE, "json: one JSON object per build event on stdout.",
         choices=("human", "json"), default="human"),
    Flag(("--timings",), "timings", OPTIONAL, "Write a timings report to target/mcpp-timings/ (html, or =json).",
         choices=("html", "json"), flag_value="html"),
    Flag(("--trace",), "trace", VALUE, "Write a Chrome trace-event file of the build (Perfetto, chrome://tracing).",
         metavar="FILE", path=True),
    Flag(("-j", "--jobs"), "jobs_local", VALUE, "Parallel actions (default and 0: number of CPUs).", metavar="N",
         number=(None, None)),
    # Accepted after the subcommand too (`mcpp build -q`), as Cargo does.
    Flag(("-q", "--quiet"), "quiet_local", FLAG, "Print only errors and warnings."),
    Flag(("-v", "--verbose"), "verbose_local", COUNT, "Print commands as they run."),
    Flag(("--no-server",), "no_server", FLAG, "Build in this process, not in the workspace's warm server (docs/server.md)."),
    *LOCK_FLAGS,
)


def plain_build(argv: list[str]) -> tuple[dict[str, object], dict[str, object]] | None:
    """`mcpp`'s options and `build`'s, as click would pass them, for a line `[GLOBAL] build
    [BUILD]` made only of options both tables declare with values click takes as they are; None
    for any other line (click reads it)."""
    try:
        cut = argv.index("build")
    except ValueError:
        return None
    group = _read(argv[:cut], GLOBAL_FLAGS)
    if group is None:
        return None
    command = _read(argv[cut + 1:], BUILD_FLAGS)
    if command is None:
        return None
    return group, command


def _read(args: list[str], flags: tuple[Flag, ...]) -> dict[str, object] | None:
    by_name: dict[str, tuple[Flag, bool]] = {}
    for flag in flags:
        for name in flag.names:
            by_name[name] = (flag, True)
        for name in flag.off:
            by_name[name] = (flag, False)
    values = {flag.dest: flag.unset() for flag in flags}
    value: str | None
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg.startswith("--"):
            name, eq, attached = arg.partition("=")
            found = by_name.get(name)
            if found is None:
                return None
            flag, on = found
            if not flag.takes_value():
                if eq:
                    return None
                _set(values, flag, on)
                continue
            if eq:
                value = attached
            elif flag.kind == OPTIONAL:
                return None  # `--timings VALUE` or `--timings` alone: click decides which
            else:
                value, i = _next_word(args, i)
            if value is None or not _accept(values, flag, value):
                return None
        elif arg.startswith("-") and len(arg) > 1:
            # `-qv`, `-j4`, `-j 4`, `-pNAME`: short options run together, the first that takes a
            # value takes the rest of the word or, at its end, the next word
            k = 1
            while k < len(arg):
                found = by_name.get("-" + arg[k])
                if found is None:
                    return None
                flag, on = found
                k += 1
                if not flag.takes_value():
                    _set(values, flag, on)
                    continue
                if k < len(arg):
                    value, k = arg[k:], len(arg)
                else:
                    value, i = _next_word(args, i)
                if value is None or flag.kind == OPTIONAL or not _accept(values, flag, value):
                    return None
        else:
            return None  # an argument (or `-`, `--`): none of these commands takes one
    return values


def _next_word(args: list[str], i: int) -> tuple[str | None, int]:
    """An option's value as the word at `i`, and the index after it; None where there is none, or
    it looks like an option (click would take it as the value: the reader leaves that to click)."""
    if i < len(args) and not args[i].startswith("-"):
        return args[i], i + 1
    return None, i


def _set(values: dict[str, object], flag: Flag, on: bool) -> None:
    if flag.kind == COUNT:
        values[flag.dest] = int(values[flag.dest]) + 1  # type: ignore[call-overload]
    else:
        values[flag.dest] = on


def _accept(values: dict[str, object], flag: Flag, value: str) -> bool:
    """Store `value` for `flag` when click would take it unchanged (or as the plain int it
    writes); False for what click refuses or reads its own way."""
    if flag.choices is not None and value not in flag.choices:
        return False
    if flag.path and not _readable_or_absent(value):
        return False  # click.Path() refuses an existing path it cannot read, in its words
    stored: object = value
    if flag.number is not None:
        digits = value[1:] if value.startswith("-") else value
        if not digits.isascii() or not digits.isdigit():
            return False
        number = int(value)
        low, high = flag.number
        if (low is not None and number < low) or (high is not None and number > high):
            return False
        stored = number
    if flag.kind == MULTIPLE:
        values[flag.dest] = (*values[flag.dest], stored)  # type: ignore[misc]
    else:
        values[flag.dest] = stored
    return True


def _readable_or_absent(path: str) -> bool:
    try:
        os.stat(path)
    except (OSError, ValueError):
        return True
    return os.access(path, os.R_OK)
