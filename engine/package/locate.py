"""Which manifest files a command reads: the one it starts from (searched upward from the working
directory, or `--manifest-path`), the workspace above it, each file parsed and validated once."""
from __future__ import annotations

import os
import re

from ..core.errors import ManifestError, McppError
from ..core.manifest_search import manifests_above
from ..manifest.context import BuildContext
from ..manifest.fold import fold
from ..manifest.load import MANIFEST_NAME, ManifestSource, parse_manifest
from ..manifest.model import Manifest


def find_manifest(cwd: str, manifest_path: str | None) -> str:
    if manifest_path:
        path = os.path.abspath(manifest_path)
        if os.path.isdir(path):
            path = os.path.join(path, MANIFEST_NAME)
        if not os.path.isfile(path):
            raise McppError(f"manifest path `{manifest_path}` does not exist")
        return path
    nearest = next(manifests_above(cwd), None)
    if nearest is None:
        raise McppError(f"could not find `{MANIFEST_NAME}` in `{os.path.abspath(cwd)}` or any parent directory",
                        notes=["help: run `mcpp new NAME` to create a package"])
    return nearest


class ManifestFiles:
    """Each manifest file parsed and validated once per command."""

    def __init__(self, strict: bool):
        self.strict = strict
        self.parsed: dict[str, ManifestSource] = {}

    def get(self, path: str) -> ManifestSource:
        if path not in self.parsed:
            self.parsed[path] = parse_manifest(path, self.strict)
        return self.parsed[path]


def enclosing_workspace(manifest: Manifest, files: ManifestFiles, ctx: BuildContext) -> Manifest | None:
    """The workspace manifest above `manifest` that lists it as a member, if any. A manifest above
    that does not parse stops the build only when it may be that workspace (it has a
    `[workspace]` and names this package's directory): an unrelated broken one (a project the
    package is vendored into) is passed over."""
    for candidate in manifests_above(os.path.dirname(manifest.root)):
        try:
            ws = files.get(candidate).base
        except ManifestError:
            if _may_list(candidate, manifest.root):
                raise
            continue
        if ws.workspace_members is not None:
            members = {os.path.normpath(os.path.join(ws.root, m)) for m in ws.workspace_members}
            return fold(files.get(candidate), ctx) if manifest.root in members else None
    return None


def _may_list(candidate: str, root: str) -> bool:
    """Whether the (unparsable) manifest `candidate` could be a workspace listing `root`: it
    opens a `[workspace]` table and names `root`'s path relative to it."""
    try:
        with open(candidate, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return True
    rel = os.path.relpath(root, os.path.dirname(candidate))
    return re.search(r"^\s*\[\s*workspace\s*\]", text, re.M) is not None and rel in text
