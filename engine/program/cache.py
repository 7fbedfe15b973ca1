"""The evaluation cache: a program runs again only when something it could see has changed.

An entry (`target/<profile>/.mcpp/programs/<package>.json`, engine/package/layout.py) holds the context fingerprint,
every `.star` file the evaluation used, every file it read, every glob with its matches and
every environment variable it asked for, each with what it saw, and the result. A lookup is a
hit when the fingerprint matches and each recorded read still sees the same thing; then the
result is reused without running Starlark, and its warnings are replayed by the caller.
"""
from __future__ import annotations

import json
import os

from mcpp.cas.atomic import write_atomic
from mcpp.cas.statcache import discard

from ..core.errors import McppError
from ..package.program_result import ProgramResult
from .api import Reads, file_digest, run_glob

_FORMAT = "mcpp-program-cache-1"


class ProgramCache:
    def __init__(self, directory: str):
        self.dir = directory

    def _path(self, package: str) -> str:
        return os.path.join(self.dir, f"{package}.json")

    def lookup(self, package: str, fingerprint: str, manifest_dir: str,
               environ: dict[str, str]) -> tuple[ProgramResult, list[str], bool] | None:
        """The cached result, with the files it depends on and whether it read the environment
        (see `dependencies`), or None when the program must run again."""
        try:
            with open(self._path(package), encoding="utf-8") as f:
                entry = json.load(f)
        except (OSError, ValueError):
            return None
        try:
            return self._validate(entry, fingerprint, manifest_dir, environ)
        except (AttributeError, KeyError, TypeError, ValueError):
            discard(self._path(package), "wrong-shaped")
            return None  # evaluate again, and `store` overwrites it

    def _validate(self, entry: dict, fingerprint: str, manifest_dir: str, environ: dict[str, str]):
        if entry.get("format") != _FORMAT or entry.get("fingerprint") != fingerprint:
            return None
        for path, digest in {**entry["star_files"], **entry["files"]}.items():
            if file_digest(path) != digest:
                return None
        try:
            for pattern, matches in entry["globs"].items():
                if run_glob(manifest_dir, pattern) != matches:
                    return None
        except McppError:  # a symlink out of the package now: evaluate, and say where
            return None
        for name, value in entry["env"].items():
            if environ.get(name) != value:
                return None
        result = ProgramResult.from_json(entry["result"])
        return (result, *dependencies(entry["star_files"], entry["files"], entry["env"]))

    def store(self, package: str, fingerprint: str, star_files: dict[str, str | None], reads: Reads,
              result: ProgramResult) -> None:
        entry = {"format": _FORMAT, "fingerprint": fingerprint, "star_files": star_files, "files": reads.files,
                 "globs": reads.globs, "env": reads.env, "result": result.to_json()}
        write_atomic(self._path(package), json.dumps(entry))


def last_result(directory: str, package: str) -> ProgramResult | None:
    """What the package's program declared when it last ran (unvalidated; None when it never ran
    or the entry is unreadable): what `mcpp metadata`, which evaluates nothing, reports."""
    try:
        with open(os.path.join(directory, f"{package}.json"), encoding="utf-8") as f:
            entry = json.load(f)
        return ProgramResult.from_json(entry["result"]) if entry.get("format") == _FORMAT else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def dependencies(star_files: dict, files: dict, env: dict) -> tuple[list[str], bool]:
    """Every file an evaluation depends on, and whether it read the environment (the no-op fast
    path watches files only, so such a build is never answered by it)."""
    return list(star_files) + list(files), bool(env)
