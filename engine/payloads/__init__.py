"""The project environment: payloads (tools, SDKs, sysroots) from an index, one version each.

See docs/payloads.md. The build calls `resolve_environment` (resolve.py) once, before build
programs run; `mcpp payload list|fetch` and `mcpp metadata` call the same function.
"""
from .environment import Environment
from .errors import PayloadError


def __getattr__(name: str):
    # The resolver (and the version grammar, the declarations) only for whoever resolves: a build
    # whose graph declares no payload never imports it (engine/build/compose.py).
    if name in ("resolve_environment", "ResolvedPayload"):
        from . import resolve

        return getattr(resolve, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Environment", "PayloadError", "ResolvedPayload", "resolve_environment"]
