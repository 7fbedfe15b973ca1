"""Every shortcut that skips work, with the check that makes skipping it valid.

A shortcut answers "nothing changed" without doing the work that would show it: the no-op
record, a server's watched files, the stat cache, the evaluation and probe caches. Each is sound
only as long as its check is: the stale results a build can serve come from a shortcut whose
check missed a case. So every one is listed here, once, with what it skips, the function that
decides it may skip (`checks`: `module:qualified.name`, importable), and what makes it stop
holding. tests/unit/test_shortcuts.py imports every check, and scans `engine/`, `cas/` and
`sandbox/` for code shaped like a shortcut (a stat fingerprint, a cache or memo, an inotify
watch): such a module must be registered here or listed in `NOT_SHORTCUTS` with the reason. The
"Shortcuts" table of docs/ARCHITECTURE.md is `table()`, and the test keeps the two equal.

This module is data: it imports nothing, so listing a shortcut costs no build any time.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shortcut:
    name: str
    module: str  # where the shortcut is taken (a dotted module name under `mcpp`)
    skips: str  # the work it saves
    checks: tuple[str, ...]  # `module:qualified.name` of each function that makes it valid
    invalidated_by: str  # what makes the check fail, so the work is done


SHORTCUTS: tuple[Shortcut, ...] = (
    Shortcut("no-op record", "mcpp.engine.state.noop",
             "the whole build: importing the engine, loading, planning, every key",
             ("mcpp.engine.state.noop:holds",),
             "a recorded file's or directory's stat changing (or stamped no earlier than the record); "
             "another argv, directory or build-relevant environment; a build that warned or is pending"),
    Shortcut("server no-op answer", "mcpp.engine.server.noop_watch",
             "the no-op record's stat of every file",
             ("mcpp.engine.server.noop_watch:NoopWatch.answer",),
             "any inotify event in a watched directory or on a recorded file's inode (a write through any "
             "of its names, a link made to it), a queue overflow; files without an inode watch (past the "
             "budget), non-regular files with several links (and everything without inotify) are stat'ed "
             "on every request"),
    Shortcut("server no-op record carried", "mcpp.engine.server.noop_watch",
             "a build's new no-op record's stat of every file whose stamp the last record that held had too "
             "(or that held but for the few files its check found changed, `_Armed.stale`)",
             ("mcpp.engine.server.noop_watch:NoopWatch._carried",),
             "another list of files or directories, a directory's stamp, an event on a recorded file or "
             "directory other than the files whose stamps changed, a queue overflow (then every file is "
             "stat'ed); the files whose stamps changed and the stale ones are stat'ed each time; a record "
             "with a stale file that still differs answers no request"),
    Shortcut("server sources unchanged", "mcpp.engine.server.source_watch",
             "digesting the server's own sources on each request",
             ("mcpp.engine.server.source_watch:SourceWatch.quiet", "mcpp.engine.server.protocol:version"),
             "a `.py` file or directory written in the source directories; no inotify (then the digest runs)"),
    Shortcut("preloaded state", "mcpp.engine.server.state_memo",
             "loading the stat cache, action records and scan cache",
             ("mcpp.engine.server.state_memo:held",),
             "a state file whose stat differs from the one the server loaded"),
    Shortcut("state kept in step", "mcpp.engine.server.warm",
             "reading back the state files a server build saved (its changes applied to the server's copy)",
             ("mcpp.engine.server.warm:Hooks._take_state_changes", "mcpp.engine.server.state_memo:changes"),
             "a server copy that was not the build's starting point (its stamps); state files whose stamps "
             "are not the ones the build's saves took; changes of another shape; a state opened twice by "
             "the build, not saved, or changed in more than a quarter of its entries (and over 1,024)"),
    Shortcut("carried stat cache", "mcpp.engine.server.state_memo",
             "hashing again the files a removed or rewritten stat cache knew (after `rm -rf target`)",
             ("mcpp.engine.server.state_memo:reopen", "mcpp.cas.statcache:StatCache.digest"),
             "another (dev, inode, size, mtime, ctime) than the held entry's; an entry stamped no earlier "
             "than the held file's write (dropped when the server loaded it); a path the new cache knows"),
    Shortcut("remembered plan", "mcpp.engine.server.plan_memo",
             "planning",
             ("mcpp.engine.server.plan_memo:PlanMemo.plan",),
             "a file created, deleted, renamed or re-moded in a package tree; another graph, toolchain, "
             "profile or target directory; a rewritten file that scans to other module facts or includes"),
    Shortcut("bequeathed plan", "mcpp.engine.server.bequest",
             "the first server build's planning after an in-process build (its plan, globs and knowledge handed on)",
             ("mcpp.engine.server.bequest:rewritten",),
             "a file under the package roots stamped (ctime) in or after the second the build began that the "
             "plan did not read or glob, or below a directory so stamped; a file the plan read that is gone; "
             "another request (options that only change what is printed aside); then the remembered plan's checks"),
    Shortcut("remembered globs", "mcpp.engine.manifest.globs",
             "walking the directories of a source glob",
             ("mcpp.engine.manifest.globs:Expansions.expand",),
             "the shape of a watched tree changing; a root the server does not watch"),
    Shortcut("known files", "mcpp.engine.state.unchanged",
             "computing the key of an action whose inputs all kept their digests",
             ("mcpp.engine.state.unchanged:Unchanged.proven",),
             "a file whose stat differs from the stat cache's stamp, one the watcher saw rewritten, a new plan"),
    Shortcut("known files, watched", "mcpp.engine.server.known_watch",
             "the known files' stat per file",
             ("mcpp.engine.server.known_watch:given",),
             "an event naming the file (on its directory's watch or its inode's: a write through any of "
             "its names, a link made to it) or its watched directory, a queue overflow, a digest the next "
             "build's knowledge does not name; files without an inode watch are stat'ed by every build "
             "(the files an event named are watched anew after each build, a slice per turn of the "
             "server's loop, events counted from before the first slice; a build forked meanwhile is "
             "given the last proof)"),
    Shortcut("stat cache", "mcpp.cas.statcache",
             "hashing a file",
             ("mcpp.cas.statcache:StatCache.digest", "mcpp.cas.statcache:StatCache.digest_and_bytes"),
             "another (dev, inode, size, mtime, ctime); an entry stamped no earlier than the save that wrote it"),
    Shortcut("state file append", "mcpp.cas.journal",
             "writing a state file (stat cache, action records, scans) whole when a build changed a few keys",
             ("mcpp.cas.journal:append",),
             "another (inode, size, mtime, ctime) of the file than its writer read or last wrote; a frame "
             "cut short at load (the next save writes it whole); frames that would outgrow the snapshot"),
    Shortcut("fresh action", "mcpp.engine.state.incremental",
             "looking up, restoring or running an action",
             ("mcpp.engine.state.incremental:KeyComputer.fresh",),
             "another key (any input, tool or the namespace), an output missing or altered under target/"),
    Shortcut("key memo", "mcpp.engine.state.incremental",
             "computing an action's key again within one build",
             ("mcpp.engine.trust.policy:TrustPolicy.memoizes_keys",),
             "a sandbox that does not stage inputs (actions read the real tree); an action that "
             "rewrites its own input"),
    Shortcut("action cache", "mcpp.engine.exec.pipeline",
             "running an action",
             ("mcpp.cas.action:action_key", "mcpp.engine.trust.policy:TrustPolicy.accepts_cached"),
             "nothing: the key covers every input, tool and the namespace; an entry fetched from a "
             "remote needs a signature by a key still trusted"),
    Shortcut("remote cache", "mcpp.cas.remote.cache",
             "running an action",
             ("mcpp.engine.trust.policy:TrustPolicy.accepts_remote", "mcpp.cas.remote.trust:SignaturePolicy.accept"),
             "a result keyed apart (never looked up); with trusted keys, a result not signed by one"),
    Shortcut("scan cache", "mcpp.engine.state.incremental",
             "scanning a source for module facts and include directives",
             ("mcpp.engine.state.incremental:ScanCache.scan", "mcpp.engine.state.incremental:ScanCache.includes"),
             "nothing: keyed by the file's digest; a preprocessing scan also by every file it read"),
    Shortcut("evaluation cache", "mcpp.engine.program.cache",
             "evaluating a build program",
             ("mcpp.engine.program.cache:ProgramCache.lookup",),
             "another context fingerprint; a `.star` file or read file with another digest; a glob "
             "with other matches; an environment variable it read with another value"),
    Shortcut("probe cache", "mcpp.engine.program.probe",
             "running a build program's probe",
             ("mcpp.engine.program.probe:run_probe",),
             "nothing: keyed by argv and the paths and digests of its tools and inputs"),
    Shortcut("compiler probe cache", "mcpp.engine.toolchain.compilers",
             "asking a compiler its version, target and directories, and hashing it",
             ("mcpp.engine.toolchain.compilers:_ProbeCache.probe",),
             "the compiler binary's blake3 (hashed again when its (dev, inode, size, mtime) changed), "
             "its path or the flags it is asked with"),
    Shortcut("pkg-config answers", "mcpp.engine.package.system_libs",
             "asking pkg-config a system library's compile and link flags",
             ("mcpp.engine.package.system_libs:PkgConfig.module",),
             "another digest of the module's .pc file (located by `pkg-config --path` each build), another "
             "module name, path or PKG_CONFIG_PATH / PKG_CONFIG_LIBDIR / PKG_CONFIG_SYSROOT_DIR"),
    Shortcut("payload probe cache", "mcpp.engine.payloads.system",
             "running a system installation's version probe",
             ("mcpp.engine.payloads.system:Prober.probe",),
             "another root, probe argv or real program path; the program's (dev, inode, size, mtime, ctime)"),
    Shortcut("installed payload", "mcpp.engine.payloads.install",
             "downloading and unpacking a payload",
             ("mcpp.engine.payloads.install:installed",),
             "nothing: a version directory exists only complete (renamed into place after checking)"),
    Shortcut("published host tool", "mcpp.engine.build.host_tools",
             "building a host tool",
             ("mcpp.engine.build.host_tools:source_stamp", "mcpp.engine.trust.policy:TrustPolicy.tool_host"),
             "any file's size or mtime under the tool's package trees; another toolchain, profile or "
             "sandbox promises"),
    Shortcut("staged copy", "mcpp.sandbox.inputs",
             "copying an input into a sandbox again",
             ("mcpp.sandbox.inputs:PrivateCopies.stage",),
             "the source's (dev, inode, size, mtime)"),
    Shortcut("prepared tree", "mcpp.sandbox.input_tree",
             "linking an action's unchanged inputs into its sandbox again",
             ("mcpp.sandbox.input_tree:InputTrees.hold",),
             "an input's source with another (dev, inode); an input added or removed; a tree directory "
             "with another (inode, mtime, ctime); no manifest (a preparation that did not finish)"),
    Shortcut("worker blob", "mcpp.cas.remote.worker_cas",
             "hashing a blob a remote worker verified before",
             ("mcpp.cas.remote.worker_cas:WorkerCas._holds",),
             "the file's (dev, inode, size, mtime, mode)"),
    Shortcut("remote input digest", "mcpp.cas.remote.execution",
             "hashing a staged input again for the remote",
             ("mcpp.cas.remote.execution:RemoteExecutor._file",),
             "the read-only materialized copy's path, size or mtime"),
)

# Modules that look like a shortcut to the test's scan but skip no work on a proof of their own.
NOT_SHORTCUTS: dict[str, str] = {
    "mcpp.engine.core.dataclass_code": "skips no check: keyed by the exact source text `dataclasses` writes, "
                                       "it gives the code compiling that text gives (as a .pyc does)",
    "mcpp.engine.core.module_code": "skips no build's check: it gives a module the code its .pyc held, under the "
                                    "import's own rule (the source's size and mtime; the directory searched first)",
    "mcpp.engine.build.memory": "the seam a build reaches its host's memory through; the shortcuts behind it "
                                "(preloaded state, remembered plan and globs) are registered",
    "mcpp.engine.server.child_memory": "a build child's side of that seam; the same shortcuts are registered",
    "mcpp.cas.action_cache": "the store the action-cache shortcut reads; stats are for `mcpp cache gc`",
    "mcpp.cas.local_store": "stats are ages for garbage collection",
    "mcpp.cas.materialize": "the (dev, inode) its entry check stat'ed is handed to the prepared tree, "
                            "whose shortcut (registered) compares it",
    "mcpp.sandbox.spec": "carries the identities the engine stat'ed to the prepared tree (registered)",
    "mcpp.cas.maintenance": "stats are ages for garbage collection",
    "mcpp.engine.payloads.gc": "stats are ages for garbage collection",
    "mcpp.engine.registry.cache": "a store of unpacked releases, each verified by its archive's blake3 once; "
                                  "what it holds is the build's input, hashed by content like any source",
    "mcpp.engine.state.home_gc": "stats are sizes and ages for garbage collection; its hourly stamp only "
                                 "spaces out the automatic gc, it skips nothing a build needs",
    "mcpp.sandbox.pool": "stats are ages of stale sandbox directories to reclaim",
    "mcpp.cas.remote.action_cache": "the REAPI client of the remote-cache shortcut",
    "mcpp.cas.remote.memo": "a per-build memo of values keyed by what computes them (its users register)",
    "mcpp.engine.core.build_env": "names the server's watcher setting",
    "mcpp.engine.cli.cache": "the `mcpp cache` command",
    "mcpp.engine.package.layout": "names the caches' paths",
    "mcpp.engine.program.bounded": "memory limits (the scan matches `memory`)",
    "mcpp.engine.exec.stores": "opens the stores",
    "mcpp.engine.trust.policy": "the policy the checks consult",
    "mcpp.engine.core.shortcuts": "this registry",
    "mcpp.engine.server": "the server machinery that hosts the registered shortcuts",
    "mcpp.engine.server.child": "forgets environment caches in a build child",
    "mcpp.engine.server.daemon": "the server; its sources check is registered (server sources unchanged)",
    "mcpp.engine.server.warm": "hands the registered server shortcuts from one build to the next",
    "mcpp.engine.server.watcher": "the inotify (or scan) watcher the registered server shortcuts use",
}


def table() -> str:
    """The Markdown table of docs/ARCHITECTURE.md's "Shortcuts" section."""
    rows = ["| shortcut | where | skips | valid while (check) | invalidated by |",
            "|---|---|---|---|---|"]
    for s in SHORTCUTS:
        checks = ", ".join(f"`{c.removeprefix('mcpp.')}`" for c in s.checks)
        rows.append(f"| {s.name} | `{s.module.removeprefix('mcpp.')}` | {s.skips} | {checks} | {s.invalidated_by} |")
    return "\n".join(rows) + "\n"
