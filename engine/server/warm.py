"""What a server keeps warm between builds.

For now: the engine's modules, imported once in the server so no build child pays for them.
"""
from __future__ import annotations

import importlib

# Imported lazily by the command line on the paths a build takes; the server pays once.
_MODULES = (
    "mcpp.engine.cli", "mcpp.engine.build", "mcpp.engine.run_command", "mcpp.engine.test_command",
    "mcpp.engine.pipeline", "mcpp.engine.schedule", "mcpp.engine.plan.planner",
    "mcpp.engine.program.driver", "mcpp.engine.program.evaluate", "mcpp.engine.program.bounded",
    "mcpp.engine.modules.scanner", "mcpp.engine.plan.include_scan", "mcpp.sandbox", "mcpp.cas.statcache",
    "starlark", "blake3", "zstandard",
)


def preload() -> None:
    for name in _MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            pass


class Hooks:
    def before_fork(self, request: dict) -> None:
        pass

    def in_child(self) -> None:
        pass

    def after_build(self, pid: int, message: dict) -> None:
        pass

    def status(self) -> dict:
        return {}
