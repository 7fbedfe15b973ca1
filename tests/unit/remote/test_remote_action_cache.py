"""RemoteActionCache: results after their blobs, and header manifests shared between machines."""
from __future__ import annotations

import os

from mcpp.cas.action import Action, Platform
from mcpp.cas.remote import protocol as pb
from mcpp.cas.remote.action_cache import RemoteActionCache
from mcpp.cas.remote.actions import MANIFEST_SETS, remote_action
from mcpp.cas.remote.digests import SHA256
from mcpp.cas.remote.side_index import SideIndex
from mcpp.cas.remote.store import RemoteStore

ACTION = Action(id="compile m", argv=("cc", "-c", "m.c"), outputs=("m.o",), inputs=("m.c",), depfile="m.d")


def first_level(tag: bytes):
    return remote_action(ACTION, Platform("tc", "host"), {}, {"m.c": SHA256.of_bytes(tag)}, SHA256)


def cache(client, local, root) -> RemoteActionCache:
    return RemoteActionCache(client, RemoteStore(client, local, SideIndex(root / "idx")))


def test_a_recorded_result_names_only_uploaded_blobs(client, local, tmp_path):
    ac = cache(client, local, tmp_path)
    ra = first_level(os.urandom(8))
    obj = local.put(b"object " + os.urandom(16))
    rd = ac.store.remote_digest(obj)
    result = pb.ActionResult(exit_code=0)
    result.output_files.add(path="m.o", digest=rd.to_proto())
    assert ac.get(ra) is None
    ac.record(ra, result, [obj])
    assert ac.get(ra) == result
    assert client.find_missing([rd, *ra.blobs]) == []  # the output, the Action and the Command


def test_manifests_accumulate_sets_and_are_read_by_another_machine(client, local, tmp_path):
    ci = cache(client, local, tmp_path)
    first = first_level(os.urandom(8))
    assert ci.get_manifest(first) == []
    assert ci.add_manifest(first, ("inc/b.h", "inc/a.h"))
    assert not ci.add_manifest(first, ("inc/a.h", "inc/b.h"))  # already the most recent set
    assert ci.add_manifest(first, ("inc/a.h",))
    laptop = cache(client, local, tmp_path / "laptop")
    assert laptop.get_manifest(first) == [("inc/a.h",), ("inc/a.h", "inc/b.h")]
    for i in range(MANIFEST_SETS + 3):
        ci.add_manifest(first, (f"inc/{i}.h",))
    assert len(cache(client, local, tmp_path / "x").get_manifest(first)) == MANIFEST_SETS
    assert cache(client, local, tmp_path / "y").get_manifest(first_level(b"another")) == []


def test_record_with_headers_uploads_the_manifest_in_the_same_batch(client, local, tmp_path):
    ac = cache(client, local, tmp_path)
    first = first_level(os.urandom(8))
    full = remote_action(ACTION, Platform("tc", "host"), {}, {"m.c": SHA256.of_bytes(b"x"),
                                                                "inc/h.h": SHA256.of_bytes(b"h")}, SHA256)
    updates = []
    inner = client._batch_update
    client._batch_update = lambda req, **kw: (updates.append(len(req.requests)), inner(req, **kw))[1]
    try:
        ac.record(full, pb.ActionResult(exit_code=0), [], headers=(first, ("inc/h.h",)))
    finally:
        client._batch_update = inner
    assert len(updates) == 1  # Action, Command, manifest blob and its Action and Command: one request
    assert cache(client, local, tmp_path / "other").get_manifest(first) == [("inc/h.h",)]
