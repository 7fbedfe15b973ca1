"""Everything the user sees, in one place: Cargo-shaped status lines, the live progress counter,
warnings, errors, and `--message-format json` events.

Status lines (`Compiling`, `Finished`, `Running`), the progress counter, `error:` and `warning:`
go to stderr, as Cargo's do: stdout is left to results (a test run's outcomes, the JSON events of
`--message-format json`, one object per line) and to the program `mcpp run` starts, so
`mcpp run > out.txt` captures the program's output alone and a JSON consumer parses stdout
without filtering.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from contextlib import contextmanager
from json.encoder import encode_basestring_ascii as _quoted

from ..core.lazy_re import lazy_compile

# Control characters other than newline and tab: in a manifest value, a build program's warning,
# an action id or a tool's output they would reach the terminal, which obeys them (set the
# window title, move the cursor, hide text). mcpp's own text shows them escaped instead.
_CONTROL = lazy_compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]")
# What a compiler's coloured diagnostics contain (colour on and off, erase to end of line):
# the only sequences compiler output keeps on its way to the terminal (report/diagnostics.py
# removes them for plain text).
SGR = lazy_compile(r"\x1b\[[0-9;]*[mK]")


def escaped(text: str) -> str:
    """`text` with each control character (ESC, BEL, CR, ...) written as `\\x1b` and the like."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def tool_output(text: str) -> str:
    """A tool's output as shown: its colours kept, every other control sequence escaped."""
    parts = SGR.split(text)
    colours = SGR.findall(text)
    out = [escaped(parts[0])]
    for colour, part in zip(colours, parts[1:]):
        out += [colour, escaped(part)]
    return "".join(out)


class Reporter:
    def __init__(self, *, verbose: int = 0, quiet: bool = False, json_mode: bool = False,
                 color: str = "auto", out=None, err=None):
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.verbose = verbose
        self.quiet = quiet
        self.json_mode = json_mode
        self.status_stream = self.err
        isatty = getattr(self.status_stream, "isatty", lambda: False)()
        self.live = isatty and not quiet and os.environ.get("TERM") != "dumb"
        self.color = color == "always" or (color == "auto" and isatty and "NO_COLOR" not in os.environ)
        self._progress_shown = False
        self._lock = threading.Lock()
        # Compilers colour their diagnostics when told to (not in JSON, whose `rendered` is plain).
        self.compiler_colour = self.color and not json_mode
        self.warned = False  # any warning shown (a build that warned is never answered by the no-op fast path)
        self._held = False  # within `held()`: lines to stdout wait for `flush()`
        self._pending = False  # written to stdout, not yet flushed

    # -- plain lines ---------------------------------------------------------------------------
    def _paint(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def status(self, verb: str, message: str, important: bool = False) -> None:
        """`   Compiling hello v0.1.0 (.)`: the verb right-aligned in 12 columns."""
        if self.quiet and not important:
            return
        self._write(self.status_stream, f"{self._paint(verb.rjust(12), '1;32')} {escaped(message)}")

    def line(self, text: str) -> None:
        """A plain line of results on stdout (test outcomes), even under --quiet."""
        self._write(self.out, text)

    def note(self, message: str) -> None:
        if self.verbose:
            self._write(self.status_stream, escaped(message))

    def warning(self, message: str) -> None:
        self.warned = True
        self._write(self.err, f"{self._paint('warning', '1;33')}: {escaped(message)}")

    def raw_warning(self, line: str) -> None:
        """A warning already formatted as `path:line:col: warning: ...`."""
        self.warned = True
        self._write(self.err, escaped(line))

    def error(self, rendered: str) -> None:
        rendered = escaped(rendered)
        head, _, rest = rendered.partition("error:")
        if self.color and _:
            rendered = f"{head}{self._paint('error', '1;31')}:{rest}"
        self._write(self.err, rendered)

    def diagnostics(self, text: str) -> None:
        """Compiler output, verbatim, exactly once."""
        if text:
            self.warned = True
            self._write(self.err, tool_output(text.rstrip("\n")))

    def event(self, reason: str, **fields) -> None:
        if self.json_mode:
            self._write(self.out, _event_line(reason, fields))

    def action_finished(self, action_id: str, kind: str, package: str, status: str) -> None:
        """`event("action-finished", id=..., kind=..., package=..., status=...)`, the same line
        spelled out: a no-op build writes one per action."""
        if self.json_mode:
            self._write(self.out, f'{{"reason": "action-finished", "id": {_quoted(action_id)}, '
                                  f'"kind": {_quoted(kind)}, "package": {_quoted(package)}, '
                                  f'"status": {_quoted(status)}}}')

    def _write(self, stream, line: str) -> None:
        with self._lock:
            if self._progress_shown:
                self._clear_progress()
            if stream is self.out and self._held:
                stream.write(line + "\n")
                self._pending = True
                return
            if self._pending:  # what stdout holds goes first, as unbuffered lines would have
                self._pending = False
                self.out.flush()
            stream.write(line + "\n")
            stream.flush()

    @contextmanager
    def held(self):
        """Within: lines to stdout are not flushed one by one but by `flush()`, which the
        scheduler calls before it waits for a running action, and on the way out; a line to
        another stream flushes them first. A no-op build's thousand `fresh` events are then one
        write, not a thousand wake-ups of whatever reads them, and nothing waits in the buffer
        while the build does."""
        self._held = True
        try:
            yield
        finally:
            self._held = False
            self.flush()

    def flush(self) -> None:
        with self._lock:
            if self._pending:
                self._pending = False
                self.out.flush()

    # -- the live counter ------------------------------------------------------------------------
    def progress(self, done: int, total: int, running: list[str]) -> None:
        if not self.live or total == 0:
            return
        width = 25
        filled = width * done // total
        bar = "=" * max(filled - 1, 0) + (">" if filled else "") + " " * (width - filled)
        what = escaped(", ".join(running[:3]))
        line = f"{self._paint('Building'.rjust(12), '1;36')} [{bar}] {done}/{total}: {what}"
        cols = _terminal_columns()
        with self._lock:
            self.status_stream.write("\r\x1b[2K" + line[: cols - 1])
            self.status_stream.flush()
            self._progress_shown = True

    def end_progress(self) -> None:
        with self._lock:
            self._clear_progress()

    def _clear_progress(self) -> None:
        if self._progress_shown:
            self.status_stream.write("\r\x1b[2K")
            self.status_stream.flush()
            self._progress_shown = False


def _event_line(reason: str, fields: dict) -> str:
    """`json.dumps({"reason": reason, **fields})`, in a third of the time when every value is
    a string (an `action-finished` event: a thousand per no-op build). A str subclass (an action's
    `kind`, a StrEnum) is a string to both: json writes the characters it holds."""
    parts = ['{"reason": ', _quoted(reason)]
    for name, value in fields.items():
        if not isinstance(value, str):
            return json.dumps({"reason": reason, **fields})
        parts += [", ", _quoted(name), ": ", _quoted(value)]
    parts.append("}")
    return "".join(parts)


def _terminal_columns() -> int:
    try:
        return os.get_terminal_size().columns
    except OSError:
        return 100


class Stopwatch:
    def __init__(self):
        self.start = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def __str__(self) -> str:
        return f"{self.elapsed():.2f}s"
