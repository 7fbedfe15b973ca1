"""`mcpp.probe(argv, inputs = [], tools = [])`: run a program while a build program is evaluated.

A rule sometimes needs a fact only a tool can tell (`g++ -dumpversion`, `nvcc --dryrun`). The
probe runs in the build's sandbox (`--sandbox`), with the actions' fixed environment, the
declared tools mounted and the declared inputs staged (copies of package files, so a probe can
never change them), and no outputs. Its answer is data the program may branch on, so it must be
reproducible from what the engine can see:

- every tool (argv[0] included) and input is recorded, with its digest, among the program's
  reads: a changed compiler or input re-evaluates the program (cache.py), and argv lives in the
  program text, whose change re-evaluates it too;
- `reads` names files outside the package the probe reads in place (a toolkit's header for
  `cat`, a driver library the loader may find): each is digested like a tool, and one absent
  now is recorded as absent, so the answer goes stale when any of them changes, appears or goes.
  A read lies where the probe sees anyway (the system directories, or the installation root of
  one of its tools): `reads` keys the answer, it never widens what the sandbox shows;
- the result is cached on disk keyed by argv, the tools', inputs' and reads' digests and paths,
  so a program that re-evaluates for another reason reuses an unchanged probe's answer instead
  of running the tool again.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass

import blake3

from mcpp.cas.atomic import write_atomic
from mcpp.cas.digest import digest_file

from .api_errors import ProgramApiError

_TIMEOUT = 30.0  # seconds; well inside the evaluation's own time limit
_FORMAT = "mcpp-probe-1"


@dataclass(frozen=True)
class ProbeSettings:
    """What the build tells the probes (driver.ProgramInputs, handed to each package's `McppApi`):
    the sandbox name (None: the best available), the directory sandboxes live in, the probe
    cache's directory (None: the system's temporary directory, no cache), and `apart`: "" when
    the sandbox proves what a probe read, else the tag its answers are cached under so that no
    hermetic build takes them (engine/trust/policy.py `TrustPolicy.apart`)."""
    sandbox: str | None = None
    work_root: str | None = None
    cache_dir: str | None = None
    apart: str = ""


# Where staged files of other roots lie in a probe's directory (its working directory).
RULE_DIR = ".rule"  # the calling rule package's files
INCLUDE_DIR = ".include"  # the files of each `-I` directory of `cxx_flags()` / `c_flags()` the argv names


def run_probe(api, argv, inputs, tools, reads=(), rule_root: str | None = None) -> dict:
    """Validate, look up the cache, else run; returns {code, stdout, stderr} for the struct.
    Where it runs and caches: `api.probes`. `rule_root`: the rule package of the calling file,
    whose files may be inputs too (staged under `.rule/`). An argv word naming a staged file by
    its absolute path names its staged copy, and an `-I` of the package's compile context (what
    `cxx_flags()` gives) brings that directory's files along (under `.include/<n>/`)."""
    settings: ProbeSettings = api.probes
    argv = _str_list(argv, "probe(): argv")
    if not argv:
        raise ProgramApiError("probe(): argv is empty")
    if any("\0" in a for a in argv):
        raise ProgramApiError("probe(): argv contains a NUL byte")
    tool_paths = [_tool(t, ProgramApiError) for t in _str_list(tools, "probe(): tools")]
    exe = _tool(argv[0], ProgramApiError, on_path=True)
    if exe not in tool_paths:
        tool_paths.insert(0, exe)
    argv = [exe] + argv[1:]
    read_paths = [_read(r, tool_paths, ProgramApiError) for r in _str_list(reads, "probe(): reads")]
    staged: dict[str, str] = {}
    roots = {api.ctx.manifest_dir: ""}  # absolute root -> where its files are staged
    if rule_root is not None:
        roots[rule_root] = RULE_DIR + "/"
    for path in _str_list(inputs, "probe(): inputs"):
        resolved = api._path(path)
        rel = _staged_name(resolved, roots)
        if rel is None:
            whose = f"package `{api.ctx.package}`" + (" or of the rule package calling it" if rule_root else "")
            raise ProgramApiError(f"probe(): input `{path}` is not a file of {whose}")
        boundary = rule_root if rel.startswith(RULE_DIR + "/") and rule_root else api.ctx.manifest_dir
        _contained(resolved, boundary, f"probe(): input `{path}`")
        if not os.path.isfile(resolved):
            raise ProgramApiError(f"probe(): input `{path}` does not exist or is not a file")
        staged[rel] = resolved
    argv = [argv[0]] + _include_dirs(api, argv[1:], staged, roots)
    argv = [argv[0]] + [_relocated(a, roots) for a in argv[1:]]
    digests: dict[str, str | None] = {p: digest_file(p).hash for p in tool_paths + list(staged.values())}
    digests.update({p: digest_file(p).hash if os.path.exists(p) else None for p in read_paths})  # as api.file_digest
    api.reads.files.update(digests)
    key = blake3.blake3(json.dumps([_FORMAT, settings.apart, argv, sorted(staged.items()), sorted(digests.items())])
                        .encode()).hexdigest()
    cached = _cached(settings, key)
    if cached is not None:
        return cached
    result = _run(settings, argv, tool_paths, staged, ProgramApiError)
    _store(settings, key, result)
    return result


def _staged_name(path: str, roots: dict[str, str]) -> str | None:
    """Where the file `path` is staged: its path below the deepest root holding it, prefixed."""
    for root in sorted(roots, key=len, reverse=True):
        rel = os.path.relpath(path, root)
        if not (rel == ".." or rel.startswith("../")):
            return roots[root] + rel
    return None


def _contained(path: str, boundary: str, shown: str) -> None:
    from ..core import containment
    try:
        containment.check(path, boundary, shown=shown)
    except containment.SymlinkEscape as e:
        raise ProgramApiError(e.message) from None


def _relocated(word: str, roots: dict[str, str]) -> str:
    """An argv word with each staged root's absolute path replaced by where its files lie in the
    probe's directory (`-I/pkg/include` -> `-I./include`): the same command in every sandbox."""
    for root in sorted(roots, key=len, reverse=True):
        r = root.rstrip("/")
        place = "./" + roots[root]
        if r + "/" in word:
            word = word.replace(r + "/", place)
        elif word.endswith(r):
            word = word[:len(word) - len(r)] + (place.rstrip("/") or ".")
    return word


def _include_dirs(api, args: list[str], staged: dict[str, str], roots: dict[str, str]) -> list[str]:
    """For each `-I<dir>` of the compile context in `args` (the package's and its dependencies'
    include directories, what the program gave `include_dir`): stage that directory's files and
    name it by its staged place. Other words are left as they are."""
    from ..core.errors import ManifestError
    from ..manifest import globs
    c = api.ctx.compile_flags
    known = set(c.include_dirs) | set(c.dependency_include_dirs) | set(api.result.include_dirs)
    out = []
    for word in args:
        d = word[2:] if word.startswith("-I") else None
        if d is None or d not in known or not os.path.isdir(d):
            out.append(word)
            continue
        if d not in roots:
            roots[d] = f"{INCLUDE_DIR}/{sum(1 for r in roots.values() if r.startswith(INCLUDE_DIR))}/"
        try:
            files = globs.expand(d, ["**/*"], d)
        except ManifestError as e:  # a symlink out of the directory, an unreadable file: say which
            raise ProgramApiError(f"probe(): include directory `{d}`: {e.message}") from None
        for rel in files:
            staged[roots[d] + rel] = os.path.join(d, rel)
        out.append(word)
    return out


def _tool(name: str, error, on_path: bool = False) -> str:
    """An absolute, existing executable: a bare name (argv[0] only) is looked up on the actions' PATH."""
    if "/" not in name and on_path:
        from ..plan.model import ACTION_ENV
        search = dict(ACTION_ENV)["PATH"]
        found = shutil.which(name, path=search)
        if found is None:
            raise error(f"probe(): `{name}` is not found on the actions' PATH ({search}); name the tool by "
                        f"its absolute path or with `mcpp.dep_bin(...)`")
        return found
    if not os.path.isabs(name):
        raise error(f"probe(): tool `{name}` must be an absolute path")
    if not os.path.isfile(name) or not os.access(name, os.X_OK):
        raise error(f"probe(): tool `{name}` does not exist or is not executable")
    return os.path.normpath(name)


def _read(name: str, tools: list[str], error) -> str:
    """An absolute path the probe reads where it lies: a regular file, or nothing (absent now,
    which is part of the answer's key), under the system directories or a tool's root."""
    from mcpp.sandbox.undeclared import SYSTEM_ROOTS, tool_roots

    if not os.path.isabs(name):
        raise error(f"probe(): read `{name}` must be an absolute path")
    path = os.path.normpath(name)
    roots = SYSTEM_ROOTS + tool_roots(tuple(tools))
    if not any(path.startswith(r.rstrip("/") + "/") for r in roots):
        raise error(f"probe(): read `{name}` is neither under the system directories nor under the root of a "
                    f"tool of this probe, so the probe cannot see it")
    if os.path.exists(path) and not os.path.isfile(path):
        raise error(f"probe(): read `{name}` is not a regular file")
    return path


def _run(settings: ProbeSettings, argv: list[str], tools: list[str], staged: dict[str, str], error) -> dict:
    from mcpp.sandbox import SandboxSpec, SandboxSpecError, SandboxUnavailable, make_sandbox
    from ..plan.model import ACTION_ENV

    work_root = settings.work_root or tempfile.gettempdir()
    os.makedirs(work_root, exist_ok=True)
    root = tempfile.mkdtemp(prefix="probe-", dir=work_root)
    try:
        inputs = {}
        for rel, src in staged.items():
            copy = os.path.join(root, rel)
            os.makedirs(os.path.dirname(copy), exist_ok=True)
            shutil.copyfile(src, copy)
            os.chmod(copy, 0o444)
            inputs[rel] = copy
        try:
            sandbox, _warning = make_sandbox(settings.sandbox, work_root)
        except SandboxUnavailable as e:
            raise error(f"probe(): {e}") from None
        try:
            spec = SandboxSpec(argv=tuple(argv), env=dict(ACTION_ENV), inputs=inputs, tools=tuple(tools),
                               outputs=(), timeout=_TIMEOUT, label="probe", root=root)
            try:
                res = sandbox.run(spec)
            except SandboxSpecError as e:
                raise error(f"probe(): {e}") from None
            sandbox.release(res)
        finally:
            sandbox.shutdown()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if res.timed_out:
        raise error(f"probe(): `{' '.join(argv)}` ran longer than {_TIMEOUT:g} s and was stopped")
    return {"code": res.exit_code, "stdout": res.stdout.decode(errors="replace"),
            "stderr": res.stderr.decode(errors="replace")}


def _cache_path(settings: ProbeSettings, key: str) -> str | None:
    return os.path.join(settings.cache_dir, key + ".json") if settings.cache_dir else None


def _cached(settings: ProbeSettings, key: str) -> dict | None:
    path = _cache_path(settings, key)
    try:
        with open(path, encoding="utf-8") as f:
            entry = json.load(f)
        return {k: entry[k] for k in ("code", "stdout", "stderr")}
    except (TypeError, OSError, ValueError, KeyError):
        return None


def _store(settings: ProbeSettings, key: str, result: dict) -> None:
    path = _cache_path(settings, key)
    if path is not None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_atomic(path, json.dumps(result))


def _str_list(value, what: str) -> list[str]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ProgramApiError(f"{what} must be a list of strings")
    return list(value)
