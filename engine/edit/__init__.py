"""Editing a package's manifest from the command line: `mcpp add` and `mcpp remove`
(docs/dependencies.md, "Adding and removing")."""
