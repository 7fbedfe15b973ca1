"""Choosing a dependency's prebuilt artifact (`[[runtime.artifacts]]`) for this build.

A package may publish several artifacts, each with a compatibility tag (`abi`) and, when it
carries device code, the accelerator set it was built for (`accel`, a field beside the tag rather
than a segment of it: an architecture list is a set, and a tag is a `-`-joined string whose
triple already holds a varying number of `-`). Which artifact a build takes depends on its accel set:
- an **empty** set (no `accel`, or `--no-accel`) takes the first artifact whose tag accepts and that
  carries no device code; a package publishing only device artifacts is refused, naming `--accel`;
- a **non-empty** set takes the first artifact carrying device code whose tag and accel accept the
  build; when none does the refusal names both sides (its `fix:` names `--no-accel`);
- a package publishing no device artifact at all is a pure CPU library: its first artifact whose
  tag accepts serves every build.
Publishers put the CPU-only artifact first, because an older client that ignores `accel` still
gets one that runs everywhere; the rule above keeps that order from hiding the device variant.

The accel comparison holds only the shape (backend name, version, architecture set, portable
floor), never a table of who exists:
- every backend the build requests is declared by the artifact, with the same toolkit major;
- every requested architecture is covered: listed, or a family target of the same major with a
  lower-or-equal minor is listed (`sm_90f` covers `sm_92`), or the portable-form floor is at or
  below it. An architecture without a number after its `_` (`gfx942`) compares by equality:
  digging `942` out of it would invent an order its vendor does not define.
An artifact without `accel` carries no device code and constrains nothing.

Without this check the build links cleanly and the program fails at its first kernel launch,
with a message naming neither the package nor either side's architecture; so the refusal names
the dimension and both values (docs/accelerators.md shows it).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..core.accel import AccelEntry, AccelSet
from ..core.errors import McppError
from ..manifest.model import RuntimeArtifact

_ARCH = re.compile(r"^(?P<family>[A-Za-z]+)_(?P<number>\d+)(?P<suffix>[A-Za-z]*)$")
FAMILY_SUFFIX = "f"  # `sm_90f`: every chip of major 9 with minor >= 0


def _major(version: str) -> str:
    return version.split(".", 1)[0]


def _numbers(text: str) -> tuple[int, ...] | None:
    parts = text.split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


def arch_covered(want: str, have: AccelEntry) -> bool:
    """Whether the artifact entry `have` carries code that runs on architecture `want`."""
    if want in have.archs:
        return True
    w = _ARCH.match(want)
    if w is None:  # no number to order by: equality only
        return False
    number = int(w["number"])
    for arch in have.archs:
        h = _ARCH.match(arch)
        if (h is not None and h["suffix"] == FAMILY_SUFFIX and h["family"] == w["family"]
                and len(h["number"]) == len(w["number"]) and h["number"][:-1] == w["number"][:-1]
                and int(h["number"][-1]) <= int(w["number"][-1])):
            return True
    floor = _numbers(have.floor) if have.floor else None
    return floor is not None and len(floor) == 1 and floor[0] <= number


def accel_differences(build: AccelSet, published: AccelSet | None) -> bool:
    """True when `published` satisfies every backend `build` requests."""
    if published is None:  # no device code: no constraint
        return True
    by_name = {e.name: e for e in published.entries}
    for want in build.entries:
        have = by_name.get(want.name)
        if have is None:
            return False
        if want.version and have.version and _major(want.version) != _major(have.version):
            return False
        if not all(arch_covered(a, have) for a in want.archs):
            return False
    return True


def tag_accepts(published: str | None, toolchain: str) -> bool:
    """A published tag accepts the toolchain's when it is equal to it or a `-`-boundary prefix of
    it: `x86_64-linux-gnu` (a C ABI) serves every C++ compiler of that triple."""
    if not published:
        return True
    return toolchain == published or toolchain.startswith(published + "-")


def toolchain_tag(triple: str, family: str, version: str, standard: str) -> str:
    """`x86_64-linux-gnu-gcc12-libstdcxx12-c++20`: what a prebuilt artifact's tag is compared with."""
    major = _major(version) or "0"
    stdlib = "libcxx" if family == "clang" else "libstdcxx"
    return f"{triple}-{family}{major}-{stdlib}{major}-{standard}"


@dataclass(frozen=True)
class Choice:
    artifact: RuntimeArtifact
    index: int


def _shown(tag: str | None, accel: AccelSet | None) -> str:
    return (tag or "(any)") + (f" accel={accel}" if accel is not None and accel.entries else "")


def _differences(art: RuntimeArtifact, tag: str, build: AccelSet) -> list[str]:
    out = []
    if not tag_accepts(art.abi, tag):
        out.append(f"tag needs {art.abi}, this build has {tag}")
    if not accel_differences(build, art.accel):
        out.append(f"accel needs {art.accel}, this build has {build}")
    return out


def _carries_device_code(art: RuntimeArtifact) -> bool:
    return art.accel is not None and bool(art.accel.entries)


def _header(tag: str, build: AccelSet, artifacts: tuple[RuntimeArtifact, ...]) -> list[str]:
    lines = [f"  your toolchain : {tag}" + (f" accel={build}" if build.entries else ""),
             "  published tags :"]
    return lines + [f"    {_shown(a.abi, a.accel)}" for a in artifacts]


def select(label: str, artifacts: tuple[RuntimeArtifact, ...], tag: str, build: AccelSet) -> Choice | None:
    """The artifact this build takes (the module docstring states the rule); None when the package
    publishes none; else the refusal, naming the dimension and both sides of the closest one."""
    if not artifacts:
        return None
    device = [i for i, a in enumerate(artifacts) if _carries_device_code(a)]
    if not device:  # a pure CPU library serves every build
        pool = list(range(len(artifacts)))
    elif build.entries:
        pool = device
    else:
        pool = [i for i in range(len(artifacts)) if i not in device]
        if not pool:
            lines = _header(tag, build, artifacts)
            lines += ["  every published artifact carries device code, and this build names no accelerator.",
                      "  fix: build for an accelerator the package carries (--accel), or ask the",
                      "       publisher for a variant that carries no device code."]
            raise McppError(f"{label}: no prebuilt artifact matches this toolchain.", notes=lines)
    for i in pool:
        if not _differences(artifacts[i], tag, build):
            return Choice(artifacts[i], i)
    closest = min((artifacts[i] for i in pool), key=lambda a: len(_differences(a, tag, build)))
    lines = _header(tag, build, artifacts)
    lines.append(f"  closest is {closest.abi or '(any)'}, and it differs on:")
    lines += [f"    {d}" for d in _differences(closest, tag, build)]
    lines += ["  fix: build for an architecture the package carries (--accel), or take",
              "       a variant that carries no device code (--no-accel), or ask the",
              "       publisher for one covering yours."]
    raise McppError(f"{label}: no prebuilt artifact matches this toolchain.", notes=lines)


def library_flags(root: str, art: RuntimeArtifact) -> tuple[str, str] | None:
    """(directory, -l name) of a chosen `static-library` artifact, for the link."""
    if art.role != "static-library" or not art.path:
        return None
    name = os.path.basename(art.path)
    if not (name.startswith("lib") and name.endswith(".a")):
        return None
    return os.path.normpath(os.path.join(root, os.path.dirname(art.path))), name[3:-2]


def apply(graph, toolchain) -> None:
    """Choose each package's prebuilt artifact for this build (or refuse), and link a chosen static
    library into everything that links the package, as a build program's `link_lib` would."""
    ctx = graph.context
    tag = toolchain_tag(ctx.target.text, toolchain.family, toolchain.cxx.version, graph.root_manifest.standard)
    for pkg in graph.order:
        m = pkg.manifest
        label = f"{m.namespace + '.' if m.namespace else ''}{m.name}@{m.version or '0.0.0'}"
        choice = select(label, m.runtime_artifacts, tag, ctx.accel)
        if choice is None:
            continue
        lib = library_flags(m.root, choice.artifact)
        if lib is None:
            continue
        if not os.path.isfile(os.path.join(lib[0], f"lib{lib[1]}.a")):
            raise McppError(f"{label}: its prebuilt artifact `{choice.artifact.path}` does not exist",
                            m.position("runtime", "artifacts", choice.index, "path"))
        if pkg.program is None:
            from ..package.program_result import ProgramResult  # what a build.star would have made

            pkg.program = ProgramResult()
        if lib[0] not in pkg.program.link_search:
            pkg.program.link_search.append(lib[0])
        pkg.program.link_libs.append(lib[1])
