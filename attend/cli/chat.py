"""CLI handler for `attend chat`: open the seat (every refusal is one line, before any screen), then
hand the terminal to the Textual app. textual is imported here, inside the handler, and nowhere else
on the CLI's paths: `attend --help`, `send` and the drain never pay for it."""

from __future__ import annotations

import sys

import click

from attend.cli.app import epilog
from attend.cli.common import context
from attend.errors import UsageError
from attend.verbs import chat as chat_verb


@click.command(help=chat_verb.DESCRIPTION, epilog=epilog(chat_verb.EXAMPLES))
@click.option("--room", metavar="ROOM", help=chat_verb.PARAMS["room"])
def chat(room: str | None) -> None:
    ctx = context()  # a refused spool (foreign owner, group-writable) fails here, one line
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("attend chat needs a terminal; attend tail and attend inbox work without one")
    seat = chat_verb.run(ctx, chat_verb.ChatRequest(room))  # a bad --room, or a Claude session: refused here
    from attend.chat.app import ChatApp  # the one import of the TUI framework

    ChatApp(ctx, seat).run()
