"""The command lines of compile, archive and link actions for one toolchain family.

Every path in a command is relative to the execroot, so the same project in another directory
produces the same commands (and the same cache keys).
"""
from __future__ import annotations

from mcpp.sandbox import prefix_map_flags

from ..package.profiles import Profile
from ..toolchain.compilers import Toolchain


def std_flag(standard: str, is_c: bool) -> list[str]:
    if is_c:
        return []  # the compiler's default C dialect; [build] cflags can set one
    return [f"-std={standard}"]


# clang records the absolute paths of a module's interface source and of the headers its global
# module fragment included, and an importer reopens them (templates instantiated across an import
# need their source locations). Inside a sandbox the importer sees neither the producer's
# directory nor those files, and a BMI restored from the cache names the directory of whichever
# sandbox built it; embedding every file the interface read makes the BMI self-contained, so an
# importer needs the BMI and nothing else, in every sandbox mode. The recorded paths stay
# absolute (clang 19 has no flag for C++20 modules that makes them relative), so an importer's
# debug info names the directory the BMI was built in: `/execroot` under bwrap and the checkout
# under `off`, which the importer's own prefix map turns into `.` (objects byte-identical across
# checkouts), but a private directory under `dir`, whose importers' objects differ in it.
CLANG_EMBED_SOURCES = ["-Xclang", "-fmodules-embed-all-files"]


def module_flags(tc: Toolchain, mapper: str | None, bmi_out: str | None, imports: list[tuple[str, str]]) -> list[str]:
    """Flags that make a compile see the BMIs of `imports` [(module, bmi path)] and write `bmi_out`."""
    if tc.family == "gcc":
        return ["-fmodules-ts", f"-fmodule-mapper={mapper}"] if mapper else []
    flags = [f"-fmodule-file={name}={bmi}" for name, bmi in imports]
    if bmi_out:
        flags.append(f"-fmodule-output={bmi_out}")
    return flags


def gcc_mapper_text(entries: list[tuple[str, str]]) -> bytes:
    """gcc's `-fmodule-mapper=FILE` format: one `module-name cmi-path` per line."""
    return "".join(f"{name} {path}\n" for name, path in sorted(entries)).encode()


def compile_argv(
    tc: Toolchain,
    profile: Profile,
    *,
    source: str,
    obj: str,
    depfile: str,
    role: str,
    standard: str,
    user_flags: list[str],
    defines: list[str],
    include_dirs: list[str],
    module: list[str],
    pic: bool,
) -> list[str]:
    is_c = role == "c"
    compiler = tc.cc.path if is_c else tc.cxx.path
    # The sandbox's root becomes `.` in debug info and __FILE__, so objects are byte-identical
    # whichever directory (checkout, /execroot, a private dir) the compile ran in.
    argv = [compiler, *tc.flags, *prefix_map_flags(gcc=tc.family == "gcc"), *std_flag(standard, is_c),
            *profile.compile_flags()]
    argv += list(profile.cflags if is_c else profile.cxxflags)
    argv += user_flags
    if pic:
        argv.append("-fPIC")
    argv += [f"-D{d}" for d in defines]
    argv += [f"-I{d}" for d in include_dirs]
    argv += module
    if role == "module":
        argv += ["-x", "c++-module" if tc.family == "clang" else "c++"]
    argv += ["-c", source, "-o", obj, "-MD", "-MF", depfile]
    return argv


def archive_argv(tc: Toolchain, archive: str, objects: list[str]) -> list[str]:
    # D: deterministic (zero timestamps and uids), so archives are byte-identical across builds.
    return [tc.ar, "rcsD", archive, *objects]


def link_argv(tc: Toolchain, profile: Profile, out: str, objects: list[str], archives: list[str],
              ldflags: list[str], shared: bool, extra: list[str]) -> list[str]:
    argv = [tc.cxx.path, *tc.flags, *tc.link_flags]
    if shared:
        argv.append("-shared")
    argv += ["-o", out, *objects, *archives, *profile.ldflags, *ldflags, *extra]
    return argv


def asm_argv(tc: Toolchain, profile: Profile, *, source: str, obj: str, depfile: str | None,
             defines: list[str], include_dirs: list[str]) -> list[str]:
    """An assembler source through the C driver, as gcc and clang treat its extension: `.S`
    (`depfile` given) is preprocessed first, so it takes the package's defines and include
    directories and reports the headers it read; `.s` is assembled as written (the driver runs
    no preprocessor for it and would ignore `-D`, `-I` and `-MD`)."""
    argv = [tc.cc.path, *tc.flags, *prefix_map_flags(gcc=tc.family == "gcc")]
    if depfile is None:
        return argv + ["-c", source, "-o", obj]
    argv += list(profile.compile_flags())
    argv += [f"-D{d}" for d in defines]
    argv += [f"-I{d}" for d in include_dirs]
    # `.sx` is the same language as `.S`, but only gcc knows its extension.
    argv += ["-x", "assembler-with-cpp", "-c", source, "-o", obj, "-MD", "-MF", depfile]
    return argv
