"""A client reads the digests in a server's answers (ActionResult, Tree, Directory) only through
`RemoteDigest.from_wire`: what is not a digest of the agreed function never becomes a value
that names a blob (the build's handling of it, a miss with a warning, is in
tests/e2e/test_remote_worker_isolation.py)."""
from __future__ import annotations

import dataclasses

import pytest

from mcpp.cas.remote import protocol as pb
from mcpp.cas.remote.actions import MANIFEST_PATH, manifest_blob_of, result_outputs
from mcpp.cas.remote.digests import SHA256, BadDigest

from test_remote_actions import BASE

NOT_DIGESTS = [pb.Digest(hash="../../../etc/passwd", size_bytes=5), pb.Digest(hash="ab" * 16, size_bytes=5),
               pb.Digest(hash="a" * 64, size_bytes=-1)]


@pytest.mark.parametrize("bad", NOT_DIGESTS, ids=["path", "short", "negative"])
def test_a_result_naming_an_output_by_something_else_than_a_digest_is_refused(bad):
    action = dataclasses.replace(BASE, outputs=("out/a.o",))
    result = pb.ActionResult(exit_code=0)
    result.output_files.add(path="out/a.o", digest=bad)
    with pytest.raises(BadDigest):
        result_outputs(action, result, SHA256)
    tree = dataclasses.replace(BASE, outputs=("out/gen/",))
    result = pb.ActionResult(exit_code=0)
    result.output_directories.add(path="out/gen", tree_digest=bad)
    with pytest.raises(BadDigest):
        result_outputs(tree, result, SHA256)


@pytest.mark.parametrize("bad", NOT_DIGESTS, ids=["path", "short", "negative"])
def test_a_manifest_named_by_something_else_than_a_digest_is_no_manifest(bad):
    result = pb.ActionResult(exit_code=0)
    result.output_files.add(path=MANIFEST_PATH, digest=bad)
    assert manifest_blob_of(result, SHA256) is None
