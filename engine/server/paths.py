"""Which server a command talks to: one per workspace root and `$MCPP_HOME`.

The root is found the way a person would: the nearest directory above the working directory
(or `--manifest-path`) with an `mcpp.toml`, or, further up, one whose `mcpp.toml` declares a
`[workspace]`. It only names the server; the build itself still finds its manifests by the
engine's own rules, so a guess that is too narrow or too wide costs a second server, never a wrong build.

Like `protocol.py`, this runs on every `mcpp build` before anything else: plain `os` only.
"""

import os
import stat

from ..core.fnv import fnv1a_64
from ..core.manifest_search import manifests_above
from ..core.mcpp_home import home_root


def workspace_root(start: str) -> str | None:
    """The directory of the topmost manifest above `start` that declares a `[workspace]`, else of
    the nearest manifest; None when there is none."""
    found = None
    for manifest in manifests_above(start):
        if found is None or _declares_workspace(manifest):
            found = os.path.dirname(manifest)
    return found


def _declares_workspace(manifest: str) -> bool:
    try:
        with open(manifest, "rb") as f:
            return any(line.strip().startswith(b"[workspace") for line in f)
    except OSError:
        return False


def server_id(root: str, home: str) -> str:
    """A name for the server of `root` and `home`: their 64-bit FNV-1a hash, which two
    workspaces share only by a 1-in-2^64 chance, and the server still refuses a request for
    another root or home (`daemon.py`), so even then no build runs in the wrong place."""
    return format(fnv1a_64(f"{home}\0{root}".encode()), "016x")


class Unsafe(Exception):
    """The directory for server sockets is not private to this user: no server may run."""


_SUN_PATH_MAX = 107  # bytes of a unix socket path, less its terminating NUL


def socket_dir() -> str:
    """Where this user's server sockets live: `$XDG_RUNTIME_DIR/mcpp` (the user's own runtime
    directory), else `/tmp/mcpp-<uid>`."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime):
        return os.path.join(runtime, "mcpp")
    return f"/tmp/mcpp-{os.getuid()}"


def socket_path(ident: str, create: bool = False) -> str:
    """The socket of server `ident`, in a directory only this user can make names in (checked:
    see `private_dir`), so no other user can bind the name first or stand in for the server.
    Raises Unsafe; FileNotFoundError where the directory does not exist and `create` is False."""
    directory = socket_dir()
    private_dir(directory, create)
    path = os.path.join(directory, f"{ident}.sock")
    if len(os.fsencode(path)) > _SUN_PATH_MAX:
        raise Unsafe(f"the mcpp server socket path {path} is longer than a unix socket allows")
    return path


def private_dir(directory: str, create: bool) -> None:
    """Check (making it first, mode 0700, when `create`) that `directory` is a directory, not a
    symbolic link, owned by this user, with no access for others, in a parent that nobody else
    can rename it out of (owned by this user or root, and not writable by others unless
    sticky, as /tmp is). Raises Unsafe saying which condition fails."""
    uid = os.getuid()
    if create:
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass
        except FileNotFoundError:
            raise Unsafe(f"the directory for mcpp server sockets cannot be made: "
                         f"{os.path.dirname(directory)} does not exist") from None
        except OSError as e:
            raise Unsafe(f"the directory for mcpp server sockets {directory} cannot be made: {e.strerror}") from None
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise Unsafe(f"the mcpp server socket directory {directory} cannot be read: {e.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise Unsafe(f"the mcpp server socket directory {directory} is a symbolic link")
    if not stat.S_ISDIR(st.st_mode):
        raise Unsafe(f"the mcpp server socket directory {directory} is not a directory")
    if st.st_uid != uid:
        raise Unsafe(f"the mcpp server socket directory {directory} belongs to uid {st.st_uid}, not to you (uid {uid})")
    if st.st_mode & 0o077:
        raise Unsafe(f"the mcpp server socket directory {directory} has mode {stat.S_IMODE(st.st_mode):04o}, "
                     f"not 0700")
    parent = os.path.dirname(directory)
    try:
        pst = os.stat(parent)
    except OSError:
        raise Unsafe(f"the parent of the mcpp server socket directory {directory} cannot be read") from None
    if pst.st_uid not in (uid, 0) or (pst.st_mode & 0o022 and not pst.st_mode & stat.S_ISVTX):
        raise Unsafe(f"the mcpp server socket directory {directory} is in {parent}, where others may replace it")


def lock_path(ident: str) -> str:
    """The file a server of `ident` holds locked while it owns the socket name."""
    return os.path.join(socket_dir(), f"{ident}.lock")


def home_dir() -> str:
    """`$MCPP_HOME`, else `~/.mcpp` (`engine/core/mcpp_home.py`), as an absolute path."""
    return os.path.abspath(home_root(os.environ))


def server_dir(home: str | None = None) -> str:
    return os.path.join(home or home_dir(), "server")


def log_file(ident: str, home: str | None = None) -> str:
    return os.path.join(server_dir(home), f"{ident}.log")
