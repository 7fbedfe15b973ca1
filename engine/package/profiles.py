"""Build profiles: `dev` and `release` built in, custom ones inheriting from either."""
from __future__ import annotations

from dataclasses import dataclass

from ..core.errors import McppError
from ..manifest.model import Manifest, ProfileSpec

_BUILTIN = {
    "dev": ProfileSpec("dev", opt="0", debug=True),
    "release": ProfileSpec("release", opt="3", debug=False),
}


@dataclass(frozen=True)
class Profile:
    """A build profile, resolved: the optimization and debug settings compiles get."""
    name: str
    opt: str
    debug: bool
    cflags: tuple[str, ...] = ()
    cxxflags: tuple[str, ...] = ()
    ldflags: tuple[str, ...] = ()
    # Asserts off, as CMake's Release and every C++ user expect of a release build. Follows the
    # built-in profile at the root of the `inherits` chain, so a custom profile based on
    # `release` keeps it.
    ndebug: bool = False

    @property
    def summary(self) -> str:
        """Cargo's bracket: `dev [unoptimized + debuginfo]`, `release [optimized]`."""
        parts = ["unoptimized" if self.opt == "0" else "optimized"]
        if self.debug:
            parts.append("debuginfo")
        return f"{self.name} [{' + '.join(parts)}]"

    def compile_flags(self) -> list[str]:
        flags = [f"-O{self.opt}"]
        if self.debug:
            flags.append("-g")
        if self.ndebug:
            flags.append("-DNDEBUG")
        return flags


def resolve_profile(root: Manifest, name: str) -> Profile:
    """The effective profile `name`, following `inherits` (custom profiles inherit `dev`)."""
    specs = {**_BUILTIN, **root.profiles}
    if name not in specs:
        known = ", ".join(sorted(specs))
        raise McppError(f"profile `{name}` is not defined; known profiles: {known}")
    chain: list[ProfileSpec] = []
    base = "dev"
    current: str | None = name
    while current is not None:
        if any(s.name == current for s in chain):
            raise McppError(f"profile `{name}`: `inherits` forms a cycle")
        user = root.profiles.get(current)
        builtin = _BUILTIN.get(current)
        if user:
            chain.append(user)
        if builtin:
            chain.append(builtin)
            base = current
            current = None
        else:
            current = user.inherits or "dev"
    opt, debug = "0", True
    cflags: list[str] = []
    cxxflags: list[str] = []
    ldflags: list[str] = []
    for spec in reversed(chain):  # base first, the named profile last
        opt = spec.opt if spec.opt is not None else opt
        debug = spec.debug if spec.debug is not None else debug
        cflags += spec.cflags
        cxxflags += spec.cxxflags
        ldflags += spec.ldflags
    return Profile(name, opt, debug, tuple(cflags), tuple(cxxflags), tuple(ldflags),
                   ndebug=base == "release")
