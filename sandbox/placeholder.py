"""The execroot placeholder: one argv that works in every sandbox mode.

A compile command has to name the directory it runs in (``-ffile-prefix-map=<dir>=.`` so that
objects do not embed it, include paths, ...), but that directory differs per mode and, in the
``dir`` mode, per action. The engine therefore writes ``@@EXECROOT@@`` wherever it means "the
action's root as the action sees it", and the sandbox substitutes it just before running:

- ``bwrap``: ``/execroot`` (the fixed mount point inside the namespace);
- ``dir``: the absolute path of the action's private directory;
- ``off``: the absolute path of ``spec.root``.

The substitution is plain text replacement in every argv element and every env value, so it
may appear inside an argument (``-ffile-prefix-map=@@EXECROOT@@=.``). Because the substituted
text never reaches the action key (the engine hashes the argv with the placeholder), the key
is the same whatever the mode and wherever the checkout lies.
"""
from __future__ import annotations

from typing import Iterable, Mapping

EXECROOT_PLACEHOLDER = "@@EXECROOT@@"


def expand_argv(argv: Iterable[str], root: str) -> list[str]:
    p = EXECROOT_PLACEHOLDER
    return [a.replace(p, root) if p in a else a for a in argv]


def expand_env(env: Mapping[str, str], root: str) -> dict[str, str]:
    p = EXECROOT_PLACEHOLDER
    return {k: (v.replace(p, root) if p in v else v) for k, v in env.items()}


def prefix_map_flags(action_dir: str = EXECROOT_PLACEHOLDER, *, gcc: bool = True) -> list[str]:
    """gcc/clang flags that keep ``action_dir`` out of outputs (debug info, ``__FILE__``).

    ``-ffile-prefix-map`` rewrites the directory to ``.`` in DWARF (``DW_AT_comp_dir``, file
    names) and in macro expansions; gcc leaves it out of the recorded command line
    (``-grecord-gcc-switches``), so it does not leak that way either.
    ``-fno-canonical-system-headers`` stops gcc from resolving header paths through symlinks,
    so depfiles name the paths the compiler was given. The caller inserts these flags right
    after the compiler (``argv[1:1]``); with the default argument they carry the placeholder
    and the sandbox fills in its own root, so the same argv serves bwrap, dir and off.
    ``gcc=False`` (clang) leaves out the gcc-only flag.
    """
    flags = [f"-ffile-prefix-map={action_dir}=."]
    if gcc:
        flags.append("-fno-canonical-system-headers")
    return flags
