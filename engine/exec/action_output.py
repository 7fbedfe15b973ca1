"""What an action printed, in the user's paths.

A tool run in a sandbox names files by the root it saw: `/execroot/app/src/a.toy` under bwrap, a
private directory under dir, the real root under off. None of those is a path the user can open
(or the same from one run to the next), and the output is stored with the action's result and
replayed on a cache hit, possibly in another checkout. So the output is stored with that root
written as `@@EXECROOT@@` (the placeholder the engine already writes in argv for it) and shown
with the placeholder turned into the path of the file in the user's tree, as every other path in
mcpp's messages is shown (relative under the working directory, absolute elsewhere).
"""
from __future__ import annotations

import os
import re

from mcpp.sandbox import EXECROOT_PLACEHOLDER

from ..core.errors import display_path
from ..core.lazy_re import lazy_compile
from ..report.diagnostics import relative_paths_shown

# A path after the placeholder runs until whitespace or a character that ends a path in a
# diagnostic (`file:line:`, quotes, brackets, a comma).
_PLACEHOLDER_PATH = lazy_compile(re.escape(EXECROOT_PLACEHOLDER) + r"(/[^\s:'\"`()\[\]{},;]*)?")


def portable(data: bytes, root_seen: str) -> bytes:
    """`data` with the root the action saw written as the placeholder."""
    root = root_seen.rstrip("/")
    if not root:
        return data
    # Only the whole root: `/work/proj` is not the root of `/work/proj2/x`.
    pattern = re.compile(re.escape(root.encode()) + rb"(?![\w.+-])")
    return pattern.sub(EXECROOT_PLACEHOLDER.encode(), data)


def shown(text: str, execroot: str) -> str:
    """`text` with each `@@EXECROOT@@/<path>`, and each path the tool named relative to the
    execroot (its working directory), as the user's path of that file."""
    if EXECROOT_PLACEHOLDER in text:
        def placeholder_path(m: re.Match) -> str:
            rest = (m.group(1) or "").strip("/")
            path = os.path.join(execroot, rest) if rest else execroot
            return display_path(os.path.normpath(path)) or "."

        text = _PLACEHOLDER_PATH.sub(placeholder_path, text)
    return relative_paths_shown(text, execroot)
