"""The build's environment: declarations -> one version per package -> installed directories.

`resolve_environment` is the one entry point (see its docstring). The steps, in order:

1. collect every declaration that applies (declarations.py); a manifest whose tool selector names
   a resolved layer was already refused when it was read, so nothing below runs for it;
2. arbitrate and validate per package (arbitrate.py);
3. choose the release against the index: an exact pin must exist; `""` and ranges take the
   highest release (for this host platform) that every requirement allows, and a range nothing
   satisfies is refused naming the highest release there is;
4. install (install.py) or adopt (system.py).

Indexes are consulted only from step 3 on, and only when there is at least one declaration.
"""
from __future__ import annotations

import os
import platform as host_platform
from typing import TYPE_CHECKING

from . import version as versions
from .declarations import collect
from .environment import Environment
from .resolved import ResolvedPayload
from .errors import PayloadError

# Arbitration, the indexes, the installer (tarfile, zip, HTTP) are imported by a build that
# declares a payload; one that declares none (most) never loads them.
if TYPE_CHECKING:
    from . import system
    from ..core.settings import Settings
    from .arbitrate import Choice
    from .descriptor import Descriptor
    from .index import IndexSet


def host_platform_key() -> str:
    """`linux-x86_64`: the key of a descriptor's per-platform sources for this machine."""
    return f"{host_platform.system().lower()}-{host_platform.machine()}"


def target_platform_key(graph) -> str:
    """The key of the sources a target-axis payload takes: the build target's (`linux-aarch64` for
    `--target aarch64-linux-gnu`: what the artifact is built against), the host's otherwise."""
    ctx = graph.context
    if ctx is None or not ctx.cross:
        return host_platform_key()
    return f"{'darwin' if ctx.target.os == 'macos' else ctx.target.os}-{ctx.target.arch}"


def resolve_environment(graph, settings: Settings, *, install_missing: bool = True,
                        status=None, warn=None, indexes: IndexSet | None = None) -> Environment:
    """Resolve, and by default install, the payload environment of one build.

    `graph` is the loaded `PackageGraph` (manifests folded for this build's target and accel set,
    features expanded); `settings` the command's (engine/core/settings.py): its home holds the
    payload store, its config.toml and `MCPP_PAYLOAD_*` variables name the indexes and limits. With `install_missing=False` nothing is fetched or
    unpacked, no `system` probe runs (only answers cached by an earlier build are used; a root
    not probed yet counts as available and has `probed == False`), and a payload not yet in the
    store has `directory == ""` (`mcpp payload list`, `mcpp metadata`).
    `status(verb, text)` reports installs, `warn(text)` overridden pins and an index accepted
    unverified. Raises `PayloadError`
    (exit 2) for a refusal; returns the `Environment`: one `ResolvedPayload` per package, in
    declaration order, whose `directory` is what `mcpp.xpkg_dir` answers.
    """
    declarations = collect(graph)
    env = Environment()
    if not declarations:
        return env  # never contact an index for a build that needs no payload
    from . import package_index, system
    from .arbitrate import arbitrate
    from .index import consulted_files, open_indexes
    from .package_index import PackageIndexes
    from .install import install, installed

    choices = arbitrate(declarations)
    payloads_root = str(settings.home.payloads)
    indexes = indexes or open_indexes(settings, warn)
    owned = PackageIndexes(indexes.trust)
    prober = system.Prober(os.path.join(payloads_root, system.PROBES), may_run=install_missing)
    platforms = {"host": host_platform_key(), "target": target_platform_key(graph)}
    for choice in choices:
        platform = platforms[choice.winner.spec.axis]
        for note in choice.notes:
            env.notes.append(note)
            if warn is not None:
                warn(note)
        found = package_index.find(choice.address, choice.identity, choice.declarations, indexes, owned, warn)
        if found is None:
            d = choice.winner
            raise PayloadError(f"payload `{choice.address}` is not in any payload index (searched: "
                               f"{package_index.searched(indexes, owned)})", d.position,
                               [f"help: add an index that describes it to `[payloads] index` in "
                                f"{settings.config.path} or to MCPP_PAYLOAD_INDEX"])
        index, desc = found
        chosen = _choose_version(choice, desc, platform, prober)
        source = desc.source(chosen, platform)
        probed = True
        if install_missing:
            directory = install(payloads_root, index, desc, chosen, source, status, prober, settings.env,
                                platform=_apart(platform, platforms["host"]))
        elif source.kind == "system":
            adoption = system.adopt(source, chosen, prober, f"payload `{choice.address}` {chosen}")
            directory, probed = adoption.root or "", not adoption.pending
        else:
            directory = installed(payloads_root, desc.namespace, desc.name, chosen,
                                  _apart(platform, platforms["host"]), index.origin(desc.namespace, desc.name)) or ""
        w = choice.winner
        env.payloads.append(ResolvedPayload(desc.namespace, desc.name, chosen, w.spec.axis, source.kind, directory,
                                            w.package, str(w.position), choice.why, desc.bins, index.location,
                                            probed))
    env.read, env.read_remote = consulted_files(indexes.indexes + owned.indexes())
    for platform in dict.fromkeys(platforms.values()):
        env.read += _probed(indexes, platform)
    return env


def _apart(platform: str, host: str) -> str:
    """The platform a release is stored apart under: "" for the host's own."""
    return "" if platform == host else platform


def _probed(indexes: IndexSet, platform: str) -> list[str]:
    """The programs the adoption of a `system` release ran (each release of a consulted
    descriptor is probed when its versions are listed): a reinstalled toolkit answers anew."""
    out = []
    for index in indexes.indexes:
        for desc in index.descriptors():
            for v in desc.versions_for(platform):
                s = desc.source(v, platform)
                if s.kind == "system" and s.probe:
                    out.append(os.path.join(s.system, s.probe[0]))
    return out


def _choose_version(choice: Choice, desc: Descriptor, platform: str, prober: system.Prober) -> str:
    from . import system
    w = choice.winner
    listed = desc.versions_for(platform)
    if not listed:
        raise PayloadError(f"payload `{choice.address}` has no release for this machine ({platform}) in "
                           f"{desc.location}", w.position)
    available, unavailable = [], []
    for v in listed:
        s = desc.source(v, platform)
        if s.kind == "system":
            adoption = system.adopt(s, v, prober, f"payload `{choice.address}` {v}")
            if adoption.root is None and not adoption.pending:  # not probed yet: listed as available
                unavailable.append(f"{v}: {adoption.why}")
                continue
        available.append(v)
    reqs = [w.requirement] + [d.requirement for d in choice.requirements if d is not w]
    if w.requirement.kind == "pin":
        match = next((v for v in available if versions.compare(v, w.spec.version) == 0), None)
        if match is None:
            raise PayloadError(f"payload `{choice.address}` has no release {w.spec.version} for {platform} "
                               f"(declared as {w.describe()}){_listing(available, unavailable)}", w.position,
                               [f"help: pin one of the available versions, or write a requirement such as "
                                f"`>={w.spec.version}`"])
        return match
    candidates = [v for v in available if all(r.allows(v) for r in reqs)]
    if candidates:
        return max(candidates, key=lambda v: versions.key(v) + (0,) * 8)
    stating = [d for d in [w] + [r for r in choice.requirements if r is not w] if d.requirement.kind != "any"]
    stated = " and ".join(d.describe() for d in stating)
    highest = max(available, key=lambda v: versions.key(v) + (0,) * 8) if available else None
    raise PayloadError(f"no release of `{choice.address}` satisfies {stated or 'the declarations'}; "
                       f"the highest available for {platform} is {highest or 'none'}"
                       f"{_listing(available, unavailable)}", w.position,
                       [f"help: lower the requirement to one {highest} satisfies" if highest else
                        "help: add a release to the index"])


def _listing(available: list[str], unavailable: list[str]) -> str:
    text = f"; available: {', '.join(available) or 'none'}"
    if unavailable:
        text += f"; not on this machine: {'; '.join(unavailable)}"
    return text
