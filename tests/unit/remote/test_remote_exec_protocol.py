"""The hand-declared Execution, Operations and Bots messages match BuildGrid's generated ones."""
from __future__ import annotations

import pytest
from descriptor_fields import fields

from mcpp.cas.remote import exec_protocol as xp
from mcpp.cas.remote import protocol as pb

MESSAGES = [
    *(f"build.bazel.remote.execution.v2.{n}" for n in (
        "ExecuteRequest", "ExecuteResponse", "ExecuteOperationMetadata", "ExecutionPolicy",
        "ResultsCachePolicy", "WaitExecutionRequest")),
    "google.longrunning.Operation",
    *(f"google.devtools.remoteworkers.v1test2.{n}" for n in (
        "BotSession", "Lease", "Worker", "Worker.Property", "Worker.Config", "Device", "Device.Property",
        "CreateBotSessionRequest", "UpdateBotSessionRequest")),
]


@pytest.fixture(scope="module")
def reference_pool():
    pytest.importorskip("buildgrid._protos.google.devtools.remoteworkers.v1test2.bots_pb2")
    from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2  # noqa: F401
    from buildgrid._protos.google.devtools.remoteworkers.v1test2 import bots_pb2
    from buildgrid._protos.google.longrunning import operations_pb2  # noqa: F401

    return bots_pb2.DESCRIPTOR.pool


@pytest.mark.parametrize("name", MESSAGES)
def test_every_declared_field_has_the_upstream_name_number_and_type(name, reference_pool):
    ours = fields(pb.POOL.FindMessageTypeByName(name))
    theirs = fields(reference_pool.FindMessageTypeByName(name))
    assert ours
    for field, spec in ours.items():
        assert field in theirs, f"{name}.{field} does not exist upstream"
        assert spec == theirs[field], f"{name}.{field}: ours {spec}, upstream {theirs[field]}"


def test_enum_values_match_upstream(reference_pool):
    for enum in ("google.devtools.remoteworkers.v1test2.LeaseState",
                 "google.devtools.remoteworkers.v1test2.BotStatus",
                 "build.bazel.remote.execution.v2.ExecutionStage.Value"):
        ours = {v.name: v.number for v in pb.POOL.FindEnumTypeByName(enum).values}
        theirs = {v.name: v.number for v in reference_pool.FindEnumTypeByName(enum).values}
        assert ours.items() <= theirs.items()
    assert (xp.LEASE_ACTIVE, xp.LEASE_COMPLETED, xp.STAGE_QUEUED, xp.STAGE_EXECUTING) == (2, 4, 2, 3)


def test_method_paths_name_upstream_services(reference_pool):
    for path in (xp.EXECUTE, xp.WAIT_EXECUTION, xp.CREATE_BOT_SESSION, xp.UPDATE_BOT_SESSION):
        service, method = path.strip("/").split("/")
        assert reference_pool.FindServiceByName(service).FindMethodByName(method) is not None


def test_a_lease_result_packs_an_action_result_buildgrid_can_unpack(reference_pool):
    from buildgrid._protos.build.bazel.remote.execution.v2 import remote_execution_pb2
    from buildgrid._protos.google.devtools.remoteworkers.v1test2 import bots_pb2

    session = xp.BotSession(name="s", bot_id="w/0", status=xp.BOT_OK)
    lease = session.leases.add(id="job", state=xp.LEASE_COMPLETED)
    lease.result.Pack(pb.ActionResult(exit_code=3, stderr_raw=b"boom"))
    theirs = bots_pb2.BotSession.FromString(session.SerializeToString())
    result = remote_execution_pb2.ActionResult()
    assert theirs.leases[0].result.Unpack(result) and result.exit_code == 3 and result.stderr_raw == b"boom"
