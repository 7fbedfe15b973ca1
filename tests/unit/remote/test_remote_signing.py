"""Signed remote results: the payload, keys, the trust policy and the settings that name them."""
from __future__ import annotations

import base64
import json
import os
import stat

import pytest

from mcpp.cas.action import Action
from mcpp.cas.action_cache import ActionEntry
from mcpp.cas.digest import Digest
from mcpp.cas.remote import protocol as pb
from mcpp.cas.remote import local_digests, signing
from mcpp.cas.remote.actions import action_result
from mcpp.engine.core.errors import McppError
from tests.unit.engine.settings_support import remote_of
from mcpp.cas.remote.digests import RemoteDigest
from mcpp.cas.remote.trust import SignaturePolicy, event_origin

ACTION = RemoteDigest("a" * 64, 142)
OTHER = RemoteDigest("b" * 64, 142)
BLOB = RemoteDigest("c" * 64, 1000)


def honest_result():
    r = pb.ActionResult(exit_code=0)
    r.output_files.add(path="bin/app", digest=BLOB.to_proto(), is_executable=True)
    r.output_files.add(path="obj/main.o", digest=RemoteDigest("d" * 64, 10).to_proto())
    r.output_directories.add(path="gen/docs", tree_digest=RemoteDigest("1" * 64, 300).to_proto())
    r.output_directories.add(path="gen/api", tree_digest=RemoteDigest("2" * 64, 200).to_proto())
    r.stdout_digest.CopyFrom(RemoteDigest("e" * 64, 5).to_proto())
    r.stderr_digest.CopyFrom(RemoteDigest("f" * 64, 7).to_proto())
    local_digests.attach(r, {"bin/app": Digest("9" * 64, 1000), "obj/main.o": Digest("8" * 64, 10)})
    return r


def roundtrip(result):
    return pb.ActionResult.FromString(result.SerializeToString())


@pytest.fixture(scope="module")
def ci():
    return signing.generate("ci")


# How to tamper with each signed field: (action digest to verify against, result) after the change.
def _path(a, r):
    r.output_files[0].path = "bin/other"
    return a, r


def _digest(a, r):
    r.output_files[0].digest.hash = "0" * 64
    return a, r


def _executable(a, r):
    r.output_files[1].is_executable = True
    return a, r


def _tree_path(a, r):
    r.output_directories[0].path = "gen/other"
    return a, r


def _tree_digest(a, r):
    r.output_directories[1].tree_digest.hash = "0" * 64
    return a, r


def _stdout(a, r):
    r.ClearField("stdout_digest")
    return a, r


def _stderr(a, r):
    r.stderr_digest.size_bytes += 1
    return a, r


def _local_digest(a, r):
    """The blake3 a reader keys dependents on when it leaves the output on the server."""
    for m in r.execution_metadata.auxiliary_metadata:
        if m.type_url == local_digests.LOCAL_DIGESTS_TYPE_URL:
            m.value = m.value.replace(b"9" * 64, b"7" * 64)
    return a, r


def test_a_second_local_digests_entry_claims_nothing_and_breaks_the_signature(ci):
    r = honest_result()
    signing.sign(r, ACTION, ci)
    r = roundtrip(r)
    local_digests.attach(r, {"bin/app": Digest("7" * 64, 1000)})
    assert local_digests.claimed(r) == {}
    assert signing.verify(r, ACTION, [ci.public]).reason == signing.MISMATCH


def test_malformed_local_digests_claim_nothing():
    for value in (b"[1]", b"{\"a\": \"../x/1\"}", b"{\"a\": \"%s/-1\"}" % (b"a" * 64), b"not json"):
        r = pb.ActionResult()
        r.execution_metadata.auxiliary_metadata.add(type_url=local_digests.LOCAL_DIGESTS_TYPE_URL, value=value)
        assert local_digests.claimed(r) == {}


def _exit(a, r):
    r.exit_code = 1
    return a, r


TAMPER = {
    "action_digest": lambda a, r: (OTHER, r),
    "output_files.path": _path,
    "output_files.digest": _digest,
    "output_files.is_executable": _executable,
    "output_directories.path": _tree_path,
    "output_directories.tree_digest": _tree_digest,
    "stdout_digest": _stdout,
    "stderr_digest": _stderr,
    "exit_code": _exit,
    "execution_metadata": _local_digest,
}


def test_a_signed_result_survives_the_wire_and_verifies(ci):
    r = honest_result()
    signing.sign(r, ACTION, ci)
    v = signing.verify(roundtrip(r), ACTION, [ci.public])
    assert v.signer == ci.public and v.reason is None
    assert [a.type_url for a in r.execution_metadata.auxiliary_metadata] == [
        local_digests.LOCAL_DIGESTS_TYPE_URL, signing.SIGNATURE_TYPE_URL]


@pytest.mark.parametrize("field", sorted(signing.SIGNED_FIELDS))
def test_changing_any_signed_field_breaks_the_signature(field, ci):
    """Fails when `signed_payload` leaves a field of SIGNED_FIELDS out (or a field has no tamper)."""
    assert field in TAMPER, f"add a way to tamper with {field} to TAMPER"
    r = honest_result()
    signing.sign(r, ACTION, ci)
    action, tampered = TAMPER[field](ACTION, roundtrip(r))
    assert signing.verify(tampered, action, [ci.public]).reason == signing.MISMATCH


def test_every_field_mcpp_writes_into_a_result_is_signed():
    """A field `action_result` starts to fill must be added to the payload (and SIGNED_FIELDS)."""
    action = Action(id="rule p:app", kind="rule", argv=("ld",), inputs=(), outputs=("bin/app", "gen/docs/"), cwd="")
    outputs = {"bin/app": (BLOB, True), "gen/docs/": (RemoteDigest("1" * 64, 300), False)}
    r = action_result(action, outputs, RemoteDigest("e" * 64, 5), RemoteDigest("f" * 64, 7),
                      {"bin/app": Digest("9" * 64, 1000)})
    assert local_digests.claimed(r) == {"bin/app": Digest("9" * 64, 1000)}
    r.exit_code = 3  # proto3 omits zero: make it visible to ListFields
    seen = set()
    for fd, value in r.ListFields():
        if fd.name in ("output_files", "output_directories"):
            seen |= {f"{fd.name}.{sub.name}" for f in value for sub, _ in f.ListFields()}
        else:
            seen.add(fd.name)
    assert seen <= set(signing.SIGNED_FIELDS), seen - set(signing.SIGNED_FIELDS)


def test_a_signature_over_the_payload_before_trees_were_signed_no_longer_verifies(ci):
    """A v1 payload left output directories out: such a signature must not vouch for a tree."""
    r = honest_result()
    v1 = signing.signed_payload(ACTION, r).replace(signing.PAYLOAD_VERSION.encode(), b"mcpp-signed-result-v1", 1)
    v1 = b"".join(line for line in v1.splitlines(keepends=True) if not line.startswith(b"tree "))
    value = json.dumps({"key": ci.name, "public": base64.b64encode(ci.public.raw).decode(),
                        "sig": base64.b64encode(ci.sign(v1)).decode()}).encode()
    r.execution_metadata.auxiliary_metadata.add(type_url=signing.SIGNATURE_TYPE_URL, value=value)
    assert signing.verify(r, ACTION, [ci.public]).reason == signing.MISMATCH


def test_why_a_result_is_refused(ci):
    r = honest_result()
    assert signing.verify(r, ACTION, [ci.public]).reason == signing.UNSIGNED
    impostor = signing.generate("ci")  # same name, another key: trust is in the key, not the name
    signing.sign(r, ACTION, impostor)
    assert signing.verify(r, ACTION, [ci.public]).reason == signing.UNTRUSTED
    signing.sign(r, ACTION, ci)  # a second signature, by the trusted key
    assert signing.verify(r, ACTION, [ci.public]).signer == ci.public
    # Inlined stdout without a digest is nothing the signer vouched for.
    inlined = honest_result()
    inlined.ClearField("stdout_digest")
    signing.sign(inlined, ACTION, ci)
    inlined.stdout_raw = b"surprise"
    assert signing.verify(inlined, ACTION, [ci.public]).reason == signing.MISMATCH
    # A malformed signature is no signature.
    junk = honest_result()
    junk.execution_metadata.auxiliary_metadata.add(type_url=signing.SIGNATURE_TYPE_URL, value=b"{not json")
    assert signing.verify(junk, ACTION, [ci.public]).reason == signing.UNTRUSTED


def test_key_files(tmp_path):
    secret, public, key = signing.write_key_pair(str(tmp_path / "ci"))
    assert stat.S_IMODE(os.stat(secret).st_mode) == 0o600
    assert open(public).read().strip() == str(key)
    loaded = signing.load_secret_key(secret)
    assert loaded.public == key and signing.parse_public_key(str(key)) == key
    assert "ci" in repr(loaded) and str(loaded).split(":")[1] not in repr(loaded)
    with pytest.raises(signing.SigningKeyError, match="already exists"):
        signing.write_key_pair(str(tmp_path / "ci"))
    with pytest.raises(signing.SigningKeyError, match="invalid public key"):
        signing.parse_public_key("ci:AAAA")
    with pytest.raises(signing.SigningKeyError, match="not a secret key"):
        signing.load_secret_key(_write(tmp_path / "x", "nonsense"))


def _write(path, text):
    path.write_text(text)
    return str(path)


def test_settings_name_the_keys(tmp_path, ci):
    home = tmp_path / "home"
    (home / "keys").mkdir(parents=True)
    secret, _, key = signing.write_key_pair(str(home / "keys" / "ci"))
    (home / "config.toml").write_text(f'[remote]\nurl = "grpc://localhost:1"\nsign-key = "keys/ci.secret"\n'
                                      f'trusted-keys = ["{key}"]\n')
    s = remote_of(None, None, {}, home)
    assert s.sign_key.public == key and s.trusted_keys == (key,)
    env = {"MCPP_REMOTE_TRUSTED_KEYS": f"{ci.public}, {key}", "MCPP_REMOTE_SIGN_KEY": secret}
    s = remote_of(None, None, env, home)
    assert s.trusted_keys == (ci.public, key)
    (home / "config.toml").write_text('[remote]\nurl = "grpc://localhost:1"\n')
    assert remote_of(None, None, {}, home).trusted_keys is None
    (home / "config.toml").write_text('[remote]\nurl = "grpc://localhost:1"\ntrusted-keys = "ci:x"\n')
    with pytest.raises(McppError, match="must be a list of strings"):
        remote_of(None, None, {}, home)
    (home / "config.toml").write_text('[remote]\nurl = "grpc://localhost:1"\ntrusted-keys = ["ci:x"]\n')
    with pytest.raises(McppError, match="trusted-keys`: invalid public key"):
        remote_of(None, None, {}, home)


def test_the_policy_warns_once_and_never_launders(ci):
    said = []
    policy = SignaturePolicy("unix:/s", [ci.public], said.append, said.append)
    assert policy.accept("link p:a", ACTION, honest_result()) is None
    assert policy.accept("link p:b", ACTION, honest_result()) is None
    assert said == ["refused the result of `link p:a` from remote cache at unix:/s (unsigned); the action runs locally"]
    r = honest_result()
    signing.sign(r, ACTION, ci)
    origin = policy.accept("link p:a", ACTION, r)
    assert origin == {"kind": "remote-cache", "server": "unix:/s", "action": str(ACTION), "signed-by": str(ci.public)}
    assert policy.accepts_local(origin) and policy.accepts_local(None)
    assert not policy.accepts_local({**origin, "signed-by": None})
    # Without trusted keys: accepted, with one note.
    notes = []
    open_policy = SignaturePolicy("unix:/s", None, said.append, notes.append)
    assert open_policy.accept("x", ACTION, honest_result())["signed-by"] is None
    open_policy.accept("y", ACTION, honest_result())
    assert len(notes) == 1 and "not verified" in notes[0]
    assert open_policy.accepts_local({**origin, "signed-by": None})


def test_a_local_entry_keeps_its_origin():
    origin = {"kind": "remote-cache", "server": "unix:/s", "action": str(ACTION), "signed-by": None}
    entry = ActionEntry(outputs={"a": (Digest("1" * 64, 3), 0o444)}, origin=origin)
    back = ActionEntry.from_json(entry.to_json())
    assert back.origin == origin
    assert ActionEntry.from_json(ActionEntry(outputs={}).to_json()).origin is None
    assert b'"o"' not in ActionEntry(outputs={}).to_json()  # entries built here are unchanged on disk
    assert event_origin("cached", origin) == {"kind": "local-cache", "fetched-from": "unix:/s",
                                              "action": str(ACTION), "signed-by": None}


def test_an_action_a_remote_worker_ran_says_so_in_its_origin():
    from mcpp.cas.remote.trust import describe

    assert event_origin("executed", None) == {"kind": "executed"}
    remote = event_origin("executed", None, "bot-7@grid")
    assert remote == {"kind": "executed", "worker": "bot-7@grid"}
    assert describe(remote) == "executed remotely on bot-7@grid" and describe({"kind": "executed"}) == "executed here"
