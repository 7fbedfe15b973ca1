"""`mcpp new` and `mcpp init`: scaffold a package.

`new` is transactional: a bad name or an existing path creates nothing. `init` adopts an existing
directory and never overwrites a file that is there. Both start a git repository (unless the
directory is already inside one, or `--vcs none`), and a package created below a workspace root is
added to its `[workspace] members`, as Cargo does.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import tomllib

from ..core.errors import McppError
from ..manifest.builder import DEFAULT_STANDARD

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
MANIFEST_NAME = "mcpp.toml"

# A package name becomes a C++ module and namespace name (`-` as `_`): a keyword there is a
# package that cannot build, so it is refused up front (Cargo refuses Rust keywords the same way).
CXX_KEYWORDS = frozenset("""
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
    char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
    co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
    extern false float for friend goto if import inline int long module mutable namespace new
    noexcept not not_eq nullptr operator or or_eq private protected public register
    reinterpret_cast requires return short signed sizeof static static_assert static_cast struct
    switch template this thread_local throw true try typedef typeid typename union unsigned using
    virtual void volatile wchar_t while xor xor_eq
""".split())
# `std` and `std.*` are the standard library's modules and namespace.
RESERVED = frozenset({"std"})


def check_name(name: str) -> None:
    if not _NAME.match(name):
        raise McppError(f"invalid package name `{name}`: use letters, digits, `-` and `_`, starting with a letter")
    ident = name.replace("-", "_")
    if ident in CXX_KEYWORDS:
        raise McppError(f"the name `{name}` cannot be used as a package name, it is a C++ keyword")
    if ident in RESERVED:
        raise McppError(f"the name `{name}` cannot be used as a package name, "
                        f"it is reserved for the C++ standard library")


def _manifest(name: str) -> str:
    return f'[package]\nname = "{name}"\nversion = "0.1.0"\nstandard = "{DEFAULT_STANDARD}"\n'


_GITIGNORE = "/target\ncompile_commands.json\n"


def _files(name: str, lib: bool) -> dict[str, str]:
    module = name.replace("-", "_")
    if lib:
        return {
            MANIFEST_NAME: _manifest(name),
            f"src/{module}.cppm": (
                f"export module {module};\n\nexport namespace {module} {{\n"
                "int add(int a, int b) { return a + b; }\n}\n"),
            "tests/basic.cpp": (
                f"import {module};\n\nint main() {{\n    return {module}::add(2, 2) == 4 ? 0 : 1;\n}}\n"),
            ".gitignore": _GITIGNORE,
        }
    return {
        MANIFEST_NAME: _manifest(name),
        "src/main.cpp": '#include <cstdio>\n\nint main() {\n    std::puts("Hello, world!");\n    return 0;\n}\n',
        ".gitignore": _GITIGNORE,
    }


def new_package(cwd: str, name: str, lib: bool) -> str:
    base = os.path.basename(os.path.normpath(name))
    check_name(base)
    dest = os.path.abspath(os.path.join(cwd, name))
    if os.path.exists(dest):
        raise McppError(f"destination `{name}` already exists")
    parent = os.path.dirname(dest)
    if not os.path.isdir(parent):
        raise McppError(f"parent directory `{os.path.dirname(name)}` does not exist")
    # Write everything in a sibling temporary directory, then rename it into place in one step.
    staging = tempfile.mkdtemp(prefix=f".{base}.", dir=parent)
    try:
        for rel, text in _files(base, lib).items():
            path = os.path.join(staging, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        os.rename(staging, dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return dest


def init_package(directory: str, name: str | None, lib: bool) -> tuple[str, str]:
    """Make the existing `directory` a package; returns (its path, the package name).

    Sources already under `src/` are kept, and no scaffold source is added next to them."""
    dest = os.path.abspath(directory)
    if not os.path.isdir(dest):
        raise McppError(f"`{directory}` is not a directory (use `mcpp new` to create one)")
    if os.path.exists(os.path.join(dest, MANIFEST_NAME)):
        raise McppError(f"`mcpp init` cannot be run on existing mcpp packages (`{MANIFEST_NAME}` is there)")
    name = name or os.path.basename(dest)
    check_name(name)
    has_sources = os.path.isdir(os.path.join(dest, "src")) and any(
        f.endswith((".cpp", ".cc", ".cxx", ".c", ".cppm", ".ixx"))
        for _, _, files in os.walk(os.path.join(dest, "src")) for f in files)
    for rel, text in _files(name, lib).items():
        path = os.path.join(dest, rel)
        if rel == ".gitignore" and os.path.exists(path):
            with open(path) as f:
                existing = f.read()
            missing = [line for line in _GITIGNORE.splitlines() if line not in existing.splitlines()]
            if missing:
                with open(path, "a") as f:
                    f.write(("" if existing.endswith("\n") or not existing else "\n") + "\n".join(missing) + "\n")
            continue
        if os.path.exists(path) or (has_sources and rel != MANIFEST_NAME):
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    return dest, name


def init_vcs(path: str, vcs: str) -> bool:
    """`git init` in `path` unless `vcs` is "none" or `path` is already inside a work tree.

    Returns whether a repository was created. Without git on PATH nothing is created: a
    scaffold is still useful without one."""
    if vcs == "none" or shutil.which("git") is None:
        return False
    inside = subprocess.run(["git", "rev-parse", "--is-inside-work-tree"], cwd=path,
                            capture_output=True, text=True)
    if inside.returncode == 0 and inside.stdout.strip() == "true":
        return False
    done = subprocess.run(["git", "init", "-q"], cwd=path, capture_output=True, text=True)
    if done.returncode != 0:
        raise McppError(f"`git init` failed in `{path}`: {done.stderr.strip()} (pass `--vcs none` to skip it)")
    return True


def enclosing_workspace(path: str) -> str | None:
    """The manifest of the nearest workspace root above `path`, or None."""
    d = os.path.dirname(os.path.abspath(path))
    while True:
        candidate = os.path.join(d, MANIFEST_NAME)
        if os.path.isfile(candidate):
            try:
                with open(candidate, "rb") as f:
                    if isinstance(tomllib.load(f).get("workspace"), dict):
                        return candidate
            except (OSError, tomllib.TOMLDecodeError):
                return None  # a broken manifest: leave it to the next build to report
        up = os.path.dirname(d)
        if up == d:
            return None
        d = up


def add_workspace_member(manifest: str, member_dir: str) -> str | None:
    """Add `member_dir` to `[workspace] members` of `manifest`, editing the text in place so the
    user's comments and layout survive. Returns the member's path as written, or None when it was
    already listed. Raises when the edit cannot be made safely (the manifest is left unchanged)."""
    root = os.path.dirname(manifest)
    member = os.path.relpath(member_dir, root).replace(os.sep, "/")
    with open(manifest) as f:
        text = f.read()
    members = tomllib.loads(text)["workspace"].get("members", [])
    if isinstance(members, list) and any(os.path.normpath(m) == os.path.normpath(member)
                                         for m in members if isinstance(m, str)):
        return None
    edited = _insert_member(text, member)
    try:
        after = tomllib.loads(edited) if edited is not None else None
    except tomllib.TOMLDecodeError:
        after = None
    if after is None or after["workspace"].get("members") != [*members, member]:
        raise McppError(f"could not add `{member}` to `[workspace] members` in `{manifest}`; add it by hand")
    with open(manifest, "w") as f:
        f.write(edited)
    return member


def _insert_member(text: str, member: str) -> str | None:
    entry = '"' + member.replace("\\", "\\\\").replace('"', '\\"') + '"'
    header = re.search(r"^[ \t]*\[workspace\][ \t]*(#.*)?$", text, re.M)
    if header is None:
        return None
    nxt = re.search(r"^[ \t]*\[", text[header.end():], re.M)
    end = header.end() + (nxt.start() if nxt else len(text) - header.end())
    table = text[header.end():end]
    key = re.search(r"^([ \t]*members[ \t]*=[ \t]*\[)([^\]]*)\]", table, re.M)
    if key is None:
        return text[:header.end()] + f"\nmembers = [{entry}]" + text[header.end():]
    body = key.group(2)
    stripped = body.rstrip()
    if not stripped.strip():
        new_body = entry
    elif "\n" in body:
        sep = "" if stripped.endswith(",") else ","
        indent = re.search(r"\n([ \t]*)\S", body)
        new_body = f"{stripped}{sep}\n{indent.group(1) if indent else '    '}{entry},\n"
    else:
        sep = "" if stripped.endswith(",") else ","
        new_body = f"{stripped}{sep} {entry}"
    start = header.end() + key.start(2)
    return text[:start] + new_body + text[header.end() + key.end(2):]
