"""The one environment every action runs in, and every probe of a tool actions run.

A fixed value: an action's result must not depend on the user's shell. SOURCE_DATE_EPOCH pins
the build time gcc writes into module CMIs (and `__DATE__`/`__TIME__`). The toolchain probe asks
its questions in this environment too, so what it learns (search directories, the linker) is
what an action will meet.
"""
from __future__ import annotations

ACTION_ENV = (("LC_ALL", "C"), ("PATH", "/usr/local/bin:/usr/bin:/bin"), ("SOURCE_DATE_EPOCH", "0"))
