"""Starlark build programs (`build.star`) and rule modules (the language is docs/rules.md).

`context.py` is what a program may know, `api.py` the global `mcpp` struct it calls,
`modules.py` which rule modules it may `load`, `evaluate.py` runs it with starlark-pyo3,
`cache.py` skips the evaluation when nothing it read has changed, `driver.py` does all of that
for every package of a graph. What a program declared (actions, sources, flags, warnings, facts)
is `engine/package/program_result.py`, part of the package model the planner reads.
"""
