"""The stores one build reads and writes, opened once from one `$MCPP_HOME`.

```
LocalZstdStore ($MCPP_HOME/cas)        compressed blobs by blake3
  -> VerifyingStore                    re-hashes on read; a corrupt blob is dropped and re-made
     -> Materializer ($MCPP_HOME/mat)  read-only plain copies that target/ and sandboxes link from
ActionCache ($MCPP_HOME/ac)            action key -> output digests
remote (optional)                      a REAPI cache; docs/remote.md
```

`build.build` opens these once and hands the same objects to the pipeline, the sandbox runner
and the remote cache, so two parts of a build can never disagree about which home they use.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from mcpp.cas.action_cache import ActionCache
from mcpp.cas.home import Home
from mcpp.cas.local_store import LocalZstdStore
from mcpp.cas.materialize import Materializer
from mcpp.cas.verifying_store import VerifyingStore

if TYPE_CHECKING:  # the remote layer imports gRPC: only builds that use it load it
    from mcpp.cas.remote.cache import RemoteCache
    from mcpp.cas.remote.config import RemoteSettings
    from mcpp.cas.remote.endpoint import RemoteEndpoint


@dataclass(frozen=True)
class Stores:
    """The stores a build reads and writes: local, and remote when configured."""
    home: Home
    blobs: VerifyingStore
    mat: Materializer
    ac: ActionCache
    remote: RemoteSettings | None = None  # None: no remote cache for this build

    @classmethod
    def open(cls, home: Home, remote: RemoteSettings | None = None) -> "Stores":
        blobs = VerifyingStore(LocalZstdStore(home.cas))
        return cls(home, blobs, Materializer(blobs, home.mat), ActionCache(home.ac), remote)

    def remote_endpoint(self, warn: Callable[[str], None]) -> "RemoteEndpoint | None":
        """The one connection of a build to its remote (None without one), which its remote
        cache and remote execution share: one channel, one warning when it fails."""
        if self.remote is None:
            return None
        from mcpp.cas.remote.endpoint import RemoteEndpoint  # gRPC: imported only when a remote is set

        return RemoteEndpoint(self.remote, warn)

    def remote_cache(self, endpoint: "RemoteEndpoint | None", content_of: Callable[[str], bytes],
                     warn: Callable[[str], None], note: Callable[[str], None] | None = None) -> "RemoteCache | None":
        """The remote cache for one build over `endpoint` (None without a remote):
        `content_of(path)` answers an execroot-relative input's bytes, generated files included;
        `warn` and `note` show what the remote layer has to say (cas/remote/cache.py)."""
        if endpoint is None:
            return None
        from mcpp.cas.remote.cache import RemoteCache  # gRPC: imported only when a remote is set

        return RemoteCache(endpoint, self.home, self.blobs, content_of, warn, note)
