"""Adopting an installation already on the machine (`system = "/usr/local/cuda"`).

Nothing is copied: the directory is used in place, read-only, when its probe (argv whose first
word is a program inside the root) prints the release's version through `match`. The probe is
what makes adoption honest: an index that says `13.0.88` is believed only when the installation
says so.

What an index may make this machine run is bounded here and in probe_sandbox.py:

- the descriptor is refused when it is read (descriptor.py, `probe_shape_error`) if the program is not a
  path inside the root (absolute, `..`), is a shell or launcher, or the root is `/`;
- when the probe runs, the program's real path must still lie inside the root's real path (a
  link leading out is "not on this machine"), the root may not hold the home directory, and
  the program runs in the bwrap sandbox (probe_sandbox.py), never on the host;
- only a build or `mcpp payload fetch` runs probes. `mcpp payload list` and `mcpp metadata`
  read the answers cached under `$MCPP_HOME/payloads/.probes/` and report a root not probed
  yet as such, so listing runs nothing an index names.

The cache is keyed on the root, the probe argv and the probed program's stat (device, inode,
size, mtime, ctime): a reinstalled toolkit is probed again, an unchanged one costs a stat.
"""
from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass

from .descriptor import Source
from .errors import PayloadError

PROBES = ".probes"  # under $MCPP_HOME/payloads

@dataclass(frozen=True)
class Probed:
    version: str | None  # what the installation reports
    why: str = ""  # why there is no version
    pending: bool = False  # not probed yet, and this command runs no probe


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


class Prober:
    """The versions `system` roots report, for one command. `may_run` False (`mcpp payload
    list`, `mcpp metadata`): only cached answers are used; nothing runs."""

    def __init__(self, cache_dir: str, may_run: bool):
        self.cache_dir = cache_dir
        self.may_run = may_run
        self._memo: dict[str, str | None] = {}

    def probe(self, source: Source, what: str) -> Probed:
        root = os.path.realpath(source.system)
        if not os.path.isdir(root):
            return Probed(None, f"`{source.system}` does not exist")
        home = os.path.realpath(os.path.expanduser("~"))
        if _inside(home, root):
            raise PayloadError(f"{what}: `system = \"{source.system}\"` holds the home directory ({home}); an "
                               f"adopted root must be the installation's own directory")
        program = os.path.join(root, source.probe[0])
        real = os.path.realpath(program)
        if not _inside(real, root):
            return Probed(None, f"its probe program `{program}` leads out of `{source.system}` (to `{real}`)")
        try:
            st = os.stat(real)
        except OSError:
            return Probed(None, f"its probe program `{program}` does not exist")
        if not stat.S_ISREG(st.st_mode) or not st.st_mode & 0o111:
            return Probed(None, f"its probe program `{program}` is not an executable file")
        argv = [program, *source.probe[1:]]
        key = _key(root, source.probe, real, st)
        output = self._cached(key)
        if output is None or re.search(source.match, output) is None:
            if not self.may_run:
                return Probed(None, "not probed yet", pending=True)
            from .probe_sandbox import run_probe

            output, why = run_probe(root, argv, what)
            if output is None:
                return Probed(None, why)
            if re.search(source.match, output) is not None:
                self._store(key, output)
        m = re.search(source.match, output)
        if m is None:
            return Probed(None, f"the output of `{' '.join(argv)}` does not match `{source.match}`")
        return Probed(m.group(1))

    def _cached(self, key: str) -> str | None:
        if key not in self._memo:
            try:
                with open(os.path.join(self.cache_dir, key), encoding="utf-8", errors="replace") as f:
                    self._memo[key] = f.read()
            except OSError:
                self._memo[key] = None
        return self._memo[key]

    def _store(self, key: str, output: str) -> None:
        from mcpp.cas.atomic import write_atomic

        self._memo[key] = output
        try:
            os.makedirs(self.cache_dir, exist_ok=True)
            write_atomic(os.path.join(self.cache_dir, key), output)
        except OSError:
            pass  # an answer not cached is asked again next time


def _key(root: str, probe: tuple[str, ...], real: str, st: os.stat_result) -> str:
    import blake3

    text = json.dumps([root, list(probe), real, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns])
    return blake3.blake3(text.encode()).hexdigest()[:40]


@dataclass(frozen=True)
class Adoption:
    root: str | None  # the adopted root
    why: str = ""
    pending: bool = False  # not probed yet (listing): the root is named, not verified


def adopt(source: Source, version: str, prober: Prober, what: str) -> Adoption:
    probed = prober.probe(source, what)
    if probed.pending:
        return Adoption(None, probed.why, pending=True)
    if probed.version is None:
        return Adoption(None, probed.why)
    if probed.version != version:
        return Adoption(None, f"`{source.system}` reports version {probed.version}")
    return Adoption(source.system)
