"""The resolver (one version per package, the lock preferred, yanked skipped, conflicts named)
and the lockfile (stable bytes, every malformed field refused at its position)."""
from __future__ import annotations

import pytest

from mcpp.engine.registry.errors import RegistryError
from mcpp.engine.registry.lockfile import Lock, Locked, changes, read_lock
from mcpp.engine.registry.requirements import Requirement
from mcpp.engine.registry.resolver import Candidate, resolve

GREET, SHOUT = ("mcpplibs", "greet"), ("mcpplibs", "shout")


class Index:
    """releases: package -> {version: [(package, requirement)]}; `yanked`: versions never picked."""

    def __init__(self, releases, yanked=()):
        self.releases = releases
        self.yanked = set(yanked)
        self.asked: list = []

    def versions(self, package):
        self.asked.append(package)
        return [Candidate(v, (package, v) in self.yanked) for v in self.releases.get(package, {})]

    def requirements(self, package, version):
        return tuple(Requirement(f"{package[1]} {version}", ns, name, req, origin=(*package, version))
                     for (ns, name), req in self.releases[package][version])


def req(package, text, who="app"):
    return Requirement(who, package[0], package[1], text)


STANDARD = {
    GREET: {"1.0.0": [(SHOUT, "~1.0")], "1.1.0": [(SHOUT, "1.1")], "2.0.0": []},
    SHOUT: {"1.0.0": [], "1.1.0": [], "1.2.0": []},
}


def test_the_highest_version_meeting_every_requirement_is_chosen():
    got = resolve([req(GREET, "1")], Index(STANDARD), {})
    assert got == {GREET: "1.1.0", SHOUT: "1.2.0"}


def test_a_locked_version_that_still_meets_the_requirements_wins_and_reads_no_index():
    index = Index(STANDARD)
    got = resolve([req(GREET, "1")], index, {GREET: "1.0.0", SHOUT: "1.0.0"})
    assert got == {GREET: "1.0.0", SHOUT: "1.0.0"} and index.asked == []


def test_a_locked_version_the_manifest_no_longer_accepts_moves():
    got = resolve([req(GREET, "2")], Index(STANDARD), {GREET: "1.1.0", SHOUT: "1.1.0"})
    assert got == {GREET: "2.0.0"}  # shout is no longer reached: it leaves the lock


def test_a_yanked_release_is_skipped_for_a_new_choice_but_kept_when_locked():
    index = Index(STANDARD, yanked=[(GREET, "1.1.0")])
    assert resolve([req(GREET, "1")], index, {})[GREET] == "1.0.0"
    assert resolve([req(GREET, "1")], index, {GREET: "1.1.0", SHOUT: "1.2.0"})[GREET] == "1.1.0"


def test_a_conflict_names_every_requirer_and_the_versions_the_index_has():
    with pytest.raises(RegistryError) as e:
        resolve([req(GREET, "=1.1.0"), req(SHOUT, "~1.0")], Index(STANDARD), {})
    text = e.value.render()
    assert "no version of `mcpplibs.shout` meets every requirement" in text
    assert "app requires `mcpplibs.shout` `~1.0`" in text and "greet 1.1.0 requires `mcpplibs.shout` `1.1`" in text
    assert "the index has 1.0.0, 1.1.0, 1.2.0" in text


def test_a_package_the_index_does_not_have_is_named():
    with pytest.raises(RegistryError, match="no package `mcpplibs.nope` in the library index"):
        resolve([req(("mcpplibs", "nope"), "1")], Index(STANDARD), {})


def test_a_choice_that_adds_a_requirement_moves_an_earlier_choice():
    # app wants shout 1 (-> 1.2.0) and greet 1.0.0, which needs shout ~1.0: shout moves down.
    got = resolve([req(SHOUT, "1"), req(GREET, "=1.0.0")], Index(STANDARD), {})
    assert got == {GREET: "1.0.0", SHOUT: "1.0.0"}


def test_a_conflict_with_a_chosen_release_retreats_to_an_older_release_of_it():
    # greet 1 -> 1.1.0 needs shout 1.1, which `~1.0` refuses; greet 1.0.0 needs ~1.0: it is taken.
    got = resolve([req(GREET, "1"), req(SHOUT, "~1.0")], Index(STANDARD), {})
    assert got == {GREET: "1.0.0", SHOUT: "1.0.0"}


def locked(name, version, deps=()):
    return Locked("mcpplibs", name, version, "index+http://x", "a" * 64, tuple(deps))


def test_the_lock_renders_sorted_and_reads_back_the_same(tmp_path):
    lock = Lock({SHOUT: locked("shout", "1.1.0"), GREET: locked("greet", "1.1.0", ["mcpplibs.shout 1.1.0"])})
    text = lock.render()
    assert text.index('name = "greet"') < text.index('name = "shout"')
    path = tmp_path / "mcpp.lock"
    path.write_text(text)
    again = read_lock(str(path))
    assert again is not None and again.packages == lock.packages and again.render() == text
    assert read_lock(str(tmp_path / "none.lock")) is None


def test_changes_name_what_moved_appeared_and_left():
    old = Lock({GREET: locked("greet", "1.0.0"), SHOUT: locked("shout", "1.0.0")})
    new = Lock({GREET: locked("greet", "1.1.0"), ("extra", "calc"): Locked("extra", "calc", "2.0.0", "index+x", "b" * 64)})
    assert changes(old, new) == ["+ extra.calc 2.0.0", "mcpplibs.greet 1.0.0 -> 1.1.0", "- mcpplibs.shout 1.0.0"]


@pytest.mark.parametrize("text, message, line", [
    ('version = 1\nextra = 2\n', "unknown key `extra`", 2),
    ('version = 1\n[[package]]\nname = "a"\n', "needs `namespace`", 2),
    ('version = 1\n[[package]]\nname = "a"\nnamespace = "n"\nversion = "1"\nsource = "git+x"\nblake3 = "' + "0" * 64
     + '"\n', "`source` must be `index+<url>`", 6),
    ('version = 1\n[[package]]\nname = "a/b"\nnamespace = "n"\nversion = "1"\nsource = "index+x"\nblake3 = "'
     + "0" * 64 + '"\n', "is not a package name", 3),
    ('version = 1\n[[package]]\nname = "a"\nnamespace = "n"\nversion = "1"\nsource = "index+x"\nblake3 = "' + "0" * 64
     + '"\ndependencies = "x"\n', "`dependencies` must be a list", 8),
])
def test_a_malformed_lock_is_refused_at_its_position(tmp_path, text, message, line):
    path = tmp_path / "mcpp.lock"
    path.write_text(text)
    with pytest.raises(RegistryError) as e:
        read_lock(str(path))
    assert message in e.value.message and e.value.pos is not None and e.value.pos.line == line
