"""An action cannot change its inputs, which are hard links into the store's `mat/` files: the
next build of any project on the same home would be served the changed bytes."""
from __future__ import annotations

import pytest

from tests.e2e.e2e_support import Mcpp

DATA = "original bytes\n"

# chmod u+w, rewrite in place with the same size, chmod back: the attack works for any owner,
# and for root whatever the mode bits say
TAMPER = ("/bin/chmod u+w data.txt; /usr/bin/printf 'tampered byte\\n' > data.txt; "
          "/bin/chmod a-w data.txt; /bin/cp data.txt {out}/seen.txt")


def program(argv_script: str) -> str:
    return f"""
out = mcpp.out_dir()
mcpp.action(id = "x", argv = ["/bin/sh", "-c", "{argv_script}".format(out = out)], inputs = ["data.txt"],
            outputs = [out + "/seen.txt"], tools = ["/bin/sh"], role = "check")
"""


def files(name: str, script: str) -> dict[str, str]:
    return {
        "mcpp.toml": f'[package]\nname = "{name}"\nversion = "0.1.0"\n',
        "src/main.cpp": "int main() { return 0; }\n",
        "data.txt": DATA,
        "build.star": program(script),
    }


@pytest.mark.parametrize("sandbox", ["bwrap", "dir"])
def test_an_action_cannot_rewrite_a_staged_input_in_the_store(project, mcpp: Mcpp, sandbox):
    attacker = project(files("attacker", TAMPER.replace("'", "\\'")), name="attacker")
    res = mcpp("build", "--sandbox", sandbox, cwd=attacker)
    if sandbox == "dir":  # the write reached a private copy only, and is refused
        assert res.code != 0 and "action rule attacker:x modified its input data.txt" in res.err, res.err
    else:  # the read-only mount refused it; the action's `;` went on
        assert res.code == 0, res.err
        assert (attacker / "target/dev/.mcpp/gen/attacker/seen.txt").read_text() == DATA
    assert (attacker / "data.txt").read_text() == DATA

    # another project on the same home with the same input bytes
    victim = project(files("victim", "/bin/cp data.txt {out}/seen.txt"), name="victim")
    res = mcpp("build", "--sandbox", sandbox, cwd=victim)
    assert res.code == 0, res.err
    assert (victim / "target/dev/.mcpp/gen/victim/seen.txt").read_text() == DATA
    assert mcpp("cache", "verify", cwd=victim).code == 0


def _mat_file(home, data: str):
    import blake3

    h = blake3.blake3(data.encode()).hexdigest()
    return home / "mat" / h[:2] / h[2:]


def _rewrite_in_place(path, text: str) -> None:
    import os

    os.chmod(path, 0o644)
    with open(path, "r+") as f:  # same inode, same size
        f.write(text)
    os.chmod(path, 0o444)


def test_restore_and_cache_verify_detect_a_materialized_file_changed_in_place(project, mcpp: Mcpp):
    root = project(files("p", "/bin/cp data.txt {out}/seen.txt"))
    assert mcpp("build", cwd=root).code == 0
    mat = _mat_file(mcpp.home, DATA)
    assert mat.read_text() == DATA
    _rewrite_in_place(mat, "tampered byte\n")

    # a restore from the action cache copies from mat/: it hashes what it copied
    import shutil

    shutil.rmtree(root / "target")
    res = mcpp("build", cwd=root)
    assert res.code == 0, res.err
    assert (root / "target/dev/.mcpp/gen/p/seen.txt").read_text() == DATA
    assert mat.read_text() == DATA  # re-created from the verified blob

    _rewrite_in_place(mat, "tampered byte\n")
    res = mcpp("cache", "verify", cwd=root)
    assert res.code == 1
    assert f"changed in place: {mat} (re-materialized from the store)" in res.err, res.err
    assert mat.read_text() == DATA
    assert mcpp("cache", "verify", cwd=root).code == 0
