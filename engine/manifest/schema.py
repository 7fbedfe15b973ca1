"""The registry of every table and key this engine reads from `mcpp.toml`.

One place answers "is this key accepted here, in which plane, spelled in which case, and does the
engine act on it yet". The loader checks keys against it, every message that lists accepted keys
or sections is built from it, and `docs/manifest.md` is kept complete by a test over it: adding a
key here is the whole change for the check, the message and the documentation check.

Planes (docs/manifest.md, "Planes") say what a section talks about; the case ("Naming") follows
the surface a key
belongs to: kebab-case for the Cargo-inherited surface (dependencies, features, profiles), snake
case for mcpp's own build surface.
"""
from __future__ import annotations

from dataclasses import dataclass

KEBAB = "kebab"
SNAKE = "snake"
CASE_RULE = {
    KEBAB: "the Cargo-inherited surface is kebab-case",
    SNAKE: "mcpp's own build surface is snake_case",
}

PLANES = {
    "identity": "who this package is",
    "artifacts": "what it produces",
    "compilation": "how it is compiled",
    "library dependencies": "which mcpp packages it needs",
    "tools and environment": "which payloads and tools it needs",
    "gates": "under which feature",
    "conditions": "on which target",
    "artifact metadata": "what the products are",
    "lifecycle": "what runs before and after the build",
    "workspace": "which packages build together",
}


@dataclass(frozen=True)
class Table:
    """One kind of table: where it sits (`name`, with <placeholders>), its plane, the case of its
    keys, the keys it accepts, and which of them are read but not acted on yet."""

    name: str
    plane: str
    case: str
    keys: tuple[str, ...]
    pending: tuple[str, ...] = ()  # validated, not acted on by this engine yet

    def header(self) -> str:
        return f"[{self.name}]"


TOP = Table("top level", "identity", KEBAB, (
    "package", "targets", "lib", "build", "profile", "toolchain", "dependencies", "dev-dependencies",
    "build-dependencies", "xlings", "payloads", "features", "feature-deps", "feature-xlings", "target",
    "runtime", "resources", "hooks", "workspace", "source", "test"), pending=("resources", "hooks"))

# The plane of each top-level section (the table in docs/manifest.md, "Planes").
SECTION_PLANES = {
    "package": "identity", "targets": "artifacts", "lib": "artifacts",
    "build": "compilation", "profile": "compilation", "toolchain": "compilation",
    "dependencies": "library dependencies", "dev-dependencies": "library dependencies",
    "build-dependencies": "library dependencies",
    "xlings": "tools and environment", "payloads": "tools and environment",
    "features": "gates", "feature-deps": "gates", "feature-xlings": "gates",
    "target": "conditions",
    "runtime": "artifact metadata", "resources": "artifact metadata",
    "hooks": "lifecycle", "workspace": "workspace", "source": "library dependencies", "test": "artifacts",
}

PACKAGE = Table("package", "identity", KEBAB, (
    "name", "version", "namespace", "standard", "description", "authors", "license", "repository",
    "homepage", "keywords", "readme", "accelerators", "platforms", "include"),
    pending=("authors", "license", "repository", "homepage", "keywords", "readme",
             "platforms"))
TARGET_SPEC = Table("targets.<name>", "artifacts", SNAKE, (
    "kind", "main", "sources", "include_dirs", "defines", "cflags", "cxxflags", "ldflags", "deps", "link_inputs",
    "soname", "version", "install"))
LIB = Table("lib", "artifacts", SNAKE, ("path",))
TEST = Table("test", "artifacts", SNAKE, ("dirs",))
BUILD = Table("build", "compilation", SNAKE, (
    "sources", "include_dirs", "cflags", "cxxflags", "ldflags", "defines", "accel", "compile_commands"))
SOURCE_ENTRY = Table("build.sources[]", "compilation", SNAKE, ("glob", "accel", "cflags", "cxxflags", "defines"))
PROFILE = Table("profile.<name>", "compilation", KEBAB, ("inherits", "opt", "debug", "cflags", "cxxflags", "ldflags"))
TOOLCHAIN = Table("toolchain", "compilation", SNAKE, ("default",))
DEPENDENCY = Table("dependencies.<name>", "library dependencies", KEBAB, (
    "path", "version", "features", "default-features", "tools", "host-module", "reexport", "libs", "pkg-config",
    "system"))
# A system library entry takes only its own key: the others describe an mcpp package.
SYSTEM_DEP_KEYS = ("pkg-config", "system")
FEATURE = Table("features.<name>", "gates", SNAKE, (
    "sources", "defines", "implies", "rule_module", "rule_module_entry", "device_extensions"))
XLINGS = Table("xlings", "tools and environment", SNAKE, ("deps", "workspace", "envs", "subos"),
               pending=("envs", "subos"))
# The package's own payload index: it serves the payloads this package declares (docs/payloads.md).
PAYLOADS = Table("payloads", "tools and environment", SNAKE, ("index",))
RUNTIME = Table("runtime", "artifact metadata", SNAKE, ("artifacts", "library_dirs"),
                pending=("library_dirs",))
ARTIFACT = Table("runtime.artifacts[]", "artifact metadata", SNAKE, ("role", "path", "provenance", "abi", "accel"),
                 pending=("provenance",))
WORKSPACE = Table("workspace", "workspace", KEBAB, ("members",))

# -- conditions (docs/manifest.md, "Conditions") ----------------------------------------------
# The sections accepted under [target.<selector>]; `<f>` is a feature registered in [features].
CONDITIONAL_SECTIONS = ("build", "dependencies", "dev-dependencies", "build-dependencies", "feature-deps.<f>",
                        "runtime", "xlings", "feature-xlings.<f>")
# Keys that describe one exact target and so live directly under [target.<triple>].
TRIPLE_KEYS = ("runner", "sysroot", "cxx", "cc")
TARGET = Table("target.<selector>", "conditions", KEBAB,
               tuple(s.split(".")[0] for s in CONDITIONAL_SECTIONS) + TRIPLE_KEYS)
# [target.<selector>.build] takes only what combines by appending: a block adds to the
# unconditional section, and two blocks that both apply could not both set one value.
ADDITIVE_BUILD_KEYS = ("sources", "include_dirs", "cflags", "cxxflags", "ldflags", "defines")
# Why a section cannot be conditioned, where a better spelling exists.
UNCONDITIONAL_HINTS = {
    "features": "a feature is registered unconditionally (the condition decides what it pulls in, not whether "
                "it exists): write [target.<selector>.feature-deps.<f>] or [target.<selector>.feature-xlings.<f>]",
}

# -- gates: [feature-deps.<f>], [feature-xlings.<f>] ---------------------------------------------
# [features.<f>.<key>] spellings refused in favour of the top-level <qualifier>-<section> gate.
GATE_SPELLINGS = {"deps": "feature-deps", "dependencies": "feature-deps", "xlings": "feature-xlings"}

# -- xlings payload tables (docs/manifest.md, `[xlings]`) -----------------------------------------
# The keys of a platform-key object, the host-axis spelling of a payload's version.
PLATFORM_KEYS = ("linux", "macosx", "windows", "default")
# The host os (triples.OSES) -> its platform key.
PLATFORM_KEY_OF_OS = {"linux": "linux", "macos": "macosx", "windows": "windows"}
DEFAULT_PAYLOAD_NAMESPACE = "xim"

ALL_TABLES = (TOP, PACKAGE, TARGET_SPEC, LIB, TEST, BUILD, SOURCE_ENTRY, PROFILE, TOOLCHAIN, DEPENDENCY, FEATURE,
              XLINGS, PAYLOADS, RUNTIME, ARTIFACT, WORKSPACE, TARGET)


def normalized(key: str) -> str:
    """The spelling-insensitive form: `include-dirs`, `Include_Dirs` and `include_dirs` agree."""
    return key.lower().replace("-", "_")


def case_of(key: str) -> str | None:
    if "-" in key and "_" not in key:
        return KEBAB
    if "_" in key and "-" not in key:
        return SNAKE
    return None


def close_key(key: str, known: tuple[str, ...]) -> str | None:
    """The known key `key` is most likely a typo of (`cxxflag`, `standrad`, `dependecies`): the
    nearest by edit distance (a swap of two neighbours counts once), within a third of its length
    as Cargo's suggestions are, so an unrelated key suggests nothing."""
    limit = max(1, len(key) // 3)
    best: tuple[int, str] | None = None
    for k in known:
        d = _edit_distance(key.lower(), k.lower())
        if d <= limit and (best is None or d < best[0]):
            best = (d, k)
    return best[1] if best else None


def _edit_distance(a: str, b: str) -> int:
    """Optimal-string-alignment distance: insertions, deletions, substitutions, transpositions."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]


def did_you_mean(key: str, known: tuple[str, ...]) -> str | None:
    """The known key that `key` spells in the wrong case, if any."""
    for k in known:
        if k != key and normalized(k) == normalized(key):
            return k
    return None
