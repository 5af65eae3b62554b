"""CLI handlers for `attend lease`, `attend release` and `attend leases` (docs/architecture/leases.md)."""

from __future__ import annotations

import sys

import click

from attend.cli.app import epilog
from attend.cli.common import context, emit, json_option
from attend.verbs import lease as lease_verb
from attend.verbs import leases as leases_verb
from attend.verbs import release as release_verb


def untouched_lines(items: list[lease_verb.NotTouched], verb: str) -> list[str]:
    return [f"  not {verb} {u.glob}: {u.why}" for u in items]


def _leased_text(r: lease_verb.Leased) -> str:
    lines = [f"leased for {r.holder} in {r.root}:" if r.granted else f"nothing leased for {r.holder} in {r.root}"]
    for g in r.granted:
        how = "shared" if g.shared else "exclusive"
        until = f" until {g.until}" if g.until else " while this session lives"
        lines.append(f"  {g.glob} ({how}{until})")
    return "\n".join(lines + untouched_lines(r.not_granted, "leased"))


def _released_text(r: release_verb.Released) -> str:
    head = f"released {len(r.released)} lease{'s' if len(r.released) != 1 else ''} of {r.holder}"
    lines = [head + (":" if r.released else "")] + [f"  {g.glob} ({g.root})" for g in r.released]
    return "\n".join(lines + untouched_lines(r.not_released, "released"))


def _leases_text(r: leases_verb.Leases) -> str:
    if not r.leases:
        return "no leases held"
    lines = []
    for x in r.leases:
        client = f" ({x.client})" if x.client else ""
        how = ", shared" if x.shared else ""
        until = f", until {x.until}" if x.until else ""
        why = f": {x.reason}" if x.reason else ""
        where = f"{x.repo} {x.glob}" if x.repo else f"{x.root}/{x.glob}"
        lines.append(f"{x.holder}{client}  {where}  since {x.since}{how}{until}{why}")
    return "\n".join(lines)


@click.command(help=lease_verb.DESCRIPTION, epilog=epilog(lease_verb.EXAMPLES))
@click.argument("globs", nargs=-1, required=True)
@click.option("--reason", metavar="TEXT", help=lease_verb.PARAMS["reason"])
@click.option("--shared", is_flag=True, help=lease_verb.PARAMS["shared"])
@click.option("--for", "duration", metavar="DURATION", help=lease_verb.PARAMS["duration"])
@json_option
def lease(globs: tuple[str, ...], reason: str | None, shared: bool, duration: str | None, as_json: bool) -> None:
    req = lease_verb.LeaseRequest(globs, reason, shared, duration)
    result = lease_verb.run(context(), req)
    emit(result, as_json, _leased_text)
    if result.not_granted and not result.granted:
        sys.exit(1)


@click.command(help=release_verb.DESCRIPTION, epilog=epilog(release_verb.EXAMPLES))
@click.argument("globs", nargs=-1)
@click.option("--holder", metavar="NAME", help=release_verb.PARAMS["holder"])
@json_option
def release(globs: tuple[str, ...], holder: str | None, as_json: bool) -> None:
    ctx = context()
    if holder is not None:
        # Another session's leases are the human's to release, confirmed at a terminal (/dev/tty): no
        # flag stands in for the answer, so no process without a terminal can do it.
        what = ", ".join(globs) if globs else "every lease"
        ctx.human(release_verb.HUMAN_ACTION, f"attend: release {what} of {holder}? Its session is not asked.")
    emit(release_verb.run(ctx, release_verb.ReleaseRequest(globs, holder)), as_json, _released_text)


@click.command(help=leases_verb.DESCRIPTION, epilog=epilog(leases_verb.EXAMPLES))
@json_option
def leases(as_json: bool) -> None:
    emit(leases_verb.run(context(), leases_verb.LeasesRequest()), as_json, _leases_text)
