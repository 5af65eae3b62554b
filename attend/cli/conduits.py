"""CLI handlers for the conduits: ``attend run`` (the sensor loop) and ``attend log``. The drain
lives on ``attend inbox --drain`` (messaging.py), and its hook form usually never reaches click."""

from __future__ import annotations

import sys

import click

from attend.cli.common import context, emit, json_option
from attend.conduits import loop as sensor
from attend.verbs import log as log_verb


@click.command(help=sensor.DESCRIPTION)
def run() -> None:
    code = sensor.run(context(), sensor.stdout_writer(), lambda line: click.echo(line, err=True))
    if code:
        raise click.exceptions.Exit(code)


def _log_text(tail: log_verb.LogTail) -> str:
    return "\n".join(tail.lines) if tail.lines else f"the log is empty ({tail.path})"


@click.command(help=log_verb.DESCRIPTION)
@click.option("--lines", "-n", default=50, show_default=True, help=log_verb.PARAMS["lines"])
@json_option
def log(lines: int, as_json: bool) -> None:
    emit(log_verb.run(context(), lines), as_json, _log_text)


def drain_hook() -> None:
    """``inbox --drain --format hook`` when it did reach click (flags in an unusual order)."""
    from attend.conduits import drain, fastdrain

    code = drain.hook_main(fastdrain.read_payload(), sys.stdout, sys.stderr)
    raise click.exceptions.Exit(code)


def drain_plain() -> None:
    from attend.conduits import drain

    drain.plain(context(), sys.stdout, sys.stderr)
