"""CLI handler for ``attend relay`` (the verb is attend.verbs.relay)."""

from __future__ import annotations

import click

from attend.cli.app import epilog
from attend.cli.common import context, emit, json_option
from attend.verbs import relay as relay_verb


def _text(r: relay_verb.RelayReport) -> str:
    lines = [f"problem: {p}" for p in r.problems] + [f"note: {n}" for n in r.notes] + r.done
    if (r.ok and not r.done and not r.notes) or (r.ok and r.host and not r.done):
        lines.append(f"relay for host {r.host}: ok ({r.queued} waiting in the outbox)")
    return "\n".join(lines)


@click.command(help=relay_verb.DESCRIPTION, epilog=epilog(relay_verb.EXAMPLES))
@click.option("--check", is_flag=True, help=relay_verb.PARAMS["check"])
@click.option("--provision", metavar="HOSTS", help=relay_verb.PARAMS["provision"])
@click.option("--replicas", type=click.IntRange(1, 5), default=1, show_default=True, help=relay_verb.PARAMS["replicas"])
@click.option("--off", is_flag=True, help=relay_verb.PARAMS["off"])
@json_option
def relay(check: bool, provision: str | None, replicas: int, off: bool, as_json: bool) -> None:
    if sum((check, provision is not None, off)) > 1:
        raise click.UsageError("choose one of --check, --provision, --off")
    req = relay_verb.RelayRequest(check, provision, replicas, off, warn=lambda line: click.echo(line, err=True))
    try:
        result = relay_verb.run(context(), req)
    except relay_verb.RelayExtraMissing as e:  # the line says what to install; "attend: " would only repeat
        click.echo(str(e), err=True)
        raise SystemExit(1) from None
    if check or provision is not None or off or result.problems:
        emit(result, as_json, _text)
    if not result.ok:
        raise SystemExit(result.code or 1)
