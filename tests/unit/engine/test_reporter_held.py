"""Reporter.held(): JSON events are written at once but flushed together."""
from __future__ import annotations

import io

from mcpp.engine.report.reporter import Reporter


class Recorded(io.StringIO):
    """A stream that remembers what had been flushed (what a reader of the pipe would see)."""

    def __init__(self, log: list[str], name: str):
        super().__init__()
        self.log, self.name = log, name
        self.flushed = ""

    def flush(self):
        super().flush()
        if self.getvalue() != self.flushed:
            self.log.append(f"{self.name}: {self.getvalue()[len(self.flushed):]!r}")
            self.flushed = self.getvalue()


def test_held_events_reach_the_reader_at_flush_and_before_any_other_line():
    log: list[str] = []
    out, err = Recorded(log, "out"), Recorded(log, "err")
    r = Reporter(json_mode=True, out=out, err=err)
    r.event("one", n=1)
    assert log == ['out: \'{"reason": "one", "n": 1}\\n\'']  # not held: flushed line by line
    log.clear()
    with r.held():
        r.event("a")
        r.event("b")
        assert log == []
        r.flush()
        assert log == ['out: \'{"reason": "a"}\\n{"reason": "b"}\\n\'']
        r.event("c")
        r.warning("w")  # another stream: what stdout holds goes out first, in order
        r.event("d")
        assert log[1:] == ['out: \'{"reason": "c"}\\n\'', "err: 'warning: w\\n'"]
    assert log[-1] == 'out: \'{"reason": "d"}\\n\''  # on the way out


def test_an_event_line_is_what_json_dumps_writes():
    import json

    from mcpp.engine.report.reporter import _event_line

    for fields in ({}, {"id": "compile a:src/ü \"x\".cpp", "kind": "compile", "status": "fresh"},
                   {"id": "x", "exit_code": 1, "duration": 0.5, "origin": {"by": "me"}}, {"ok": True}):
        assert _event_line("action-finished", fields) == json.dumps({"reason": "action-finished", **fields})


def test_an_action_finished_line_is_what_json_dumps_writes():
    """The spelled-out `action-finished` line (one per action of a no-op) and the general one
    agree, a StrEnum kind and characters json escapes included."""
    import json

    from mcpp.cas.action import ActionKind

    out = io.StringIO()
    r = Reporter(json_mode=True, out=out, err=io.StringIO())
    r.action_finished('compile a:src/ü "x"\\.cpp', ActionKind.COMPILE, "pkg\t1", "fresh")
    r.event("action-finished", id="link a", kind=ActionKind.LINK, package="a", status="executed")
    assert out.getvalue().splitlines() == [
        json.dumps({"reason": "action-finished", "id": 'compile a:src/ü "x"\\.cpp', "kind": "compile",
                    "package": "pkg\t1", "status": "fresh"}),
        json.dumps({"reason": "action-finished", "id": "link a", "kind": "link", "package": "a",
                    "status": "executed"})]
