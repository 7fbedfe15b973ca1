"""Which server a command talks to: one per workspace root and `$MCPP_HOME`.

The root is found the way a person would: the nearest directory above the working directory
(or `--manifest-path`) with an `mcpp.toml`, or, further up, one whose `mcpp.toml` declares a
`[workspace]`. It only names the server; the build itself still finds its manifests by the
engine's own rules, so a guess that is too narrow or too wide costs a second server, never a wrong build.

Like `protocol.py`, this runs on every `mcpp build` before anything else: plain `os` only.
"""

import os
import zlib

MANIFEST = "mcpp.toml"


def workspace_root(start: str) -> str | None:
    d = os.path.abspath(start)
    found = None
    while True:
        manifest = os.path.join(d, MANIFEST)
        if os.path.isfile(manifest):
            if found is None or _declares_workspace(manifest):
                found = d
        parent = os.path.dirname(d)
        if parent == d:
            return found
        d = parent


def _declares_workspace(manifest: str) -> bool:
    try:
        with open(manifest, "rb") as f:
            return any(line.strip().startswith(b"[workspace") for line in f)
    except OSError:
        return False


def server_id(root: str, home: str) -> str:
    """A name for the server of `root` and `home`. Two checksums make a name two workspaces
    share only by a 1-in-2^64 chance, and the server still refuses a request for another root
    or home (`daemon.py`), so even then no build runs in the wrong place."""
    key = f"{home}\0{root}".encode()
    return f"{zlib.crc32(key):08x}{zlib.adler32(key):08x}"


def socket_address(ident: str) -> bytes:
    """A Linux abstract socket: no file to go stale, no 108-byte path limit to hit under a deep
    `$MCPP_HOME`. Any local user can reach the name, so both ends check the other's uid."""
    return f"\0mcpp-server-{os.getuid()}-{ident}".encode()


def home_dir() -> str:
    """`$MCPP_HOME`, else `~/.mcpp`, as `cas/home.py` finds it (without its imports)."""
    value = os.environ.get("MCPP_HOME")
    return os.path.abspath(value if value else os.path.join(os.path.expanduser("~"), ".mcpp"))


def server_dir(home: str | None = None) -> str:
    return os.path.join(home or home_dir(), "server")


def log_file(ident: str, home: str | None = None) -> str:
    return os.path.join(server_dir(home), f"{ident}.log")
