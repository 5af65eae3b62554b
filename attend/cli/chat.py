"""CLI handler for `attend chat`, for the lines click parses (``--help``, a bad option); a plain
``chat`` or ``chat --room ROOM`` takes attend/cli/fastchat.py from the console entry, with the same
two steps. textual is imported there, inside ``show``, and nowhere else on the CLI's paths:
`attend --help`, `send` and the drain never pay for it."""

from __future__ import annotations

import click

from attend.cli import fastchat
from attend.cli.app import epilog
from attend.verbs import chat as chat_verb


@click.command(help=chat_verb.DESCRIPTION, epilog=epilog(chat_verb.EXAMPLES))
@click.option("--room", metavar="ROOM", help=chat_verb.PARAMS["room"])
def chat(room: str | None) -> None:
    ctx, seat = fastchat.open_seat(room)  # every refusal is one line, before any screen
    fastchat.show(ctx, seat)
