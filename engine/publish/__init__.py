"""Packaging and publishing a library: `mcpp package` and `mcpp publish` (docs/dependencies.md).

files.py decides which files a package holds, manifest_text.py writes the manifest it is published
with, tarball.py writes the deterministic `.tar.zst`, package.py makes and verifies it, and
index_writer.py adds it as a release to a directory index (the payload index's format).
"""
