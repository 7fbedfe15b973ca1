"""The hand-declared REAPI messages match the real protocol, field by field."""
from __future__ import annotations

import pytest
from descriptor_fields import fields

from mcpp.cas.remote import protocol as pb

MESSAGES = [
    "build.bazel.semver.SemVer", "google.rpc.Status",
    *(f"build.bazel.remote.execution.v2.{n}" for n in (
        "Digest", "Platform", "Platform.Property", "Command", "Command.EnvironmentVariable", "Action",
        "FileNode", "DirectoryNode", "SymlinkNode", "Directory", "OutputFile", "OutputDirectory",
        "OutputSymlink", "ActionResult", "GetActionResultRequest", "UpdateActionResultRequest",
        "FindMissingBlobsRequest", "FindMissingBlobsResponse", "BatchUpdateBlobsRequest",
        "BatchUpdateBlobsRequest.Request", "BatchUpdateBlobsResponse", "BatchUpdateBlobsResponse.Response",
        "BatchReadBlobsRequest", "BatchReadBlobsResponse", "BatchReadBlobsResponse.Response",
        "GetCapabilitiesRequest", "ActionCacheUpdateCapabilities", "CacheCapabilities", "ServerCapabilities")),
    *(f"google.bytestream.{n}" for n in ("ReadRequest", "ReadResponse", "WriteRequest", "WriteResponse")),
]


@pytest.fixture(scope="module")
def reference_pool():
    """The descriptors BuildGrid generated from the upstream .proto files (a test dependency)."""
    pytest.importorskip("buildgrid._protos.build.bazel.remote.execution.v2.remote_execution_pb2")
    from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2
    from buildgrid._protos.google.bytestream import bytestream_pb2  # noqa: F401 (registers the file)

    return remote_execution_pb2.DESCRIPTOR.pool


@pytest.mark.parametrize("name", MESSAGES)
def test_every_declared_field_has_the_upstream_name_number_and_type(name, reference_pool):
    ours = fields(pb.POOL.FindMessageTypeByName(name))
    theirs = fields(reference_pool.FindMessageTypeByName(name))
    for field, spec in ours.items():
        assert field in theirs, f"{name}.{field} does not exist upstream"
        assert spec == theirs[field], f"{name}.{field}: ours {spec}, upstream {theirs[field]}"


def test_enum_values_match_upstream(reference_pool):
    for enum in ("build.bazel.remote.execution.v2.DigestFunction.Value",
                 "build.bazel.remote.execution.v2.Compressor.Value"):
        ours = {v.name: v.number for v in pb.POOL.FindEnumTypeByName(enum).values}
        theirs = {v.name: v.number for v in reference_pool.FindEnumTypeByName(enum).values}
        assert ours.items() <= theirs.items()
    assert pb.DIGEST_FUNCTION["SHA256"] == 1 and pb.DIGEST_FUNCTION["BLAKE3"] == 9


def test_method_paths_name_upstream_services(reference_pool):
    for path in (pb.CAPABILITIES_GET, pb.CAS_FIND_MISSING, pb.CAS_BATCH_UPDATE, pb.CAS_BATCH_READ,
                 pb.AC_GET, pb.AC_UPDATE, pb.BYTESTREAM_READ, pb.BYTESTREAM_WRITE):
        service, method = path.strip("/").split("/")
        assert reference_pool.FindServiceByName(service).FindMethodByName(method) is not None


def test_a_message_round_trips_and_keeps_unknownfields():
    cmd = pb.Command(arguments=["g++", "-c"], output_paths=["a.o"], working_directory="sub")
    cmd.environment_variables.add(name="LC_ALL", value="C")
    data = cmd.SerializeToString()
    assert pb.Command.FromString(data) == cmd
    # A field this client does not declare (Command.output_node_properties = 8) survives a round trip.
    extra = data + bytes([8 << 3 | 2, 1]) + b"x"
    assert pb.Command.FromString(extra).SerializeToString() == extra
