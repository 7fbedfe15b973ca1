"""RemoteCache, the engine's entry point: lookups, uploads, manifests and failure policy."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from mcpp.cas.action import Action, Platform
from mcpp.cas.action_cache import ActionEntry
from mcpp.cas.digest import digest_bytes
from mcpp.cas.home import Home
from mcpp.cas.local_store import LocalZstdStore
from mcpp.cas.remote.cache import RemoteCache
from mcpp.cas.remote.client import RemoteClient
from mcpp.cas.remote.config import RemoteSettings
from mcpp.cas.remote.digests import SHA256
from mcpp.cas.remote.endpoint import RemoteEndpoint
from mcpp.cas.verifying_store import VerifyingStore

PLATFORM = Platform("gcc 12.2.0 x86_64-linux-gnu cxx=aa cc=bb", "x86_64-linux-gnu")
TOOLS = {"/usr/bin/g++": digest_bytes(b"g++")}


class Machine:
    """One machine: a checkout (execroot) and an mcpp home, talking to one server."""

    def __init__(self, root: Path, url: str, upload: bool = False, timeout: float = 10.0):
        self.root = root
        self.home = Home(root / "home")
        self.local = VerifyingStore(LocalZstdStore(self.home.cas))
        self.warnings: list[str] = []
        settings = RemoteSettings(url=url, target=url, upload=upload, timeout=timeout)
        self.cache = RemoteCache(RemoteEndpoint(settings, self.warnings.append), self.home, self.local, self.read,
                                 self.warnings.append)

    def write(self, rel: str, data: bytes):
        path = self.root / "src" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return digest_bytes(data)

    def read(self, rel: str) -> bytes:
        return (self.root / "src" / rel).read_bytes()


def compile_action(name: str) -> Action:
    return Action(id=f"compile {name}", argv=("/usr/bin/g++", "-c", f"{name}.cpp", "-o", f"out/{name}.o",
                                              "-MD", "-MF", f"out/{name}.d"),
                  outputs=(f"out/{name}.d", f"out/{name}.o"), inputs=(f"{name}.cpp",),
                  tools=("/usr/bin/g++",), env=(("LC_ALL", "C"),), depfile=f"out/{name}.d")


def run_locally(m: Machine, action: Action, stdout: bytes = b"") -> ActionEntry:
    outputs = {o: (m.local.put(f"bytes of {o}".encode() + os.urandom(4)), 0o444) for o in action.outputs}
    return ActionEntry(outputs=outputs, stdout=m.local.put(stdout) if stdout else None)


def test_a_result_uploaded_by_one_machine_is_a_hit_on_another(buildgrid, tmp_path):
    ci = Machine(tmp_path / "ci", buildgrid.url, upload=True)
    laptop = Machine(tmp_path / "laptop", buildgrid.url)
    a = compile_action("hit")
    for m in (ci, laptop):
        m.write("hit.cpp", b"int f() { return 1; }\n")
        m.write("inc/h.h", b"#define H 1\n")
    inputs = {"hit.cpp": digest_bytes(b"int f() { return 1; }\n")}
    assert ci.cache.lookup(a, PLATFORM, TOOLS, inputs) is None
    entry = run_locally(ci, a, stdout=b"hit.cpp:1: warning: something\n")
    headers = {"inc/h.h": digest_bytes(b"#define H 1\n")}
    ci.cache.upload(a, PLATFORM, TOOLS, {**inputs, **headers}, ("inc/h.h",), entry)
    ci.cache.close()
    assert ci.cache.counters.uploaded == 1 and ci.warnings == []

    hit = laptop.cache.lookup(a, PLATFORM, TOOLS, inputs)
    assert hit is not None and hit.discovered == ("inc/h.h",)
    assert hit.entry.outputs == entry.outputs  # the same bytes, hence the same local digests
    assert laptop.local.get(hit.entry.stdout) == b"hit.cpp:1: warning: something\n"
    assert all(laptop.local.has(d) for d in hit.entry.blobs())
    laptop.cache.close()

    # The laptop's header differs: that header set cannot match, so it is a miss, not a wrong hit.
    laptop2 = Machine(tmp_path / "laptop2", buildgrid.url)
    laptop2.write("inc/h.h", b"#define H 2\n")
    assert laptop2.cache.lookup(a, PLATFORM, TOOLS, inputs) is None
    # ... and another source is another key.
    assert laptop2.cache.lookup(a, PLATFORM, TOOLS, {"hit.cpp": digest_bytes(b"other")}) is None
    laptop2.cache.close()


def test_the_result_is_sent_only_after_every_blob_it_names(buildgrid, tmp_path):
    ci = Machine(tmp_path / "ci", buildgrid.url, upload=True)
    a = compile_action("order")
    src = ci.write("order.cpp", b"int g();\n")
    entry = run_locally(ci, a, stdout=b"note\n")
    calls = []
    client = ci.cache.endpoint.client()
    for name in ("_batch_update", "_ac_update"):
        inner = getattr(client, name)
        setattr(client, name, lambda req, _n=name, _i=inner, **kw: (calls.append(_n), _i(req, **kw))[1])
    ci.cache.upload(a, PLATFORM, TOOLS, {"order.cpp": src}, (), entry)
    ci.cache.close()
    assert calls[:2] == ["_batch_update", "_ac_update"]
    check = RemoteClient(buildgrid.url)
    check.connect()
    names = [SHA256.of_bytes(ci.local.get(d)) for d in entry.blobs()]
    assert check.find_missing(names) == []
    check.close()


def test_an_input_edited_during_the_build_is_not_published(buildgrid, tmp_path):
    ci = Machine(tmp_path / "ci", buildgrid.url, upload=True)
    a = compile_action("edited")
    keyed = ci.write("edited.cpp", b"int v = 1;\n")
    ci.write("edited.cpp", b"int v = 2;\n")  # changed after the key was computed, before the upload
    ci.cache.upload(a, PLATFORM, TOOLS, {"edited.cpp": keyed}, (), run_locally(ci, a))
    ci.cache.close()
    assert ci.cache.counters.uploaded == 0 and ci.warnings == []


def test_a_server_that_is_down_costs_one_warning_and_is_not_asked_again(tmp_path):
    url = f"unix:{tmp_path}/down.sock"
    m = Machine(tmp_path / "m", url, upload=True)
    a = compile_action("down")
    src = m.write("down.cpp", b"x")
    for _ in range(3):
        assert m.cache.lookup(a, PLATFORM, TOOLS, {"down.cpp": src}) is None
    m.cache.upload(a, PLATFORM, TOOLS, {"down.cpp": src}, (), run_locally(m, a))
    m.cache.close()
    assert len(m.warnings) == 1
    assert m.warnings[0].startswith(f"remote cache at {url} unavailable (UNAVAILABLE")
    assert m.warnings[0].endswith("; building locally")


def test_a_server_that_dies_mid_build_is_dropped_after_one_warning(fresh_buildgrid, tmp_path):
    m = Machine(tmp_path / "m", fresh_buildgrid.url)
    a = compile_action("dies")
    src = m.write("dies.cpp", b"x")
    assert m.cache.lookup(a, PLATFORM, TOOLS, {"dies.cpp": src}) is None  # connected; a plain miss
    fresh_buildgrid.kill()
    assert m.cache.lookup(a, PLATFORM, TOOLS, {"dies.cpp": src}) is None
    assert m.cache.lookup(a, PLATFORM, TOOLS, {"dies.cpp": src}) is None
    m.cache.close()
    assert len(m.warnings) == 1 and "unavailable" in m.warnings[0]
    assert m.cache.disabled


def test_a_corrupt_output_on_the_server_is_rejected_with_a_warning(disk_buildgrid, tmp_path):
    ci = Machine(tmp_path / "ci", disk_buildgrid.url, upload=True)
    laptop = Machine(tmp_path / "laptop", disk_buildgrid.url)
    a = compile_action("corrupt")
    for m in (ci, laptop):
        src = m.write("corrupt.cpp", b"int c;\n")
    entry = run_locally(ci, a)
    ci.cache.upload(a, PLATFORM, TOOLS, {"corrupt.cpp": src}, (), entry)
    ci.cache.close()
    obj = ci.local.get(entry.outputs["out/corrupt.o"][0])
    disk_buildgrid.blob_path(hashlib.sha256(obj).hexdigest()).write_bytes(bytes(len(obj)))

    assert laptop.cache.lookup(a, PLATFORM, TOOLS, {"corrupt.cpp": src}) is None
    laptop.cache.close()
    assert laptop.cache.counters.rejected == 1
    assert len(laptop.warnings) == 1 and "corrupt blob for `compile corrupt`" in laptop.warnings[0]
    assert not laptop.cache.disabled  # one bad blob is not a dead server
