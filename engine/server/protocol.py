"""Framed JSON messages over a unix stream socket, file descriptors passed with the first one.

A frame is a 4-byte big-endian length and that many bytes of UTF-8 JSON. The client's request
carries its stdin, stdout and stderr as `SCM_RIGHTS` file descriptors: the build writes straight
to the user's terminal or pipe, so `isatty`, colours, the live progress line, the order of
stdout and stderr and a `mcpp run` program reading stdin are exactly as in process.

The version both ends compute is a digest of the installed mcpp sources (path, size, mtime of
every `.py` file) and the interpreter: a client never hands a build to a server running other
code; the server steps aside and the client starts a fresh one.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import socket
import struct
import sys

_HEADER = struct.Struct(">I")
MAX_FRAME = 64 << 20
PACKAGES = ("mcpp.engine", "mcpp.cas", "mcpp.sandbox", "mcpp.starlark_rules")


class ProtocolError(Exception):
    """The other end sent something that is not a frame, or went away mid-frame."""


def encode(message: dict) -> bytes:
    data = json.dumps(message, separators=(",", ":")).encode()
    return _HEADER.pack(len(data)) + data


def send(sock: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    data = encode(message)
    if fds:
        sent = socket.send_fds(sock, [data], fds)
        data = data[sent:]
    if data:
        sock.sendall(data)


def _exactly(sock: socket.socket, n: int, got: bytes = b"") -> bytes:
    chunks = [got]
    have = len(got)
    while have < n:
        chunk = sock.recv(min(n - have, 1 << 20))
        if not chunk:
            raise ProtocolError("connection closed mid-frame")
        chunks.append(chunk)
        have += len(chunk)
    return b"".join(chunks)


def receive(sock: socket.socket) -> dict | None:
    """The next message; None when the other end closed the connection between frames."""
    head = sock.recv(_HEADER.size)
    if not head:
        return None
    return _body(sock, _exactly(sock, _HEADER.size, head))


def receive_with_fds(sock: socket.socket, max_fds: int = 3) -> tuple[dict | None, list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(sock, 1 << 16, max_fds)
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    try:
        head = _exactly(sock, _HEADER.size, data[:_HEADER.size])
        (length,) = _HEADER.unpack(head)
        if length > MAX_FRAME:
            raise ProtocolError("frame too large")
        body = _exactly(sock, length, data[_HEADER.size:])
        return _decode(body), fds
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


def _body(sock: socket.socket, head: bytes) -> dict:
    (length,) = _HEADER.unpack(head)
    if length > MAX_FRAME:
        raise ProtocolError("frame too large")
    return _decode(_exactly(sock, length))


def _decode(body: bytes) -> dict:
    try:
        message = json.loads(body)
    except ValueError:
        raise ProtocolError("frame is not JSON") from None
    if not isinstance(message, dict):
        raise ProtocolError("frame is not an object")
    return message


def peer_uid(sock: socket.socket) -> int:
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return uid


def version() -> str:
    """What must match for a client and a server to talk (see the module docstring)."""
    h = hashlib.sha256(f"{sys.version}\0{sys.executable}".encode())
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        for root in spec.submodule_search_locations:
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
                for f in sorted(filenames):
                    if f.endswith(".py"):
                        path = os.path.join(dirpath, f)
                        try:
                            st = os.stat(path)
                        except OSError:
                            continue
                        h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:32]
