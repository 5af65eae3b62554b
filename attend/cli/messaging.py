"""CLI handlers for the message verbs that write: send and reply (inbox, peers, status, whoami and
mute live in modules of their own, so each command imports only its verb)."""

from __future__ import annotations

import sys

import click

from attend.cli.app import epilog
from attend.cli.body import message_body
from attend.cli.common import complete, context, emit, json_option, quiet_option
from attend.cli.render import sent_line
from attend.verbs import reply as reply_verb
from attend.verbs import send as send_verb


@click.command(help=send_verb.DESCRIPTION, epilog=epilog(send_verb.EXAMPLES))
@click.option("--to", help=send_verb.PARAMS["to"], shell_complete=complete("to"))
@click.option("--channel", help=send_verb.PARAMS["channel"], shell_complete=complete("channel"))
@click.option("--broadcast", is_flag=True, help=send_verb.PARAMS["broadcast"])
@click.option("--re", "re_", metavar="ID", help=send_verb.PARAMS["re"], shell_complete=complete("id"))
@click.option("--on-behalf-of", metavar="ID", help=send_verb.PARAMS["on_behalf_of"])
@json_option
@quiet_option
@click.argument("message", nargs=-1)
def send(
    to: str | None,
    channel: str | None,
    broadcast: bool,
    re_: str | None,
    on_behalf_of: str | None,
    as_json: bool,
    message: tuple[str, ...],
) -> None:
    req = send_verb.SendRequest(message_body(message, sys.stdin), to, channel, broadcast, re_, on_behalf_of)
    emit(send_verb.run(context(), req), as_json, sent_line)


@click.command(help=reply_verb.DESCRIPTION, epilog=epilog(reply_verb.EXAMPLES))
@click.option("--re", "re_", metavar="ID", help=reply_verb.PARAMS["re"], shell_complete=complete("id"))
@click.option(
    "--to", help=reply_verb.PARAMS["to"] + " A message id here names the parent.", shell_complete=complete("to")
)
@click.option("--channel", help=reply_verb.PARAMS["channel"], shell_complete=complete("channel"))
@click.option("--broadcast", is_flag=True, help=reply_verb.PARAMS["broadcast"])
@click.option("--on-behalf-of", metavar="ID", help=reply_verb.PARAMS["on_behalf_of"])
@json_option
@quiet_option
@click.argument("message", nargs=-1)
def reply(
    re_: str | None,
    to: str | None,
    channel: str | None,
    broadcast: bool,
    on_behalf_of: str | None,
    as_json: bool,
    message: tuple[str, ...],
) -> None:
    req = reply_verb.ReplyRequest(message_body(message, sys.stdin), re_, to, channel, broadcast, on_behalf_of)
    emit(reply_verb.run(context(), req), as_json, sent_line)
