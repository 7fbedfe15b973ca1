"""`RemoteError`: a remote call that failed, named by its gRPC status code. Its own module so that
the layers under the client (retries) name it without importing gRPC."""
from __future__ import annotations


class RemoteError(Exception):
    """The server could not be reached or refused a request; `code` is the gRPC status name."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code
        self.message = message
