"""The build context a manifest is folded for: the target, the host and the accelerator set.

One value decides which `[target.<selector>]` blocks apply, for `build`, `run`, `test` and
`metadata` alike. The target defaults to the host (`gcc -dumpmachine`'s
spelling); the accelerator set comes from `--no-accel` (empty), else `--accel`, else the root
package's `[build] accel`, else empty (`--no-accel` is an explicit request for the empty set,
not the absence of `--accel`, so it overrides the manifest).
"""
from __future__ import annotations

from dataclasses import dataclass

from . import triples
from ..core.accel import AccelSet, AccelSyntaxError, parse_accel
from ..core.errors import McppError


@dataclass(frozen=True)
class BuildContext:
    """What target conditions are evaluated against: the target and host triples and the accelerators."""
    target: triples.Triple
    host: triples.Triple
    accel: AccelSet = AccelSet()
    accel_from: str = "none declared"  # where the set came from, for `mcpp metadata`

    @property
    def cross(self) -> bool:
        return not self.target.same_target(self.host)


def host_context(accel: AccelSet | None = None, accel_from: str = "[build] accel") -> BuildContext:
    host = triples.host_triple()
    if accel is None:
        return BuildContext(host, host)
    return BuildContext(host, host, accel, accel_from if accel.entries else "none declared")


def resolve_context(target: str | None, accel: str | None, no_accel: bool,
                    declared: AccelSet | None) -> BuildContext:
    """The context of one command line; `declared` is the root package's [build] accel."""
    host = triples.host_triple()
    chosen = host
    if target:
        try:
            chosen = triples.parse_triple(target)
        except triples.TripleError as e:
            raise McppError(f"invalid --target `{target}`: {e}") from None
    if no_accel and accel is not None:
        raise McppError("--accel conflicts with --no-accel; pass one of them")
    if no_accel:
        return BuildContext(chosen, host, AccelSet(), "--no-accel")
    if accel is not None:
        try:
            return BuildContext(chosen, host, parse_accel(accel), "--accel")
        except AccelSyntaxError as e:
            raise McppError(f"invalid --accel `{accel}`: {e}") from None
    if declared is not None and declared.entries:
        return BuildContext(chosen, host, declared, "[build] accel")
    return BuildContext(chosen, host)
