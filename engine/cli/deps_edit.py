"""`mcpp add NAME[@REQ]` and `mcpp remove NAME`: edit the dependencies of the package here
(docs/dependencies.md, "Adding and removing")."""
from __future__ import annotations

import os
import tomllib

import click

from ..core.errors import McppError, display_path
from ..manifest import version_req
from ..manifest.deps import INDEX_NAME
from ..package.locate import find_manifest


def _name(text: str) -> tuple[str | None, str]:
    """(namespace or None, name) of `name` or `namespace.name`."""
    ns, dot, name = text.rpartition(".")
    for part in ([ns, name] if dot else [name]):
        if not INDEX_NAME.match(part):
            raise McppError(f"`{text}` is not a package name (`name` or `namespace.name`: letters, digits, `-` and "
                            f"`_`, each starting with a letter, at most 128 characters)")
    return (ns if dot else None), name


def _manifest(ctx) -> tuple[str, str]:
    """(path, text) of the manifest to edit: the package's found from here."""
    path = find_manifest(os.getcwd(), ctx.manifest_path)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise McppError(f"{display_path(path)}: not valid TOML ({e})") from None
    if "package" not in doc:
        raise McppError(f"{display_path(path)} is a virtual workspace, not a package; run `mcpp add` in a member "
                        f"(or pass --manifest-path MEMBER/mcpp.toml)")
    return path, text


def _path_package(directory: str, manifest_root: str) -> tuple[str, dict]:
    """(the path as the manifest writes it, the `[package]` table) of the package at `directory`."""
    full = os.path.abspath(directory)
    manifest = os.path.join(full, "mcpp.toml")
    if not os.path.isfile(manifest):
        raise McppError(f"--path {directory}: no mcpp.toml there")
    try:
        with open(manifest, "rb") as f:
            pkg = tomllib.load(f).get("package")
    except tomllib.TOMLDecodeError as e:
        raise McppError(f"{display_path(manifest)}: not valid TOML ({e})") from None
    if not isinstance(pkg, dict):
        raise McppError(f"--path {directory}: {display_path(manifest)} has no [package] (a virtual workspace?)")
    return os.path.relpath(full, manifest_root).replace(os.sep, "/"), pkg


@click.command("add")
@click.argument("spec", metavar="NAME[@REQ]")
@click.option("--dev", is_flag=True, help="Add to [dev-dependencies] (tests only).")
@click.option("--features", "features", multiple=True, metavar="F,..",
              help="Features of the dependency to activate (comma- or space-separated).")
@click.option("--no-default-features", is_flag=True, help="Do not activate the dependency's `default` feature.")
@click.option("--path", "path", metavar="DIR", default=None,
              help="A path dependency on the package in DIR instead of an index release.")
@click.pass_obj
def add_cmd(ctx, spec, dev, features, no_default_features, path):
    """Add a dependency to mcpp.toml (or update the one there), keeping its comments and layout.

    NAME is `name` (namespace mcpplibs) or `namespace.name`; without @REQ the highest release
    of the index (MCPP_INDEX, or [index] url in $MCPP_HOME/config.toml) that is not yanked is
    required as Cargo writes it (`1.2.0` means ^1.2.0)."""
    from ..edit.manifest_edit import DEFAULT_NAMESPACE, Wanted, add_entry

    name_text, at, requirement = spec.partition("@")
    namespace, name = _name(name_text)
    requirement = requirement.strip() if at else None
    if at:
        problem = version_req.parse(requirement or "")
        if isinstance(problem, str) or not requirement:
            raise McppError(f"`{spec}`: {problem if isinstance(problem, str) else 'no requirement after `@`'}")
    manifest, text = _manifest(ctx)
    reporter = ctx.reporter()
    wanted_features = tuple(f for v in features for f in v.replace(",", " ").split())
    if path is not None:
        written, pkg = _path_package(path, os.path.dirname(manifest))
        if pkg.get("name") != name:
            raise McppError(f"--path {path} holds package `{pkg.get('name')}`, not `{name}`")
        namespace = namespace or pkg.get("namespace") or DEFAULT_NAMESPACE
        version = requirement if requirement is not None else pkg.get("version")
        wanted = Wanted(namespace, name, version if isinstance(version, str) else None, written,
                        wanted_features, no_default_features)
    else:
        from ..edit.index_lookup import chosen_release
        from ..registry.location import open_index

        namespace = namespace or DEFAULT_NAMESPACE
        index = open_index(ctx.settings, f"`mcpp add {spec}`")
        release = chosen_release(index, namespace, name, requirement)
        wanted = Wanted(namespace, name, requirement if requirement is not None else release, None,
                        wanted_features, no_default_features)
    edited, updated = add_entry(text, display_path(manifest), wanted, dev)
    section = "dev-dependencies" if dev else "dependencies"
    what = f"{wanted.display} {wanted.version or ''}".rstrip() + (f" (path {wanted.path})" if wanted.path else "")
    _edited(ctx, manifest, edited, "Updating" if updated else "Adding",
            f"{what} {'in' if updated else 'to'} {section}")
    if wanted_features:
        reporter.status("Features", " ".join(f"+ {f}" for f in wanted_features))


@click.command("remove")
@click.argument("name")
@click.option("--dev", is_flag=True, help="Remove from [dev-dependencies].")
@click.pass_obj
def remove_cmd(ctx, name, dev):
    """Remove the dependency NAME (`name` or `namespace.name`) from mcpp.toml."""
    from ..edit.manifest_edit import DEFAULT_NAMESPACE, remove_entry

    namespace, bare = _name(name)
    manifest, text = _manifest(ctx)
    edited = remove_entry(text, display_path(manifest), namespace or DEFAULT_NAMESPACE, bare, dev)
    _edited(ctx, manifest, edited, "Removing", f"{name} from {'dev-dependencies' if dev else 'dependencies'}")


def _edited(ctx, manifest: str, text: str, verb: str, message: str) -> None:
    """The one place an edited manifest is written (atomically) and reported."""
    from ..edit.manifest_edit import write_manifest

    from ..registry.session import refresh_lock

    with open(manifest, encoding="utf-8") as f:
        previous = f.read()
    write_manifest(manifest, text)
    try:
        # The lock follows the manifest, or the edit is undone: a manifest the lock cannot satisfy
        # (a requirement no release meets, a conflict) is never left behind.
        refresh_lock(manifest, ctx.settings)
    except BaseException:
        write_manifest(manifest, previous)
        raise
    ctx.reporter().status(verb, message)
