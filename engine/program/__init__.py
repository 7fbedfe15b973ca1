"""Starlark build programs (`build.star`) and rule modules (DESIGN §6, seed 000).

`context.py` is what a program may know, `api.py` the global `mcpp` struct it calls,
`modules.py` which rule modules it may `load`, `evaluate.py` runs it with starlark-pyo3,
`cache.py` skips the evaluation when nothing it read has changed, `result.py` is what it
declared (actions, sources, flags, warnings, facts) for the planner.
"""
from .result import ProgramResult, RuleAction, ROLES

__all__ = ["ProgramResult", "RuleAction", "ROLES"]
