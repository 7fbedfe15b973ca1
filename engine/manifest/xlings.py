"""The tools-and-environment plane: `[xlings]` and the gate `[feature-xlings.<f>]`.

Payloads are tools and inputs provisioned by xlings, addressed `[<ns>:]<name>[@<version>]` with
the namespace defaulting to `xim`; (namespace, name) is its identity, the version a requirement.
An mcpp package is refused here: it has modules and an ABI and belongs in `[dependencies]`.

Two axes (docs/manifest.md, `[xlings]`): the top level is the host axis, and a value there may be a platform-key object
`{ linux = ..., macosx = ..., windows = ..., default = ... }`, resolved against the machine that
runs the build. `[target.<selector>.xlings...]` is the target axis; there the object would state
the condition twice and is refused, and `subos` is refused (one project, one
environment). This module validates these tables; engine/payloads/ resolves and installs them (docs/payloads.md).
"""
from __future__ import annotations

from typing import Any

from ..core.lazy_re import lazy_compile
from . import schema, shape
from .model import PayloadSpec, XlingsSpec
from .reader import Reader, header

_ADDRESS = lazy_compile(r"(?:(?P<ns>[A-Za-z0-9_-]+):)?(?P<name>[A-Za-z0-9_.+-]+?)(?:@(?P<version>\S+))?$")
_DEP_KEYS = {schema.normalized(k) for k in schema.DEPENDENCY.keys} | {"git"}


def parse_address(address: str) -> tuple[str, str, str] | None:
    """(namespace, name, version) of `[<ns>:]<name>[@<version>]`, or None when malformed."""
    m = _ADDRESS.match(address)
    if not m:
        return None
    return m["ns"] or schema.DEFAULT_PAYLOAD_NAMESPACE, m["name"], m["version"] or ""


def identity(address: str) -> tuple[str, str]:
    parsed = parse_address(address)
    return (parsed[0], parsed[1]) if parsed else (schema.DEFAULT_PAYLOAD_NAMESPACE, address)


class _Scope:
    """Where a payload table sits: the host axis, or the target axis under one selector."""

    def __init__(self, keypath: tuple, block_key: str | None, host_os: str, feature: str | None = None):
        self.keypath = keypath
        self.block_key = block_key  # the selector key, for the target axis
        self.host_os = host_os
        self.feature = feature

    @property
    def section_path(self) -> tuple:
        return self.keypath[2:] if self.block_key is not None else self.keypath


def read_xlings(r: Reader, table: Any, keypath: tuple, block_key: str | None, host_os: str) -> XlingsSpec:
    r.expect(table, dict, keypath)
    scope = _Scope(keypath, block_key, host_os)
    for key, value in table.items():
        if shape.is_condition_key(key, value):
            raise shape.refuse_trailing(r, keypath + (key,), scope.section_path)
    if block_key is not None and "subos" in table:
        raise r.fail(keypath + ("subos",), f"`subos` cannot be set under {header(keypath)}: a project has one "
                                           f"environment, not one per target; set it in the top-level [xlings]",
                     prefer="key")
    r.check_keys(table, keypath, schema.XLINGS.keys, schema.XLINGS.case)
    deps = []
    for i, item in enumerate(r.str_list(table, "deps", keypath) or ()):
        deps.append(_payload(r, keypath + ("deps", i), item, "", scope))
    workspace = read_payload_table(r, table["workspace"], keypath + ("workspace",), block_key, host_os) \
        if "workspace" in table else ()
    envs = ()
    if "envs" in table:
        env_table = r.expect(table["envs"], dict, keypath + ("envs",))
        envs = tuple((k, r.expect(v, str, keypath + ("envs", k))) for k, v in env_table.items())
    return XlingsSpec(tuple(deps), workspace, envs, r.opt(table, "subos", str, keypath))


def read_payload_table(r: Reader, table: Any, keypath: tuple, block_key: str | None, host_os: str,
                       feature: str | None = None) -> tuple[PayloadSpec, ...]:
    """`[xlings.workspace]` or `[feature-xlings.<f>]`: address -> version (or, on the host axis,
    a platform-key object). Entries that do not apply to this host are left out."""
    r.expect(table, dict, keypath)
    scope = _Scope(keypath, block_key, host_os, feature)
    out = []
    for address, value in table.items():
        kp = keypath + (address,)
        if shape.is_condition_key(address, value) and not _looks_like_package(value):
            raise shape.refuse_trailing(r, kp, scope.section_path)
        if isinstance(value, dict):
            if not value:
                raise r.fail(kp, f"`{address}` must be a version string (\"\" for any version)"
                                 + (" or a platform-key object" if block_key is None else "") + ", found an empty table")
            if _looks_like_package(value):
                raise _refuse_package(r, kp, address, scope, value)
            if any(k in schema.PLATFORM_KEYS or shape.selector_for(k) for k in value):
                if block_key is not None:
                    raise shape.refuse_two_place(r, kp, value, block_key, scope.section_path)
                version = _platform_value(r, kp, value, host_os)
                if version is None:
                    continue
            else:
                raise _refuse_package(r, kp, address, scope, value)
        else:
            version = r.expect(value, str, kp)
        out.append(_payload(r, kp, address, version, scope, key=True))
    return tuple(out)


def _looks_like_package(value: Any) -> bool:
    return isinstance(value, dict) and any(schema.normalized(k) in _DEP_KEYS for k in value)


def _refuse_package(r: Reader, kp: tuple, address: str, scope: _Scope, value: dict):
    shown = address if _looks_like_package(value) else f"{address}.{next(iter(value))}"
    what = "a dependency spec" if _looks_like_package(value) else "a namespace.name key"
    return r.fail(kp, f"`{shown}` is an mcpp package ({what}), not a payload: mcpp packages are "
                      f"declared in [dependencies] (or [feature-deps.<f>] behind a feature), never in "
                      f"{header(scope.section_path)}", prefer="key")


def _platform_value(r: Reader, kp: tuple, value: dict, host_os: str) -> str | None:
    """The host axis: pick this machine's platform key, else `default`, else nothing."""
    for key, v in value.items():
        if key not in schema.PLATFORM_KEYS:
            raise r.fail(kp + (key,), f"unknown platform key `{key}` in the value of `{kp[-1]}`; accepted: "
                                      f"{', '.join(schema.PLATFORM_KEYS)}", prefer="key")
        r.expect(v, str, kp + (key,))
    mine = schema.PLATFORM_KEY_OF_OS.get(host_os)
    return value.get(mine, value.get("default"))


def _payload(r: Reader, kp: tuple, address: str, version: str, scope: _Scope, key: bool = False) -> PayloadSpec:
    parsed = parse_address(address)
    if parsed is None:
        raise r.fail(kp, f"malformed payload address `{address}`; expected `[<namespace>:]<name>[@<version>]` "
                         f"(namespace defaults to `{schema.DEFAULT_PAYLOAD_NAMESPACE}`)",
                     prefer="key" if key else "value")
    ns, name, at_version = parsed
    if at_version and version:
        raise r.fail(kp, f"`{address}` names a version twice (`@{at_version}` and `{version}`); "
                         f"write the version once, as the value")
    src = r.source_path(kp)  # a folded entry keeps the axis of where it is written
    axis = "target" if src[:1] == ("target",) else "host"
    return PayloadSpec(address, ns, name, version or at_version, axis, scope.feature, src)
