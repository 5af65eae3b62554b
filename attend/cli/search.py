"""CLI handler for `attend search` when it reaches click (``--help``, an unusual command line); its plain
forms take the fast path, attend.cli.fastsearch, which draws the results for both."""

from __future__ import annotations

import sys

import click

from attend.cli.app import epilog
from attend.cli.common import context, emit, json_option
from attend.cli.fastsearch import search_text
from attend.verbs import search as search_verb

P = search_verb.PARAMS


@click.command(help=search_verb.DESCRIPTION, epilog=epilog(search_verb.EXAMPLES))
@click.argument("query", nargs=-1)
@click.option("--limit", "-n", type=int, default=10, show_default=True, help=P["limit"])
@click.option("--from", "sender", metavar="NAME", help=P["sender"])
@click.option("--room", multiple=True, metavar="ROOM", help=P["room"])
@click.option("--since", metavar="WHEN", help=P["since"])
@click.option("--re", "re_", metavar="ID", help=P["re"])
@click.option("--utc", is_flag=True, help="Show times in UTC, not local time.")
@json_option
def search(
    query: tuple[str, ...],
    limit: int,
    sender: str | None,
    room: tuple[str, ...],
    since: str | None,
    re_: str | None,
    utc: bool,
    as_json: bool,
) -> None:
    req = search_verb.SearchRequest(" ".join(query), limit, sender, room, since, re_)
    result = search_verb.run(context(), req)
    emit(result, as_json, lambda r: search_text(r, utc, sys.stdout.isatty()))
    for note in result.notes:
        click.echo(f"attend: note: {note}", err=True)
