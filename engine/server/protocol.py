"""Framed messages over a unix stream socket, file descriptors passed with the first one.

A frame is a 4-byte big-endian length and that many bytes of `marshal` data (dicts of strings,
numbers and lists). The client's request carries its stdin, stdout and stderr as `SCM_RIGHTS`
file descriptors: the build writes straight to the user's terminal or pipe, so `isatty`,
colours, the live progress line, the order of stdout and stderr and a `mcpp run` program
reading stdin are exactly as in process.

The client runs before anything else on every `mcpp build`, so this module is written against
what the interpreter has already loaded at start-up (`marshal` is built in) and `_socket`, the one
extension module a client must load; `json`, `socket`, `hashlib` would cost milliseconds of imports
on a no-op, and even `_struct`, an extension module outside the interpreter in most builds, costs
a no-op ~0.3 ms to load: integers are packed with `int.to_bytes` instead. `marshal`
is safe to read here only because both ends check that the other runs as the same user
(`peer_uid`), who could run any code as that user anyway.

Versions: the client names its interpreter and where its mcpp is installed (`identity`; the
native client, engine/server/native/client.c, its interpreter: `native_identity`); the server
compares that and, before each build, a digest of its installed sources (`version`: path, size
and mtime of every `.py` file), so a build never runs on code other than the client's: a
server that finds either changed steps aside and the client starts a fresh one.
"""

import _socket
import marshal
import os
import sys

_HEADER_SIZE = 4  # a frame's length, big-endian
_INT_SIZE = 4  # a C int (a descriptor, a pid, a uid), in the machine's byte order
MAX_FRAME = 64 << 20
# A request is an argv and an environment, which the kernel already bounds (ARG_MAX): a frame
# declared larger is no request, and the server buffers no more than this for one connection.
MAX_REQUEST = 8 << 20
PACKAGES = ("mcpp.engine", "mcpp.cas", "mcpp.sandbox", "mcpp.starlark_rules")


class ProtocolError(Exception):
    """The other end sent something that is not a frame, or went away mid-frame."""


def encode(message: dict) -> bytes:
    data = marshal.dumps(message)
    return len(data).to_bytes(_HEADER_SIZE, "big") + data


def send(sock, message: dict, fds: list[int] | None = None) -> None:
    data = encode(message)
    if fds:
        rights = b"".join(fd.to_bytes(_INT_SIZE, sys.byteorder, signed=True) for fd in fds)
        sent = sock.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)])
        data = data[sent:]
    if data:
        sock.sendall(data)


def _exactly(sock, n: int, got: bytes = b"") -> bytes:
    chunks = [got]
    have = len(got)
    while have < n:
        chunk = sock.recv(min(n - have, 1 << 20))
        if not chunk:
            raise ProtocolError("connection closed mid-frame")
        chunks.append(chunk)
        have += len(chunk)
    return b"".join(chunks)


def receive(sock) -> dict | None:
    """The next message; None when the other end closed the connection between frames."""
    head = sock.recv(_HEADER_SIZE)
    if not head:
        return None
    return _body(sock, _exactly(sock, _HEADER_SIZE, head))


class Incoming:
    """Frames arriving on a non-blocking connection, gathered as they come (each of at most
    `max_frame` bytes, with at most `max_fds` descriptors in all), so that a reader that serves many connections on one thread
    never waits on any of them. The descriptors received are the reader's to close (`close`),
    on every path."""

    def __init__(self, max_fds: int = 0, max_frame: int = MAX_REQUEST):
        self.max_fds = max_fds
        self.max_frame = max_frame
        self.fds: list[int] = []
        self._data = bytearray()

    def read(self, sock) -> list[dict]:
        """The messages completed by what `sock` holds now (none while a frame is partial).
        ProtocolError at the end of the connection, on a malformed frame or too many descriptors."""
        try:
            data, ancillary, _flags, _addr = sock.recvmsg(1 << 16, _socket.CMSG_SPACE(max(self.max_fds, 1) * _INT_SIZE))
        except (BlockingIOError, InterruptedError):
            return []
        for level, kind, payload in ancillary:
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                self.fds.extend(_ints(payload))
        if len(self.fds) > self.max_fds:
            raise ProtocolError("too many descriptors")
        if not data:
            raise ProtocolError("connection closed" if not self._data else "connection closed mid-frame")
        self._data += data
        messages = []
        while len(self._data) >= _HEADER_SIZE:
            length = int.from_bytes(self._data[:_HEADER_SIZE], "big")
            if length > self.max_frame:
                raise ProtocolError("frame too large")
            if len(self._data) < _HEADER_SIZE + length:
                break
            messages.append(_decode(bytes(self._data[_HEADER_SIZE:_HEADER_SIZE + length])))
            del self._data[:_HEADER_SIZE + length]
        return messages

    def close(self) -> None:
        fds, self.fds = self.fds, []
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass


def _body(sock, head: bytes) -> dict:
    length = int.from_bytes(head, "big")
    if length > MAX_FRAME:
        raise ProtocolError("frame too large")
    return _decode(_exactly(sock, length))


def _decode(body: bytes) -> dict:
    try:
        message = marshal.loads(body)
    except (ValueError, EOFError, TypeError):
        raise ProtocolError("frame is not a message") from None
    if not isinstance(message, dict):
        raise ProtocolError("frame is not a message")
    return message


def _ints(data: bytes) -> list[int]:
    """The C ints `data` holds (a trailing partial one left out)."""
    return [int.from_bytes(data[i:i + _INT_SIZE], sys.byteorder, signed=True)
            for i in range(0, len(data) - _INT_SIZE + 1, _INT_SIZE)]


def _peer_credentials(sock) -> list[int]:
    """The peer's pid, uid and gid (`struct ucred`)."""
    return _ints(sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 3 * _INT_SIZE))


def peer_pid(sock) -> int:
    return _peer_credentials(sock)[0]


# started: when the request was made (a no-op's `Finished` time counts from it); began: when the
# client's process started (a trace's 0: engine/core/command_clock.py). Both `time.time()` values.
_BUILD_FIELDS = {"identity": str, "root": str, "home": str, "cwd": str, "umask": int, "started": (int, float),
                 "began": (int, float)}


def build_request_problem(request: dict, fds: list[int]) -> str | None:
    """What is wrong with a build request (its fields' types, its three descriptors), or None."""
    for name, kind in _BUILD_FIELDS.items():
        if not isinstance(request.get(name), kind):
            return f"{name!r} is missing or not a {getattr(kind, '__name__', 'number')}"
    argv, env = request.get("argv"), request.get("env")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        return "'argv' is not a list of strings"
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        return "'env' is not a map of strings"
    if len(fds) != 3:
        return f"{len(fds)} descriptors, not stdin, stdout and stderr"
    return None


def peer_uid(sock) -> int:
    return _peer_credentials(sock)[1]


def identity() -> str:
    """The interpreter and the installed mcpp this process runs: cheap enough for every client."""
    engine = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return f"{sys.version}\0{sys.executable}\0{engine}"


def native_identity() -> str:
    """What the native client (engine/server/native/client.c), the `mcpp` command, sends for
    this installation: "native" and the interpreter its Python client (`mcpp-py`) runs under,
    which is the one that started the server (`sys.executable`). It cannot name the engine or
    the interpreter's version without starting one: an installation elsewhere has another
    interpreter path (`is_native`), and the server's own check of its sources (`version`)
    covers the rest."""
    return f"native\0{sys.executable}"


def is_native(identity: object) -> bool:
    """Whether a request's identity is a native client's. One that is not this server's
    (`native_identity`) is refused, not taken as another version's: it names only an
    interpreter path, as the client read it, and its Python client, which the client runs on a
    refusal, sends the identity that says whether the server must make way."""
    return isinstance(identity, str) and identity.startswith("native\0")


def source_dirs() -> list[str]:
    """Every directory of the installed mcpp packages."""
    import importlib.util

    out = []
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        for root in spec.submodule_search_locations:
            for dirpath, dirnames, _ in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
                out.append(dirpath)
    return out


def version() -> str:
    """A digest of the installed sources and the interpreter (see the module docstring)."""
    import hashlib

    h = hashlib.sha256(identity().encode())
    for dirpath in source_dirs():
        try:
            names = sorted(os.listdir(dirpath))
        except OSError:
            continue
        for f in names:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:32]
