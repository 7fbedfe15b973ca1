"""What a build's result depends on besides the files it plans from: one registry.

The no-op shortcut (engine/state/noop.py) answers "nothing to do" when nothing the previous build
depended on changed. Files are compared by stat; everything else a build reads from outside the
project is named here, and the shortcut compares all of it:

- `AFFECTS`: the environment variables whose values select what a build resolves or produces
  (compilers, the payload indexes, `$MCPP_HOME`, the remote cache). Their values are part of a
  no-op record's identity: another value is another record.
- `HOME_FILES`: the files under `$MCPP_HOME` that resolution reads (the payload indexes and the
  remote cache are configured there). Every no-op record holds their stat.
- `IGNORED`: the variables mcpp reads that do not change what a build produces, each with why.

tests/unit/engine/test_build_env.py reads every `MCPP_*` name and every environment variable
read in the engine's sources and fails when one is in neither `AFFECTS` nor `IGNORED`: a new
variable has to be classified here before it can ship.

Standard library only, and nothing imported: the no-op path reads this before anything else.
"""
from __future__ import annotations

AFFECTS: dict[str, str] = {
    "PATH": "selects the compilers (engine/toolchain/compilers.py) and the scanners found beside them",
    "HOME": "locates the mcpp home when MCPP_HOME is not set",
    "MCPP_HOME": "the stores, the tool and payload stores, config.toml",
    "MCPP_PAYLOAD_INDEX": "the payload indexes consulted first (engine/payloads/index.py)",
    "MCPP_INDEX": "the library index index dependencies resolve against (engine/registry/location.py)",
    "MCPP_PAYLOAD_TRUSTED_KEYS": "whose signed descriptors a plain-http index may serve",
    "MCPP_PAYLOAD_INDEX_INSECURE": "whether a plain-http index is accepted unverified",
    "MCPP_PAYLOAD_MAX_UNPACKED": "whether a payload archive may be unpacked (its size limit)",
    "MCPP_PAYLOAD_MAX_MEMBERS": "whether a payload archive may be unpacked (its member limit)",
    "MCPP_REMOTE": "the remote cache the build reads and writes (cas/remote/config.py)",
    "MCPP_REMOTE_UPLOAD": "whether results are uploaded",
    "MCPP_REMOTE_EXEC": "whether actions run remotely",
    "MCPP_REMOTE_TOKEN_FILE": "the credentials the remote cache is reached with",
    "MCPP_REMOTE_SIGN_KEY": "the key uploaded results are signed with",
    "MCPP_REMOTE_TRUSTED_KEYS": "whose signed results are accepted",
    "MCPP_PROGRAM_TIME_LIMIT": "whether a build program's evaluation may finish",
    "MCPP_PROGRAM_MEMORY_LIMIT": "whether a build program's evaluation may finish",
    "PKG_CONFIG_PATH": "which .pc file a `pkg-config` dependency's flags come from (engine/package/system_libs.py)",
    "PKG_CONFIG_LIBDIR": "which .pc file a `pkg-config` dependency's flags come from",
    "PKG_CONFIG_SYSROOT_DIR": "the prefix pkg-config puts before the paths of its flags",
}

HOME_FILES: tuple[str, ...] = (
    "config.toml",  # [payloads] index, [index] url, [remote]: read by resolution
)

IGNORED: dict[str, str] = {
    "MCPP_NO_FAST_PATH": "turns the no-op shortcut off; read before any record is",
    "MCPP_NO_SERVER": "where the build runs (in process or in the warm server), not what it makes",
    "MCPP_SERVER_IDLE": "how long an idle server waits for the next request",
    "MCPP_SERVER_START": "whether a build with no server up waits for the one it starts, not what it makes",
    "MCPP_SERVER_WATCHER": "how the server watches files (inotify or a scan), not which files",
    "MCPP_REMOTE_EXEC_WAIT": "how long a remote execution is waited for, not what it returns",
    "MCPP_TRACEBACK": "how an internal error is shown",
    "MCPP_TEST_SLOW_NOTICE": "`mcpp test` only: when a running test is reported as slow",
    "MCPP_MANIFEST_DIR": "set by `mcpp test` for the tests it runs; a build never reads it",
    "MCPP_": "the prefix of the variables a command's settings keep (engine/core/settings.py), not a variable",
    "MCPP_FEATURE_": "the prefix of a feature's preprocessor macro, not an environment variable",
    "NO_COLOR": "the colour of the output only (the no-op colours its line the same way)",
    "TERM": "whether progress is drawn live, not what is built",
    "PYTHONIOENCODING": "the encoding of the output a server's build child writes",
    "RUST_BACKTRACE": "set, not read: the Starlark evaluator's panics stay one line",
    "DESTDIR": "`mcpp install` only: where it copies to",
    "XDG_RUNTIME_DIR": "where the server's socket lives (engine/server/paths.py), not what a build makes",
    "GRPC_VERBOSITY": "how much the remote cache's gRPC library logs",
}


def identity(env) -> list[str]:
    """The values of `AFFECTS` in `env`, in a fixed order: what a no-op record is kept under."""
    return [f"{name}={env.get(name, '')}" if name in env else f"{name}" for name in AFFECTS]
