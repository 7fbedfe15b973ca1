"""Library dependencies from an index: `greet = "1.2"` resolved, pinned in `mcpp.lock`, fetched,
verified and cached (docs/dependencies.md).

The index is the payload index's family (engine/payloads/): the same reader, descriptors,
signatures and unpacker; a package is a library when its releases have a `source`. Resolution
picks one version per package for the whole graph (resolver.py) and writes it to the lockfile
(lockfile.py); the sources are cached under `$MCPP_HOME/registry/` (cache.py) or read from a
vendor directory (vendor.py); `session.py` ties them together for a build (`resolve_workspace`) and for
the commands that edit a manifest (`refresh_lock`).
"""
