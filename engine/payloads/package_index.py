"""A package's own payload index, `[payloads] index` in its manifest: the SDK a rule package
needs travels with the rule package (docs/payloads.md, "A package's own index").

Which index a payload comes from:

- a package's index serves only the payloads that package itself declares (several indexes of one
  package are searched in the order it lists them), and only when one of its declarations applies
  to the build (its feature is active, its condition holds): a consumer that does not enable the
  feature reads nothing of it;
- the configured indexes (`MCPP_PAYLOAD_INDEX`, `[payloads] index` of `$MCPP_HOME/config.toml`,
  the index shipped with mcpp) come first: a payload one of them describes is taken from it, so a
  package can never replace a payload of the user's; when a package's index describes it too the
  build says which one it used (a warning), it is not chosen silently;
- a payload no configured index describes, described by the indexes of two packages that both
  declare it, is refused: which package's release a build installs must not depend on the order
  the package graph is walked in.

A package's index is trusted exactly as a configured one is (index.py): a directory or `https://`
by its channel, plain `http://` only with descriptors signed by a key of the user's
`[payloads] trusted-keys` / `MCPP_PAYLOAD_TRUSTED_KEYS` (a package names no key of its own).
On top of that it is confined (`Index.owner`): it adopts nothing of this machine (`system`),
names no file outside itself, and what it installs is stored apart (`Index.origin`).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core import containment
from ..core.errors import Position
from .declarations import Declaration
from .descriptor import Descriptor
from .errors import PayloadError
from .index import Index, IndexSet, Trust, is_url


@dataclass(frozen=True)
class Owned:
    """One package's index, and where its manifest names it."""
    index: Index
    package: str
    position: Position


class PackageIndexes:
    """The indexes packages ship, opened as their declarations are resolved, each once."""

    def __init__(self, trust: Trust):
        self.trust = trust
        self._owned: dict[str, Owned] = {}

    def of(self, d: Declaration) -> list[Owned]:
        """The indexes the manifest of `d`'s package names (none for most packages)."""
        out = []
        for i, location in enumerate(d.manifest.payload_indexes):
            owned = self._owned.get(location)
            if owned is None:
                position = d.manifest.source_position("payloads", "index", i)
                if not is_url(location):
                    try:
                        containment.check(location, d.manifest.root, f"the payload index `{location}`")
                    except containment.SymlinkEscape as e:
                        raise PayloadError(e.message, position, e.notes) from None
                owned = Owned(Index(location, self.trust, owner=d.package), d.package, position)
                self._owned[location] = owned
            out.append(owned)
        return out

    def describe(self, owned: Owned, namespace: str, name: str) -> Descriptor | None:
        """`owned`'s descriptor of the package, None when it has none; an index that cannot be
        read is an error at the manifest entry naming it."""
        try:
            return owned.index.descriptor(namespace, name)
        except PayloadError as e:
            if e.pos is None:
                e.pos = owned.position
                e.notes = [f"note: the payload index of package `{owned.package}`, named at {owned.position}",
                           *e.notes]
            raise

    def indexes(self) -> list[Index]:
        return [o.index for o in self._owned.values()]


def find(address: str, identity: tuple[str, str], declarations: list[Declaration], configured: IndexSet,
         owned: PackageIndexes, warn=None) -> tuple[Index, Descriptor] | None:
    """The index and descriptor a payload is taken from (the module's docstring says which)."""
    found = configured.find(*identity)
    candidates: dict[str, Owned] = {}
    for d in declarations:
        for o in owned.of(d):
            candidates.setdefault(o.index.location, o)
    if not candidates:
        return found
    describing: list[tuple[Owned, Descriptor]] = []  # per package, the first of its indexes that describes it
    for o in candidates.values():
        if any(p.package == o.package for p, _ in describing):
            continue
        desc = owned.describe(o, *identity)
        if desc is not None:
            describing.append((o, desc))
    if found is not None:
        if describing and warn is not None:
            o = describing[0][0]
            warn(f"`{address}` is described by the payload index of package `{o.package}` ({o.index.location}, "
                 f"named at {o.position}) and by the configured index {found[0].location}; the configured "
                 f"index's is used: the indexes you configure come first, so a package cannot replace a payload "
                 f"of yours")
        return found
    if len(describing) > 1:
        (a, _), (b, _) = describing[:2]
        raise PayloadError(
            f"payload `{address}` is described by the payload index of package `{a.package}` "
            f"({a.index.location}) and by that of package `{b.package}` ({b.index.location}), and by no index "
            f"you configure; mcpp does not pick one of two packages' releases",
            a.position,
            [f"note: the other index is named at {b.position}",
             f"help: describe `{address}` in an index you configure (MCPP_PAYLOAD_INDEX or `[payloads] index` "
             f"in config.toml), which comes before every package's index, or drop it from one of the two"])
    return (describing[0][0].index, describing[0][1]) if describing else None


def searched(configured: IndexSet, owned: PackageIndexes) -> str:
    """Every index a payload was looked up in, for the message when none describes it."""
    return ", ".join([configured.describe()] + [f"{i.location} (package `{i.owner}`)" for i in owned.indexes()])
