"""The project environment: payloads (tools, SDKs, sysroots) from an index, one version each.

See docs/payloads.md. The build calls `resolve_environment` (resolve.py) once, before build
programs run; `mcpp payload list|fetch` and `mcpp metadata` call the same function.
"""
from .errors import PayloadError
from .resolve import Environment, ResolvedPayload, resolve_environment

__all__ = ["Environment", "PayloadError", "ResolvedPayload", "resolve_environment"]
