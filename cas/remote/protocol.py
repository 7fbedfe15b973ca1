"""The subset of the Remote Execution API v2 this client speaks, as protobuf message classes.

Why not generated `_pb2` modules: the repository commits no generated code and copies no
third-party source. The few messages a cache client needs are declared here as
`FileDescriptorProto`s (names and field numbers exactly as in
`build/bazel/remote/execution/v2/remote_execution.proto`, `google/bytestream/bytestream.proto`,
`google/rpc/status.proto` and `build/bazel/semver/semver.proto`), loaded into a private
`DescriptorPool` and turned into classes by `message_factory`. The wire format depends only on
field numbers and types, so a message built here is byte-for-byte what generated code would
send; `tests/unit/remote/test_protocol.py` compares every field with BuildGrid's generated
descriptors so a typo cannot go unnoticed.

Only the fields this client reads or writes are declared. Fields a server sends that are not
declared here are kept as unknown fields by protobuf and ignored, which is exactly the proto3
contract for old clients talking to new servers.

A private pool (not `descriptor_pool.Default()`) keeps these declarations from clashing with a
generated copy of the same files that another library in the process may have registered.
"""
from __future__ import annotations

from typing import Any

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool

try:  # protobuf >= 4.22
    from google.protobuf.message_factory import GetMessageClass as _message_class
except ImportError:  # pragma: no cover - older protobuf
    from google.protobuf.message_factory import MessageFactory as _Factory

    _message_class = _Factory().GetPrototype

_F = descriptor_pb2.FieldDescriptorProto
_FieldProto = Any  # a `FieldDescriptorProto` (protobuf ships no types)
_SCALARS = {
    "string": _F.TYPE_STRING,
    "bytes": _F.TYPE_BYTES,
    "bool": _F.TYPE_BOOL,
    "int32": _F.TYPE_INT32,
    "int64": _F.TYPE_INT64,
}

REAPI_PACKAGE = "build.bazel.remote.execution.v2"
_RE = "." + REAPI_PACKAGE + "."


def _field(name: str, number: int, kind: str, repeated: bool = False) -> _FieldProto:
    """`kind`: a scalar name, `.pkg.Message` for a message, or `enum:.pkg.Enum` for an enum."""
    f = _F(name=name, number=number, json_name=_json_name(name))
    f.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
    if kind in _SCALARS:
        f.type = _SCALARS[kind]
    elif kind.startswith("enum:"):
        f.type, f.type_name = _F.TYPE_ENUM, kind[5:]
    else:
        f.type, f.type_name = _F.TYPE_MESSAGE, kind
    return f


def _json_name(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _message(name: str, fields: list[_FieldProto], nested: tuple[Any, ...] = (), enums: tuple[Any, ...] = ()) -> descriptor_pb2.DescriptorProto:
    m = descriptor_pb2.DescriptorProto(name=name)
    m.field.extend(fields)
    m.nested_type.extend(nested)
    m.enum_type.extend(enums)
    return m


def _enum(name: str, values: list[tuple[str, int]]) -> descriptor_pb2.EnumDescriptorProto:
    e = descriptor_pb2.EnumDescriptorProto(name=name)
    for n, v in values:
        e.value.add(name=n, number=v)
    return e


def _file(name: str, package: str, messages: list[Any], deps: tuple[str, ...] = (),
          services: tuple[Any, ...] = ()) -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name=name, package=package, syntax="proto3")
    fd.dependency.extend(deps)
    fd.message_type.extend(messages)
    fd.service.extend(services)
    return fd


def _service(name: str, methods: list[tuple[str, str, str, bool, bool]]) -> descriptor_pb2.ServiceDescriptorProto:
    s = descriptor_pb2.ServiceDescriptorProto(name=name)
    for method, req, resp, client_streaming, server_streaming in methods:
        s.method.add(name=method, input_type=req, output_type=resp,
                     client_streaming=client_streaming, server_streaming=server_streaming)
    return s


def _semver_file() -> descriptor_pb2.FileDescriptorProto:
    return _file("build/bazel/semver/semver.proto", "build.bazel.semver", [
        _message("SemVer", [_field("major", 1, "int32"), _field("minor", 2, "int32"),
                            _field("patch", 3, "int32"), _field("prerelease", 4, "string")]),
    ])


def _status_file() -> descriptor_pb2.FileDescriptorProto:
    return _file("google/rpc/status.proto", "google.rpc", [
        _message("Status", [_field("code", 1, "int32"), _field("message", 2, "string"),
                            _field("details", 3, ".google.protobuf.Any", repeated=True)]),
    ], deps=("google/protobuf/any.proto",))


def _reapi_file() -> descriptor_pb2.FileDescriptorProto:
    digest = _RE + "Digest"
    digest_function = "enum:" + _RE + "DigestFunction.Value"
    compressor = "enum:" + _RE + "Compressor.Value"
    status = ".google.rpc.Status"
    messages = [
        _message("Digest", [_field("hash", 1, "string"), _field("size_bytes", 2, "int64")]),
        _message("DigestFunction", [], enums=(_enum("Value", [
            ("UNKNOWN", 0), ("SHA256", 1), ("SHA1", 2), ("MD5", 3), ("VSO", 4), ("SHA384", 5),
            ("SHA512", 6), ("MURMUR3", 7), ("SHA256TREE", 8), ("BLAKE3", 9)]),)),
        _message("Compressor", [], enums=(_enum("Value", [
            ("IDENTITY", 0), ("ZSTD", 1), ("DEFLATE", 2), ("BROTLI", 3)]),)),
        _message("Platform", [_field("properties", 1, _RE + "Platform.Property", repeated=True)], nested=(
            _message("Property", [_field("name", 1, "string"), _field("value", 2, "string")]),)),
        _message("Command", [
            _field("arguments", 1, "string", repeated=True),
            _field("environment_variables", 2, _RE + "Command.EnvironmentVariable", repeated=True),
            _field("output_files", 3, "string", repeated=True),
            _field("output_directories", 4, "string", repeated=True),
            _field("platform", 5, _RE + "Platform"),
            _field("working_directory", 6, "string"),
            _field("output_paths", 7, "string", repeated=True),
        ], nested=(_message("EnvironmentVariable", [_field("name", 1, "string"), _field("value", 2, "string")]),)),
        _message("Action", [
            _field("command_digest", 1, digest),
            _field("input_root_digest", 2, digest),
            _field("do_not_cache", 7, "bool"),
            _field("salt", 9, "bytes"),
            _field("platform", 10, _RE + "Platform"),
        ]),
        _message("FileNode", [_field("name", 1, "string"), _field("digest", 2, digest),
                              _field("is_executable", 4, "bool")]),
        _message("DirectoryNode", [_field("name", 1, "string"), _field("digest", 2, digest)]),
        _message("SymlinkNode", [_field("name", 1, "string"), _field("target", 2, "string")]),
        _message("Directory", [
            _field("files", 1, _RE + "FileNode", repeated=True),
            _field("directories", 2, _RE + "DirectoryNode", repeated=True),
            _field("symlinks", 3, _RE + "SymlinkNode", repeated=True),
        ]),
        _message("Tree", [_field("root", 1, _RE + "Directory"),
                          _field("children", 2, _RE + "Directory", repeated=True)]),
        _message("OutputFile", [_field("path", 1, "string"), _field("digest", 2, digest),
                                _field("is_executable", 4, "bool"), _field("contents", 5, "bytes")]),
        _message("OutputDirectory", [_field("path", 1, "string"), _field("tree_digest", 3, digest)]),
        _message("OutputSymlink", [_field("path", 1, "string"), _field("target", 2, "string")]),
        # Only the fields mcpp writes; a server's others (timestamps, worker) pass through as
        # unknown fields. `auxiliary_metadata` carries result signatures (signing.py).
        _message("ExecutedActionMetadata", [
            _field("worker", 1, "string"),
            _field("auxiliary_metadata", 11, ".google.protobuf.Any", repeated=True),
        ]),
        _message("ActionResult", [
            _field("output_files", 2, _RE + "OutputFile", repeated=True),
            _field("output_directories", 3, _RE + "OutputDirectory", repeated=True),
            _field("exit_code", 4, "int32"),
            _field("stdout_raw", 5, "bytes"),
            _field("stdout_digest", 6, digest),
            _field("stderr_raw", 7, "bytes"),
            _field("stderr_digest", 8, digest),
            _field("output_file_symlinks", 10, _RE + "OutputSymlink", repeated=True),
            _field("output_directory_symlinks", 11, _RE + "OutputSymlink", repeated=True),
            _field("output_symlinks", 12, _RE + "OutputSymlink", repeated=True),
            _field("execution_metadata", 9, _RE + "ExecutedActionMetadata"),
        ]),
        _message("GetActionResultRequest", [
            _field("instance_name", 1, "string"), _field("action_digest", 2, digest),
            _field("inline_stdout", 3, "bool"), _field("inline_stderr", 4, "bool"),
            _field("inline_output_files", 5, "string", repeated=True),
            _field("digest_function", 6, digest_function),
        ]),
        _message("UpdateActionResultRequest", [
            _field("instance_name", 1, "string"), _field("action_digest", 2, digest),
            _field("action_result", 3, _RE + "ActionResult"),
            _field("digest_function", 5, digest_function),
        ]),
        _message("FindMissingBlobsRequest", [
            _field("instance_name", 1, "string"), _field("blob_digests", 2, digest, repeated=True),
            _field("digest_function", 3, digest_function),
        ]),
        _message("FindMissingBlobsResponse", [_field("missing_blob_digests", 2, digest, repeated=True)]),
        _message("BatchUpdateBlobsRequest", [
            _field("instance_name", 1, "string"),
            _field("requests", 2, _RE + "BatchUpdateBlobsRequest.Request", repeated=True),
            _field("digest_function", 5, digest_function),
        ], nested=(_message("Request", [_field("digest", 1, digest), _field("data", 2, "bytes"),
                                        _field("compressor", 3, compressor)]),)),
        _message("BatchUpdateBlobsResponse", [
            _field("responses", 1, _RE + "BatchUpdateBlobsResponse.Response", repeated=True),
        ], nested=(_message("Response", [_field("digest", 1, digest), _field("status", 2, status)]),)),
        _message("BatchReadBlobsRequest", [
            _field("instance_name", 1, "string"), _field("digests", 2, digest, repeated=True),
            _field("acceptable_compressors", 3, compressor, repeated=True),
            _field("digest_function", 4, digest_function),
        ]),
        _message("BatchReadBlobsResponse", [
            _field("responses", 1, _RE + "BatchReadBlobsResponse.Response", repeated=True),
        ], nested=(_message("Response", [_field("digest", 1, digest), _field("data", 2, "bytes"),
                                         _field("status", 3, status), _field("compressor", 4, compressor)]),)),
        _message("GetCapabilitiesRequest", [_field("instance_name", 1, "string")]),
        _message("ActionCacheUpdateCapabilities", [_field("update_enabled", 1, "bool")]),
        _message("CacheCapabilities", [
            _field("digest_functions", 1, digest_function, repeated=True),
            _field("action_cache_update_capabilities", 2, _RE + "ActionCacheUpdateCapabilities"),
            _field("max_batch_total_size_bytes", 4, "int64"),
            _field("supported_compressors", 6, compressor, repeated=True),
        ]),
        _message("ServerCapabilities", [
            _field("cache_capabilities", 1, _RE + "CacheCapabilities"),
            _field("low_api_version", 4, ".build.bazel.semver.SemVer"),
            _field("high_api_version", 5, ".build.bazel.semver.SemVer"),
        ]),
    ]
    services = (
        _service("ActionCache", [
            ("GetActionResult", _RE + "GetActionResultRequest", _RE + "ActionResult", False, False),
            ("UpdateActionResult", _RE + "UpdateActionResultRequest", _RE + "ActionResult", False, False),
        ]),
        _service("ContentAddressableStorage", [
            ("FindMissingBlobs", _RE + "FindMissingBlobsRequest", _RE + "FindMissingBlobsResponse", False, False),
            ("BatchUpdateBlobs", _RE + "BatchUpdateBlobsRequest", _RE + "BatchUpdateBlobsResponse", False, False),
            ("BatchReadBlobs", _RE + "BatchReadBlobsRequest", _RE + "BatchReadBlobsResponse", False, False),
        ]),
        _service("Capabilities", [
            ("GetCapabilities", _RE + "GetCapabilitiesRequest", _RE + "ServerCapabilities", False, False),
        ]),
    )
    return _file("build/bazel/remote/execution/v2/remote_execution.proto", REAPI_PACKAGE, messages,
                 deps=("build/bazel/semver/semver.proto", "google/rpc/status.proto", "google/protobuf/any.proto"), services=services)


def _bytestream_file() -> descriptor_pb2.FileDescriptorProto:
    bs = ".google.bytestream."
    return _file("google/bytestream/bytestream.proto", "google.bytestream", [
        _message("ReadRequest", [_field("resource_name", 1, "string"), _field("read_offset", 2, "int64"),
                                 _field("read_limit", 3, "int64")]),
        _message("ReadResponse", [_field("data", 10, "bytes")]),
        _message("WriteRequest", [_field("resource_name", 1, "string"), _field("write_offset", 2, "int64"),
                                  _field("finish_write", 3, "bool"), _field("data", 10, "bytes")]),
        _message("WriteResponse", [_field("committed_size", 1, "int64")]),
    ], services=(_service("ByteStream", [
        ("Read", bs + "ReadRequest", bs + "ReadResponse", False, True),
        ("Write", bs + "WriteRequest", bs + "WriteResponse", True, False),
    ]),))


def _build_pool() -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    any_file = descriptor_pb2.FileDescriptorProto()
    any_pb2.DESCRIPTOR.CopyToProto(any_file)
    for fd in (any_file, _semver_file(), _status_file(), _reapi_file(), _bytestream_file()):
        pool.Add(fd)
    return pool


POOL = _build_pool()


def _cls(full_name: str) -> Any:  # a message class, built at run time: its fields are unknown statically
    return _message_class(POOL.FindMessageTypeByName(full_name))


# --- the message classes -------------------------------------------------------------------

SemVer = _cls("build.bazel.semver.SemVer")
Status = _cls("google.rpc.Status")

Digest = _cls(REAPI_PACKAGE + ".Digest")
Platform = _cls(REAPI_PACKAGE + ".Platform")
Command = _cls(REAPI_PACKAGE + ".Command")
Action = _cls(REAPI_PACKAGE + ".Action")
FileNode = _cls(REAPI_PACKAGE + ".FileNode")
DirectoryNode = _cls(REAPI_PACKAGE + ".DirectoryNode")
Directory = _cls(REAPI_PACKAGE + ".Directory")
OutputFile = _cls(REAPI_PACKAGE + ".OutputFile")
SymlinkNode = _cls(REAPI_PACKAGE + ".SymlinkNode")
Tree = _cls(REAPI_PACKAGE + ".Tree")
OutputDirectory = _cls(REAPI_PACKAGE + ".OutputDirectory")
ActionResult = _cls(REAPI_PACKAGE + ".ActionResult")
ExecutedActionMetadata = _cls(REAPI_PACKAGE + ".ExecutedActionMetadata")
GetActionResultRequest = _cls(REAPI_PACKAGE + ".GetActionResultRequest")
UpdateActionResultRequest = _cls(REAPI_PACKAGE + ".UpdateActionResultRequest")
FindMissingBlobsRequest = _cls(REAPI_PACKAGE + ".FindMissingBlobsRequest")
FindMissingBlobsResponse = _cls(REAPI_PACKAGE + ".FindMissingBlobsResponse")
BatchUpdateBlobsRequest = _cls(REAPI_PACKAGE + ".BatchUpdateBlobsRequest")
BatchUpdateBlobsResponse = _cls(REAPI_PACKAGE + ".BatchUpdateBlobsResponse")
BatchReadBlobsRequest = _cls(REAPI_PACKAGE + ".BatchReadBlobsRequest")
BatchReadBlobsResponse = _cls(REAPI_PACKAGE + ".BatchReadBlobsResponse")
GetCapabilitiesRequest = _cls(REAPI_PACKAGE + ".GetCapabilitiesRequest")
ServerCapabilities = _cls(REAPI_PACKAGE + ".ServerCapabilities")

ReadRequest = _cls("google.bytestream.ReadRequest")
ReadResponse = _cls("google.bytestream.ReadResponse")
WriteRequest = _cls("google.bytestream.WriteRequest")
WriteResponse = _cls("google.bytestream.WriteResponse")

# Enum values (`DigestFunction.Value`, `Compressor.Value`) by name.
DIGEST_FUNCTION: dict[str, int] = {v.name: v.number for v in POOL.FindEnumTypeByName(REAPI_PACKAGE + ".DigestFunction.Value").values}
COMPRESSOR: dict[str, int] = {v.name: v.number for v in POOL.FindEnumTypeByName(REAPI_PACKAGE + ".Compressor.Value").values}

# --- method paths (gRPC: "/<package>.<Service>/<Method>") ------------------------------------

CAPABILITIES_GET = f"/{REAPI_PACKAGE}.Capabilities/GetCapabilities"
CAS_FIND_MISSING = f"/{REAPI_PACKAGE}.ContentAddressableStorage/FindMissingBlobs"
CAS_BATCH_UPDATE = f"/{REAPI_PACKAGE}.ContentAddressableStorage/BatchUpdateBlobs"
CAS_BATCH_READ = f"/{REAPI_PACKAGE}.ContentAddressableStorage/BatchReadBlobs"
AC_GET = f"/{REAPI_PACKAGE}.ActionCache/GetActionResult"
AC_UPDATE = f"/{REAPI_PACKAGE}.ActionCache/UpdateActionResult"
BYTESTREAM_READ = "/google.bytestream.ByteStream/Read"
BYTESTREAM_WRITE = "/google.bytestream.ByteStream/Write"
