"""The error a build program gets for calling the `mcpp` API wrongly; its own module so that the
API's parts (api.py, api_providers.py, probe.py) can raise it without importing each other."""
from __future__ import annotations


class ProgramApiError(Exception):
    """A build program called the API wrongly; the message is shown at the call."""
