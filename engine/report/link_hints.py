"""One line after a failed link that says what was linked, because `ld`'s own words name only
object files under `target/` and a mangled symbol, not the manifest setting to change.

An undefined symbol is almost always a source not among the target's sources or a dependency not
declared; a library `-l` does not find is a system library to declare (or install), never a
source to add; a missing `main` is a target whose `main` source does not define one. The plan knows
which compiles and which dependency archives fed the link (its prerequisites), so the hint
lists them.
"""
from __future__ import annotations

from mcpp.cas.action import Action, ActionKind

from ..core.lazy_re import lazy_compile

_MAX_LISTED = 8
# GNU ld / gold / lld: `cannot find -lz`, `unable to find library -lz`
_MISSING_LIB = lazy_compile(r"(?:cannot find|unable to find library) -l([^\s:]+)")


def link_hint(a: Action, output: str, prereqs: tuple[str, ...]) -> str | None:
    """`help: ...` for a failed link whose output names a library `-l` did not find or an
    undefined symbol, else None."""
    if a.kind != ActionKind.LINK:
        return None
    missing = _MISSING_LIB.search(output)
    if missing:  # no source defines what a library of the system provides: name the manifest entry
        lib = missing.group(1)
        return (f"help: the linker finds no library `{lib}` (`-l{lib}`): install its development package, and "
                f"declare it under [dependencies] as `{lib} = {{ pkg-config = \"<module>\" }}` (flags and search "
                f"path from its .pc file, PKG_CONFIG_PATH) or `{lib} = {{ system = \"{lib}\" }}`")
    if "undefined reference to" not in output and "Undefined symbols" not in output:
        return None
    what = a.id.split(" ", 1)[1] if " " in a.id else a.id  # `app:app`
    package, _, target = what.partition(":")
    sources = [p.split(" ", 1)[1] for p in prereqs if p.startswith("compile ") and ":" in p]
    deps = [p.split(" ", 1)[1] for p in prereqs if p.startswith("archive ")]
    if "undefined reference to `main'" in output or "undefined reference to 'main'" in output:
        main = next((s.partition(":")[2] for s in sources if s.startswith(package + ":")), None)
        return (f"help: target `{target}` of package `{package}` has no `main` function: its `main` setting "
                f"names `{main}`" + (f" (set `main` under [targets.{target}] to the source that defines `main`)"
                                     if main else ""))
    own = [s.partition(":")[2] for s in sources if s.startswith(package + ":")]
    return (f"help: linking target `{target}` of package `{package}` from sources {_listed(own)} and "
            f"dependencies {_listed(deps)}: the source that defines the symbol is not among them (add it to "
            f"`[build] sources`) or its package is not in `[dependencies]`")


def _listed(names: list[str]) -> str:
    if not names:
        return "(none)"
    shown = ", ".join(f"`{n}`" for n in names[:_MAX_LISTED])
    return shown + (f" and {len(names) - _MAX_LISTED} more" if len(names) > _MAX_LISTED else "")
