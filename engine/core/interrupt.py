"""SIGINT, SIGTERM and SIGHUP end a command the way Ctrl-C does, with the conventional exit code.

A hang-up (terminal closed, ssh dropped) or a `kill` cancels a build as Ctrl-C cancels it:
running actions killed, state saved, the build lock released, `error: interrupted`. The command
exits with 128 + the signal's number (130, 143, 129), as a process killed by it would report to
its shell. A signal the command was started with ignored (`nohup mcpp build`) stays ignored.
"""
from __future__ import annotations

import signal

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """The command was told to stop by `signum` (a KeyboardInterrupt, so whatever cleans up after
    Ctrl-C cleans up after it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def raise_interrupted(signum: int, _frame) -> None:
    raise Interrupted(signum)


def install() -> None:
    """Make SIGTERM and SIGHUP interrupt this process as SIGINT does (SIGINT keeps Python's own
    handler); a signal ignored or handled already is left as it is."""
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) == signal.SIG_DFL:
            signal.signal(signum, raise_interrupted)


def exit_code(exc: BaseException | None) -> int:
    """128 + the number of the signal behind `exc` (an `Interrupted`, or an exception it caused,
    such as click's Abort); 130 for a plain KeyboardInterrupt."""
    while exc is not None:
        if isinstance(exc, Interrupted):
            return 128 + exc.signum
        exc = exc.__cause__ or exc.__context__
    return 128 + signal.SIGINT
