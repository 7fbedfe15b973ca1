"""`mcpp cache dir|stats|verify|gc|clean` and `mcpp explain`: looking into the stores."""
from __future__ import annotations

import json
import os

import click

from mcpp.cas.home import Home
from mcpp.cas.units import format_size, parse_age, parse_size

from ..core.errors import McppError
from ..core.settings import command_settings


def _home() -> Home:
    """The command's home (engine/core/settings.py)."""
    return command_settings().home


@click.group("cache")
def cache_group():
    """Inspect and manage the local stores under $MCPP_HOME."""


@cache_group.command("dir")
def cache_dir():
    """Print the mcpp home directory."""
    click.echo(str(_home().root.absolute()))


@cache_group.command("stats")
@click.option("--format", "fmt", type=click.Choice(["human", "json"]), default="human")
def cache_stats(fmt):
    """Blob count, stored vs uncompressed bytes, action entries, hit rate of the last build."""
    from mcpp.cas import maintenance  # only these commands need it (its imports cost a cold start)
    home = _home()
    s = maintenance.stats(home)
    last = _last_build(home)
    if fmt == "json":
        click.echo(json.dumps({**s, "last_build": last}))
        return
    ratio = (s["uncompressed_bytes"] / s["stored_bytes"]) if s["stored_bytes"] else 0.0
    click.echo(f"home:            {s['home']}")
    click.echo(f"blobs:           {s['blobs']}")
    click.echo(f"stored:          {format_size(s['stored_bytes'])} "
               f"({format_size(s['uncompressed_bytes'])} uncompressed, {ratio:.2f}x)")
    click.echo(f"action entries:  {s['action_entries']} ({s['manifests']} header manifests)")
    click.echo(f"materialized:    {s['materialized_files']} files, {format_size(s['materialized_bytes'])}")
    if last:
        looked_up = last["cache_hits"] + last["executed"] + last["failed"]
        # No lookup (everything up to date) has no rate: "100%" would claim hits that never happened.
        rate = f"hit rate {100.0 * last['cache_hits'] / looked_up:.0f}%" if looked_up else "no cache lookups"
        click.echo(f"last build:      {last['cache_hits']} cache hits, {last['executed']} executed, "
                   f"{last['fresh']} up to date; {rate}")
    else:
        click.echo("last build:      none recorded")


@cache_group.command("verify")
@click.option("--delete", is_flag=True, help="Remove the corrupted blobs (the next build re-creates them).")
def cache_verify(delete):
    """Re-hash every blob and materialized file; name the corrupted ones (exit 1 when there are any)."""
    from mcpp.cas import maintenance  # only these commands need it (its imports cost a cold start)
    bad = maintenance.verify(_home(), delete=delete)
    tampered = maintenance.verify_materialized(_home())
    for path in tampered:
        click.echo(f"changed in place: {path} (re-materialized from the store)", err=True)
    if not bad and tampered:
        err = McppError(f"{len(tampered)} materialized file(s) no longer matched their digest")
        err.exit_code = 1
        raise err
    if not bad:
        click.echo("all blobs verified")
        return
    for d in bad:
        click.echo(f"corrupted: {d.hash}", err=True)
    raise _corrupt(len(bad), delete)


def _corrupt(n: int, deleted: bool) -> McppError:
    err = McppError(f"{n} corrupted blob(s) in the store"
                    + (" (removed)" if deleted else "; `mcpp cache verify --delete` removes them"))
    err.exit_code = 1
    return err


@cache_group.command("gc")
@click.option("--max-size", metavar="SIZE", help="Evict least recently used things until everything under the "
              "home fits (e.g. 500M, 2G; else [cache] max-size after builds).")
@click.option("--older-than", metavar="AGE", help="Evict entries not used for AGE (e.g. 7d, 12h).")
def cache_gc(max_size, older_than):
    """Evict least recently used entries; never a blob a remaining entry needs."""
    from ..payloads.gc import gc as payload_gc
    from mcpp.cas import maintenance  # only these commands need it (its imports cost a cold start)
    try:
        size = parse_size(max_size) if max_size else None
        age = parse_age(older_than) if older_than else None
    except ValueError as e:
        raise click.BadParameter(str(e))
    if size is not None:
        _bound(size, age)
        payloads = payload_gc(str(_home().payloads), older_than_s=age)
        if payloads.temp_removed:
            click.echo(f"swept {payloads.temp_removed} interrupted payload install(s)")
        return
    report = maintenance.gc(_home(), max_size=size, older_than_s=age)
    click.echo(f"removed {report.entries_removed} action entries and {report.blobs_removed} blobs; "
               f"freed {format_size(report.bytes_freed)}, {format_size(report.bytes_after)} remain")
    payloads = payload_gc(str(_home().payloads), older_than_s=age)
    if payloads.removed:
        click.echo(f"removed {len(payloads.removed)} payload(s) unused for {older_than}: {', '.join(payloads.removed)}")
    if payloads.temp_removed:
        click.echo(f"swept {payloads.temp_removed} interrupted payload install(s)")
    if size is not None and report.bytes_after > size:
        # Never leave the user guessing why the limit was not reached.
        why = [f"note: the store is still above {format_size(size)}"]
        if report.grace_blobs:
            why.append(f"note: {report.grace_blobs} unreferenced blob(s) ({format_size(report.grace_bytes)}) were "
                       f"written less than {report.grace_s / 60:.0f} minutes ago and are kept in case a running "
                       f"build still needs them; run `mcpp cache gc` again later, or `mcpp cache clean` "
                       f"when no build is running")
        rest = report.bytes_after - report.grace_bytes
        if rest > 0:
            why.append(f"note: {format_size(rest)} is held by action entries and the blobs they name")
        click.echo("\n".join(why), err=True)


def _bound(size: int, age: float | None) -> None:
    """--max-size: everything under the home, not only the store (engine/state/home_gc.py)."""
    from ..state.home_gc import bound

    home = _home()
    r = bound(home, size, older_than_s=age)
    others = "".join(f", {n} {kind}" for kind, n in sorted(r.removed.items()))
    click.echo(f"removed {r.store.entries_removed} action entries and {r.store.blobs_removed} blobs{others}; "
               f"freed {format_size(max(0, r.before - r.after))}, {format_size(r.after)} remain under {home.root}")
    if r.after > size:
        minutes = f"{r.store.grace_s / 60:.0f} minutes"
        why = [f"note: the store is still above {format_size(size)} (everything under {home.root})"]
        if r.store.grace_blobs:
            why.append(f"note: {r.store.grace_blobs} unreferenced blob(s) ({format_size(r.store.grace_bytes)}) were "
                       f"written less than {minutes} ago and are kept in case a running build still needs them")
        if r.kept_recent:
            why.append(f"note: {format_size(r.kept_recent)} of materialized files, logs, host tools or payloads "
                       f"was used less than {minutes} ago and is kept")
        if r.store.grace_blobs or r.kept_recent:
            why.append("note: run `mcpp cache gc` again later, or `mcpp cache clean` when no build is running")
        click.echo("\n".join(why), err=True)


@cache_group.command("clean")
def cache_clean():
    """Empty the stores (blobs, action cache, materialized files, host tools, prepared input trees)."""
    from mcpp.cas import maintenance  # only these commands need it (its imports cost a cold start)
    from mcpp.sandbox.input_tree import TREES_DIR, discard_trees
    home = _home()
    maintenance.clean(home)
    discard_trees(os.path.join(home.root, "sandbox", TREES_DIR))  # those a running build holds stay
    click.echo(f"emptied {home.root}")


def _last_build(home: Home) -> dict | None:
    try:
        with open(home.last_build) as f:
            last = json.load(f)
    except (OSError, ValueError):
        return None
    keys = ("fresh", "cache_hits", "remote_hits", "executed", "failed")
    if not isinstance(last, dict) or not all(type(last.get(k, 0)) is int for k in keys):
        return None  # wrong-shaped (a hand edit, another version): as if none were recorded
    return {k: last.get(k, 0) for k in keys}


@cache_group.command("keygen")
@click.argument("name")
def cache_keygen(name):
    """Create a signing key pair for the remote cache: NAME.secret (mode 0600) and NAME.public."""
    from mcpp.cas.remote.signing import SigningKeyError, write_key_pair

    try:
        secret, public, key = write_key_pair(name)
    except SigningKeyError as e:
        raise McppError(str(e)) from None
    click.echo(f"wrote {secret} (keep it secret: only the machine that uploads needs it) and {public}", err=True)
    click.echo(str(key))
