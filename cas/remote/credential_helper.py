"""Bazel's credential helper protocol: the headers a remote wants, from a program of the user's.

`[remote] credential-helper = "CMD ARGS"` names the program. When a build first opens its
channel, mcpp runs `CMD ARGS get` (no shell, stdin a pipe, the environment mcpp has), writes
`{"uri": "<the remote URL>"}` to its stdin and reads, from its stdout, one JSON object:
`{"headers": {"NAME": ["VALUE", ...], ...}, "expires": "..."}` (`expires` is accepted and not
used: a build is short). Each name is sent with every call, with its values joined by `,`.

What the helper prints is a credential: it is never written anywhere, not in a warning, not
with -v. A helper that fails (exits non-zero, runs past `TIMEOUT`, prints something that is
not that object) is a `RemoteError` that names the program and how it failed, never its
output; the endpoint then turns the remote off for the build, with its one warning.
"""
from __future__ import annotations

import json
import subprocess

from .config import RemoteConfigError, header
from .errors import RemoteError

TIMEOUT = 30.0  # seconds the helper may take
_MAX_OUTPUT = 1 << 20


def helper_headers(argv: tuple[str, ...], uri: str) -> tuple[tuple[str, str], ...]:
    """Run the helper `argv` for `uri`; the headers it answered."""
    name = argv[0]
    try:
        proc = subprocess.run([*argv, "get"], input=json.dumps({"uri": uri}).encode(), capture_output=True,
                              timeout=TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise RemoteError("FAILED_PRECONDITION", f"credential helper `{name}` did not answer in {TIMEOUT:.0f}s") from None
    except OSError as e:
        raise RemoteError("FAILED_PRECONDITION", f"credential helper `{name}` could not run: {e.strerror}") from None
    if proc.returncode != 0:
        raise RemoteError("FAILED_PRECONDITION", f"credential helper `{name}` exited with {proc.returncode}")
    try:
        if len(proc.stdout) > _MAX_OUTPUT:
            raise ValueError
        answer = json.loads(proc.stdout)
        headers = answer.get("headers", {}) if isinstance(answer, dict) else None
        if not isinstance(headers, dict):
            raise ValueError
        out = []
        for k, values in headers.items():
            values = [values] if isinstance(values, str) else values
            if not isinstance(k, str) or not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise ValueError
            out.append(header(k, ",".join(values), f"credential helper `{name}`"))
    except (ValueError, RemoteConfigError):
        # the output may hold a secret even when malformed: it is not quoted
        raise RemoteError("FAILED_PRECONDITION", f"credential helper `{name}` did not print "
                          '{"headers": {"NAME": ["VALUE"]}}') from None
    return tuple(out)
