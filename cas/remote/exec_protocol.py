"""The Execution, long-running Operations and Remote Workers (Bots) messages, declared like `protocol`.

Remote execution needs three more families of messages than a cache does:

- REAPI `Execute` (`ExecuteRequest` -> a stream of `google.longrunning.Operation` whose
  `metadata` is an `ExecuteOperationMetadata` and whose final `response` is an `ExecuteResponse`);
- the Remote Workers API (`google.devtools.remoteworkers.v1test2`), which BuildGrid's workers
  speak: a worker opens a `BotSession` describing its `Worker` (devices with properties, configs
  such as `capacity`), then calls `UpdateBotSession` in a loop; the server hands out `Lease`s
  whose `payload` is the REAPI `Action`, and the worker answers with the lease `COMPLETED` and
  its `result` (an `ActionResult` packed in an `Any`).

They are added to the same private descriptor pool as `protocol`'s messages (they name its
`Digest`, `ActionResult` and `Status`), in a file of their own so that the cache client's
declarations stay as they are. Names and field numbers are those of `remote_execution.proto`,
`google/longrunning/operations.proto`, `google/devtools/remoteworkers/v1test2/{bots,worker}.proto`;
`tests/unit/remote/test_exec_protocol.py` compares them with BuildGrid's generated descriptors.
Timestamps (`expire_time`, ...) are not declared: protobuf keeps them as unknown fields, so a
`BotSession` the server sent goes back to it unchanged.
"""
from __future__ import annotations

from typing import Any

from .protocol import POOL, REAPI_PACKAGE, _cls, _enum, _field, _file, _message, _service

FileProto = Any  # a `FileDescriptorProto` (protobuf ships no types)

_RE = "." + REAPI_PACKAGE + "."
BOTS_PACKAGE = "google.devtools.remoteworkers.v1test2"
_B = "." + BOTS_PACKAGE + "."


def _exec_file() -> FileProto:
    digest = _RE + "Digest"
    return _file("mcpp/remote_execution_exec.proto", REAPI_PACKAGE, [
        _message("ExecutionPolicy", [_field("priority", 1, "int32")]),
        _message("ResultsCachePolicy", [_field("priority", 1, "int32")]),
        _message("ExecuteRequest", [
            _field("instance_name", 1, "string"),
            _field("skip_cache_lookup", 3, "bool"),
            _field("action_digest", 6, digest),
            _field("execution_policy", 7, _RE + "ExecutionPolicy"),
            _field("results_cache_policy", 8, _RE + "ResultsCachePolicy"),
            _field("digest_function", 9, "enum:" + _RE + "DigestFunction.Value"),
        ]),
        _message("ExecuteResponse", [
            _field("result", 1, _RE + "ActionResult"),
            _field("cached_result", 2, "bool"),
            _field("status", 3, ".google.rpc.Status"),
            _field("message", 5, "string"),
        ]),
        _message("ExecutionStage", [], enums=(_enum("Value", [
            ("UNKNOWN", 0), ("CACHE_CHECK", 1), ("QUEUED", 2), ("EXECUTING", 3), ("COMPLETED", 4)]),)),
        _message("ExecuteOperationMetadata", [
            _field("stage", 1, "enum:" + _RE + "ExecutionStage.Value"),
            _field("action_digest", 2, digest),
        ]),
        _message("WaitExecutionRequest", [_field("name", 1, "string")]),
    ], deps=("build/bazel/remote/execution/v2/remote_execution.proto", "google/rpc/status.proto"))


def _operations_file() -> FileProto:
    return _file("google/longrunning/operations.proto", "google.longrunning", [
        _message("Operation", [
            _field("name", 1, "string"),
            _field("metadata", 2, ".google.protobuf.Any"),
            _field("done", 3, "bool"),
            _field("error", 4, ".google.rpc.Status"),
            _field("response", 5, ".google.protobuf.Any"),
        ]),
    ], deps=("google/protobuf/any.proto", "google/rpc/status.proto"))


def _bots_file() -> FileProto:
    prop = [_field("key", 1, "string"), _field("value", 2, "string")]
    fd = _file("google/devtools/remoteworkers/v1test2/bots.proto", BOTS_PACKAGE, [
        _message("Device", [_field("handle", 1, "string"),
                            _field("properties", 2, _B + "Device.Property", repeated=True)],
                 nested=(_message("Property", prop),)),
        _message("Worker", [
            _field("devices", 1, _B + "Device", repeated=True),
            _field("properties", 2, _B + "Worker.Property", repeated=True),
            _field("configs", 3, _B + "Worker.Config", repeated=True),
        ], nested=(_message("Property", prop), _message("Config", prop))),
        _message("Lease", [
            _field("id", 7, "string"),
            _field("payload", 8, ".google.protobuf.Any"),
            _field("result", 9, ".google.protobuf.Any"),
            _field("state", 2, "enum:" + _B + "LeaseState"),
            _field("status", 3, ".google.rpc.Status"),
        ]),
        _message("BotSession", [
            _field("name", 1, "string"),
            _field("bot_id", 2, "string"),
            _field("status", 3, "enum:" + _B + "BotStatus"),
            _field("worker", 4, _B + "Worker"),
            _field("leases", 5, _B + "Lease", repeated=True),
            _field("version", 7, "string"),
        ]),
        _message("CreateBotSessionRequest", [_field("parent", 1, "string"),
                                             _field("bot_session", 2, _B + "BotSession")]),
        _message("UpdateBotSessionRequest", [_field("name", 1, "string"),
                                             _field("bot_session", 2, _B + "BotSession")]),
    ], deps=("google/protobuf/any.proto", "google/rpc/status.proto"), services=(
        _service("Bots", [
            ("CreateBotSession", _B + "CreateBotSessionRequest", _B + "BotSession", False, False),
            ("UpdateBotSession", _B + "UpdateBotSessionRequest", _B + "BotSession", False, False),
        ]),
    ))
    fd.enum_type.extend((
        _enum("BotStatus", [("BOT_STATUS_UNSPECIFIED", 0), ("OK", 1), ("UNHEALTHY", 2),
                            ("HOST_REBOOTING", 3), ("BOT_TERMINATING", 4)]),
        _enum("LeaseState", [("LEASE_STATE_UNSPECIFIED", 0), ("PENDING", 1), ("ACTIVE", 2),
                             ("COMPLETED", 4), ("CANCELLED", 5)]),
    ))
    return fd


for _fd in (_exec_file(), _operations_file(), _bots_file()):
    POOL.Add(_fd)

ExecuteRequest = _cls(REAPI_PACKAGE + ".ExecuteRequest")
ExecuteResponse = _cls(REAPI_PACKAGE + ".ExecuteResponse")
ExecuteOperationMetadata = _cls(REAPI_PACKAGE + ".ExecuteOperationMetadata")
WaitExecutionRequest = _cls(REAPI_PACKAGE + ".WaitExecutionRequest")
Operation = _cls("google.longrunning.Operation")
Device = _cls(BOTS_PACKAGE + ".Device")
Worker = _cls(BOTS_PACKAGE + ".Worker")
Lease = _cls(BOTS_PACKAGE + ".Lease")
BotSession = _cls(BOTS_PACKAGE + ".BotSession")
CreateBotSessionRequest = _cls(BOTS_PACKAGE + ".CreateBotSessionRequest")
UpdateBotSessionRequest = _cls(BOTS_PACKAGE + ".UpdateBotSessionRequest")

BOT_OK, BOT_TERMINATING = 1, 4
LEASE_PENDING, LEASE_ACTIVE, LEASE_COMPLETED, LEASE_CANCELLED = 1, 2, 4, 5
STAGE_QUEUED, STAGE_EXECUTING, STAGE_COMPLETED = 2, 3, 4

EXECUTE = f"/{REAPI_PACKAGE}.Execution/Execute"
WAIT_EXECUTION = f"/{REAPI_PACKAGE}.Execution/WaitExecution"
CREATE_BOT_SESSION = f"/{BOTS_PACKAGE}.Bots/CreateBotSession"
UPDATE_BOT_SESSION = f"/{BOTS_PACKAGE}.Bots/UpdateBotSession"
