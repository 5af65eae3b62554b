"""CLI handlers for `attend peers` and `attend status` when they reach click (``--help``, an unusual
command line); their plain forms take the fast path, attend.cli.fastquery, which draws both tables."""

from __future__ import annotations

import click

from attend.cli.app import epilog
from attend.cli.common import context, emit, json_option
from attend.cli.fastquery import peers_text, status_text
from attend.verbs import peers as peers_verb
from attend.verbs import status as status_verb


@click.command(help=peers_verb.DESCRIPTION, epilog=epilog(peers_verb.EXAMPLES))
@click.option("--utc", is_flag=True, help="Show times in UTC, not local time.")
@json_option
def peers(utc: bool, as_json: bool) -> None:
    emit(peers_verb.run(context(), peers_verb.PeersRequest()), as_json, lambda r: peers_text(r, utc))


@click.command(help=status_verb.DESCRIPTION, epilog=epilog(status_verb.EXAMPLES))
@json_option
def status(as_json: bool) -> None:
    emit(status_verb.run(context(), status_verb.StatusRequest()), as_json, status_text)
