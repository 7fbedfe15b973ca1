"""`mcpp payload list|fetch`: the build's payload environment without building.

Both fold the manifests exactly as `mcpp build` with the same flags would (target, accel set,
features), so what they show is what that build would use. `list` installs nothing (a payload
not in the store yet says so) and runs no `system` probe (a root not probed yet says so);
`fetch` installs what is missing and probes, in the sandbox, what it adopts. `sign` signs an
index's descriptors (docs/payloads.md, "Signed indexes").
"""
from __future__ import annotations

import json
import os

import click

from ..package.graph import load_graph
from ..package.model import Selection
from ..payloads import resolve_environment


def _flags(fn):
    """The flags that decide what a build folds (as `mcpp build` spells them)."""
    options = [
        click.option("--target", "target", metavar="TRIPLE", default=None, help="Target triple (default: the host)."),
        click.option("--accel", "accel", metavar="SPEC", default=None,
                     help="Accelerator set, e.g. 'cuda12.9+{sm_89}' (default: [build] accel)."),
        click.option("--no-accel", "no_accel", is_flag=True, help="The empty accelerator set."),
        click.option("--strict", is_flag=True, help="Unknown manifest keys are errors, not warnings."),
        click.option("--features", "features", multiple=True, metavar="LIST",
                     help="Comma- or space-separated features to activate."),
        click.option("--all-features", is_flag=True, help="Activate every feature."),
        click.option("--no-default-features", is_flag=True, help="Do not activate the `default` feature."),
        click.option("-p", "--package", "packages", multiple=True, metavar="NAME", help="Package(s) to build."),
    ]
    for opt in reversed(options):
        fn = opt(fn)
    return fn


def _environment(ctx, kw: dict, install: bool):
    features = tuple(f for v in kw["features"] for f in v.replace(",", " ").split())
    selection = Selection(packages=kw["packages"], features=features,
                          all_features=kw["all_features"], no_default_features=kw["no_default_features"],
                          target=kw["target"], accel=kw["accel"], no_accel=kw["no_accel"], strict=kw["strict"])
    graph = load_graph(os.getcwd(), ctx.manifest_path, selection)
    reporter = ctx.reporter()
    for pkg in graph.order:
        for w in pkg.manifest.warnings:
            reporter.raw_warning(w)
    return resolve_environment(graph, ctx.settings, install_missing=install,
                               status=reporter.status, warn=reporter.warning)


def describe(p) -> list[str]:
    """The lines `mcpp payload list` prints for one resolved payload."""
    return [f"{p.address} {p.version} ({p.axis} axis, {p.source})",
            f"    declared by `{p.declared_by}` at {p.declared_at}: {p.why}",
            f"    {p.where()}"]


@click.group("payload")
def payload_group():
    """The payload environment of this build (docs/payloads.md)."""


@payload_group.command("list")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@_flags
@click.pass_obj
def list_cmd(ctx, fmt, **kw):
    """Each payload this build resolves: version, axis, which declaration won and why, where installed."""
    env = _environment(ctx, kw, install=False)
    if fmt == "json":
        click.echo(json.dumps(env.to_json(), indent=2, sort_keys=True))
        return
    if not env.payloads:
        click.echo("no payloads: this build declares none")
    for p in env.payloads:
        click.echo("\n".join(describe(p)))


@payload_group.command("fetch")
@_flags
@click.pass_obj
def fetch_cmd(ctx, **kw):
    """Install this build's payloads without building."""
    env = _environment(ctx, kw, install=True)
    reporter = ctx.reporter()
    reporter.status("Fetched", f"{len(env.payloads)} payload{'' if len(env.payloads) == 1 else 's'}")


@payload_group.command("sign")
@click.option("--key", "key_path", required=True, metavar="NAME.secret",
              help="The secret key (`mcpp cache keygen NAME` writes one).")
@click.argument("index_dir", default=".", type=click.Path(file_okay=False))
def sign_cmd(key_path, index_dir):
    """Sign every descriptor of the local index INDEX_DIR: writes pkgs/<ns>/<name>.toml.sig."""
    from mcpp.cas.remote.signing import SigningKeyError, load_secret_key

    from ..core.errors import McppError
    from ..payloads.signature import sign_index

    if not os.path.isfile(os.path.join(index_dir, "index.toml")):
        raise McppError(f"{index_dir} is not a payload index (no index.toml)")
    try:
        key = load_secret_key(key_path)
    except SigningKeyError as e:
        raise McppError(str(e)) from None
    signed = sign_index(index_dir, key)
    click.echo(f"signed {len(signed)} descriptor{'' if len(signed) == 1 else 's'} of {index_dir} with "
               f"{key.public}", err=True)
