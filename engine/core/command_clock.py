"""When the command began: the moment the `mcpp` process started, as a `time.time()` value.

The build may run in another process than the one the user started (a warm server's build
child), and its own clocks start late: the interpreter's start-up and the engine's imports come
first. A build's trace (`--trace FILE`, engine/report/timings.py) places its actions against
this moment, so that a reader sees how long the command took to start its first compile. The
client hands it to a server in its request (engine/server/client.py); the wall clock is the one
clock both processes share.

Imported by the server client before the engine: it uses only `os` and `time`.
"""

import os
import time


def process_started() -> float:
    """The wall-clock time this process started (its start as the kernel counts it, in clock
    ticks since boot, taken back from the boot-time clock); now, where /proc cannot say."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()  # the name in parentheses may hold spaces
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - int(fields[19]) / os.sysconf("SC_CLK_TCK")
        now = time.time()
        return now - max(0.0, age)
    except (OSError, ValueError, IndexError, AttributeError):
        return time.time()


def monotonic_of(wall: float) -> float:
    """The `time.monotonic()` reading of the wall-clock moment `wall` (this process's clocks)."""
    return time.monotonic() - (time.time() - wall)
