"""Run one build-program evaluation in a forked child with a memory and a time limit.

starlark-rust has no memory limit, and a single operation (`[1] * 2000000000`, a string doubled
thirty times) can allocate gigabytes before it returns or panics; in the engine's own process
that takes the machine down or ends in a `PanicException`. A child process can carry an
`RLIMIT_AS` of its own: an allocation past it fails there, the child dies, and the engine says
which program ran out of memory. The child also has a wall-clock deadline (the evaluator's own
cancellation check stops a loop at its line; a kill stops an operation that never returns),
and Ctrl-C in the engine kills it.

The function's return value travels back pickled over a pipe; an `McppError` travels back as
its parts (with the lines the program printed before it, `printed`), so the engine raises it
exactly as if the evaluation had run in-process.
"""
from __future__ import annotations

import faulthandler
import os
import pickle
import resource
import select
import signal
import tempfile
import time
from typing import Callable

from ..core.errors import McppError, Position
from .nesting import STACK_BYTES, on_big_stack

# Generous for any real build program (they run in milliseconds and a few MiB); small enough that
# a runaway one fails in seconds instead of swapping. Both can be raised for an unusual program.
TIME_LIMIT_ENV = "MCPP_PROGRAM_TIME_LIMIT"  # seconds
MEMORY_LIMIT_ENV = "MCPP_PROGRAM_MEMORY_LIMIT"  # MiB of address space beyond the engine's own
DEFAULT_TIME_LIMIT = 60.0
DEFAULT_MEMORY_LIMIT_MIB = 2048
# An operation that never reaches a cancellation check (one huge concatenation) is killed this
# long after the deadline.
KILL_GRACE = 3.0


def time_limit() -> float:
    return _env_number(TIME_LIMIT_ENV, DEFAULT_TIME_LIMIT)


def memory_limit_mib() -> float:
    return _env_number(MEMORY_LIMIT_ENV, DEFAULT_MEMORY_LIMIT_MIB)


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise McppError(f"${name} must be a number, not `{raw}`") from None
    if value <= 0:
        raise McppError(f"${name} must be positive, not `{raw}`")
    return value


def run_bounded(fn: Callable[[], object], program: str):
    """`fn()` in a child process under the limits; `program` names the file in messages."""
    seconds, mib = time_limit(), memory_limit_mib()
    with tempfile.TemporaryFile() as errlog:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read_end)
            _child(fn, write_end, errlog.fileno(), mib)
        os.close(write_end)
        data = None
        try:
            data = _collect(read_end, time.monotonic() + seconds + KILL_GRACE)
        finally:
            os.close(read_end)
            if data is None:  # the deadline, or Ctrl-C: the child must not outlive the engine's interest
                _kill(pid)
            _, status = os.waitpid(pid, 0)
        if data is None:
            raise McppError(f"build program did not finish within {seconds:g} s "
                            f"(the limit; set ${TIME_LIMIT_ENV} to change it)", Position(program))
        errlog.seek(0)
        stderr = errlog.read().decode(errors="replace")
    return _outcome(data, status, stderr, program, mib)


def _outcome(data: bytes, status: int, stderr: str, program: str, mib: float):
    """The child's return value, or the error it raised, or why it died."""
    try:
        kind, *rest = pickle.loads(data) if data else ("died",)
    except Exception:  # noqa: BLE001 - a child cut off mid-write
        kind, rest = "died", []
    if kind == "ok":
        return rest[0]
    if kind == "error":
        cls, message, pos, notes, printed = rest
        error = cls(message, pos, notes)
        error.printed = printed
        raise error
    crash = rest[0] if kind == "crash" else ""
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSEGV:
        raise McppError("build program overflowed the Starlark evaluator's stack (a value nested thousands "
                        "of levels deep?)", Position(program))
    signalled = os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGABRT, signal.SIGKILL)
    if kind == "memory" or "out of memory" in crash or "memory allocation" in stderr or signalled:
        raise McppError(f"build program ran out of memory (the limit is {mib:g} MiB; "
                        f"set ${MEMORY_LIMIT_ENV} to change it)", Position(program))
    detail = crash or _last_line(stderr) or f"exit status {status}"
    raise McppError(f"build program stopped the Starlark evaluator: {detail}", Position(program))


def _child(fn, write_end: int, err_fd: int, mib: float) -> None:
    try:
        faulthandler.disable()  # a host's fault handler would print the engine's stack on an abort
        # The terminal's Ctrl-C reaches the whole process group; the child just stops.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.dup2(err_fd, 2)  # a Rust panic's message is read back, not shown raw
        os.environ["RUST_BACKTRACE"] = "0"
        # The evaluator's thread stack (nesting.py) is address space the program does not allocate.
        limit = _address_space() + int(mib * 1024 * 1024) + STACK_BYTES
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        try:
            payload = ("ok", on_big_stack(fn))
        except McppError as e:
            payload = ("error", type(e), e.message, e.pos, e.notes, getattr(e, "printed", []))
        except MemoryError:
            payload = ("memory",)
        except BaseException as e:  # noqa: BLE001 - pyo3's PanicException derives from BaseException
            payload = ("crash", f"{type(e).__name__}: {e}".strip())
        try:
            data = pickle.dumps(payload)
        except MemoryError:
            data = pickle.dumps(("memory",))
        view = memoryview(data)
        while view:
            view = view[os.write(write_end, view):]
    finally:
        os._exit(0)


def _collect(fd: int, deadline: float) -> bytes | None:
    """Everything the child writes, or None when it is still running at the deadline."""
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _address_space() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""
