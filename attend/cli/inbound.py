"""CLI handler for `attend inbound`: what waits, the rule, and the decisions."""

from __future__ import annotations

import click

from attend.cli.app import epilog
from attend.cli.common import context, emit, json_option
from attend.cli.render import table
from attend.verbs import inbound as inbound_verb


def _text(r: inbound_verb.Inbound) -> str:
    lines = []
    if r.decided:
        verb = "declined" if r.action == "decline" else "accepted"
        lines.append(
            f"{verb} {', '.join(r.decided)}" + ("" if verb == "declined" else ": shown once, at the next look")
        )
    if r.rule:
        lines.append("rule: " + ", ".join(f"{c} {r.rule[c]}" for c in r.rule))
    if r.waiting:
        rows = [
            [w.id, w.session_name, w.sender, w.sender_class, w.at + (" unreviewed" if w.unreviewed else ""), w.subject]
            for w in r.waiting
        ]
        lines.append(f"{len(r.waiting)} waiting:")
        lines.append(table(rows, ["Id", "For", "From", "Class", "Since", "Subject"]))
        lines.append("attend inbound accept ID shows one; attend inbound decline ID keeps it unshown")
    elif r.action == "list" or not r.decided:
        lines.append("nothing waits")
    return "\n".join(lines)


@click.command(help=inbound_verb.DESCRIPTION, epilog=epilog(inbound_verb.EXAMPLES))
@click.argument("action", required=False, type=click.Choice(inbound_verb.ACTIONS))
@click.argument("msg_id", required=False, metavar="[ID]")
@click.option("--from", "senders", metavar="CLASSES", help=inbound_verb.PARAMS["senders"])
@click.option("--session", metavar="NAME", help=inbound_verb.PARAMS["session"])
@json_option
def inbound(action: str | None, msg_id: str | None, senders: str | None, session: str | None, as_json: bool) -> None:
    req = inbound_verb.InboundRequest(action, msg_id, senders, session)
    emit(inbound_verb.run(context(), req), as_json, _text)
