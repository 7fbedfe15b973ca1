"""The error of a build program that called the `mcpp` API wrongly, and the argument checks
every group of API functions (api.py, api_context.py) shares."""
from __future__ import annotations


class ProgramApiError(Exception):
    """A build program called the API wrongly; the message is shown at the call."""


def _need_str(func: str, arg: str, value) -> str:
    if not isinstance(value, str):
        raise ProgramApiError(f"{func}(): `{arg}` must be a string, got {type(value).__name__}")
    if "\0" in value:  # it would end up in an argv, a path or a define, none of which can hold one
        raise ProgramApiError(f"{func}(): `{arg}` contains a NUL byte")
    return value
