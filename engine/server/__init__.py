"""The warm build server: `mcpp build/run/test` handed to a per-workspace process.

A build started from a fresh interpreter pays, every time, for importing the engine and for
loading, folding and planning what the build before it already knew. The server is a process
per (workspace, `$MCPP_HOME`) that has imported the engine once and keeps what a repeat build
would recompute in memory; the `mcpp` command becomes a thin client that passes it the
request and its own stdin/stdout/stderr, and exits with the build's exit code.

- `paths.py`     which server a command talks to (the workspace root, the socket name)
- `protocol.py`  framed `marshal` messages over a unix socket, file descriptors passed alongside;
                 the version a client and a server must share to talk at all
- `client.py`    the `mcpp` side: route, start a server on first use, forward Ctrl-C
- `daemon.py`    the server loop: accept, fork one child per build, report exit codes
- `child.py`     what a forked build child does before it runs the command line
- `child_memory.py` the child's `BuildMemory` (engine/build/memory.py) and the `HandOff` it returns
- `watcher.py`   what changed on disk since a build (inotify, or a stat scan)
- `warm.py`      the in-memory state a build reuses when nothing it depends on changed
- `noop_watch.py` a repeated `mcpp build` answered in the server, from inotify once checked
- `source_watch.py` whether the server's own sources changed (else every request digests them)
- `commands.py`  `mcpp server status|stop`

docs/server.md is the user's view.
"""
