"""Regular expressions compiled where they are first used, not when their module is imported.

Every `mcpp` process imports the engine before its first compile, and a module-level
`re.compile` is paid then, whether or not the command meets the text it matches: a build of a
project without C++ modules never runs the module scanner's expressions, a build without errors
never parses a diagnostic. `lazy_compile` takes the same arguments as `re.compile` and returns
an object that compiles the expression on its first use and from then on answers as the
compiled pattern does: its methods and attributes are the compiled pattern's own, copied onto
it, so a use after the first costs what a use of the pattern costs. Only for expressions a
plain build does not use; one it does use gains nothing from waiting.
"""
from __future__ import annotations

import re
from typing import Any, AnyStr, Iterable, cast

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

# What is copied onto the object at its first use (everything `re.Pattern` offers).
_ATTRIBUTES = ("match", "fullmatch", "search", "sub", "subn", "split", "findall", "finditer", "scanner",
               "pattern", "flags", "groups", "groupindex")


class _Deferred:
    """A pattern's source and flags until its first use; the pattern's attributes after it."""

    def __init__(self, pattern: str | bytes, flags: int) -> None:
        self._source: tuple[Any, int] = (pattern, flags)

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):  # copy, pickle and the like ask for what a pattern does not have
            raise AttributeError(name)
        compiled = re.compile(*self._source)
        for attribute in _ATTRIBUTES:
            setattr(self, attribute, getattr(compiled, attribute))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy_compile({self._source[0]!r})"


def lazy_compile(pattern: AnyStr, flags: int = 0) -> re.Pattern[AnyStr]:
    """`re.compile(pattern, flags)`, compiled at its first use (see the module's docstring)."""
    return cast("re.Pattern[AnyStr]", _Deferred(pattern, flags))


def compile_deferred(modules: Iterable[ModuleType]) -> int:
    """Compile now each deferred expression a global of `modules` holds that is not compiled yet
    (a warm server, before it forks its builds); how many were."""
    compiled = 0
    for module in modules:
        for value in list(vars(module).values()):
            if type(value) is _Deferred and "match" not in vars(value):
                value.pattern  # noqa: B018 - the first use compiles
                compiled += 1
    return compiled
