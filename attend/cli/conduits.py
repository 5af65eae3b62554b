"""CLI handlers for the conduits: ``attend run`` (the sensor loop) and ``attend log``. The drain
lives on ``attend inbox --drain`` (inbox.py), and its hook form usually never reaches click."""

from __future__ import annotations

import sys

import click

from attend.cli.app import epilog
from attend.cli.common import context, emit, json_option
from attend.domain.sessions.context import Context
from attend.verbs import drain as drain_verb
from attend.verbs import log as log_verb
from attend.verbs import run as run_verb


@click.command(help=run_verb.DESCRIPTION, epilog=epilog(run_verb.EXAMPLES))
def run() -> None:
    from attend.conduits import loop

    req = run_verb.RunRequest(write=loop.stdout_writer(), warn=lambda line: click.echo(line, err=True))
    code = run_verb.run(context(), req)
    if code:
        raise click.exceptions.Exit(code)


def _log_text(tail: log_verb.LogTail) -> str:
    return "\n".join(tail.lines) if tail.lines else f"the log is empty ({tail.path})"


@click.command(help=log_verb.DESCRIPTION, epilog=epilog(log_verb.EXAMPLES))
@click.option("--lines", "-n", default=50, show_default=True, help=log_verb.PARAMS["lines"])
@json_option
def log(lines: int, as_json: bool) -> None:
    emit(log_verb.run(context(), log_verb.LogRequest(lines)), as_json, _log_text, paged=True)


def drain_hook() -> None:
    """``inbox --drain --format hook`` when it did reach click (flags in an unusual order)."""
    from attend.conduits import fastdrain

    req = drain_verb.DrainRequest("hook", fastdrain.read_payload(), sys.stdout, sys.stderr)
    # The hook form opens (or is refused) the spool itself, and never fails the turn end.
    raise click.exceptions.Exit(drain_verb.run(Context.for_env(), req))


def drain_plain() -> None:
    drain_verb.run(context(), drain_verb.DrainRequest("plain", out=sys.stdout, err=sys.stderr))
