"""CLI handlers for the message verbs: send, reply, inbox, peers, status, whoami, mute, unmute."""

from __future__ import annotations

import sys

import click

from attend.cli.app import epilog
from attend.cli.body import message_body
from attend.cli.common import complete, context, emit, json_option, quiet_option, table
from attend.cli.fastquery import peers_text, status_text
from attend.cli.mcp import wait_option
from attend.cli.render import sent_line
from attend.domain import framing
from attend.verbs import drain as drain_verb
from attend.verbs import inbox as inbox_verb
from attend.verbs import mute as mute_verb
from attend.verbs import peers as peers_verb
from attend.verbs import reply as reply_verb
from attend.verbs import send as send_verb
from attend.verbs import status as status_verb
from attend.verbs import unmute as unmute_verb
from attend.verbs import whoami as whoami_verb


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


UTC_HELP = "Show times in UTC, not local time."


def _message_block(m: inbox_verb.Message, utc: bool, columns: int | None) -> str:
    from attend.cli import terminal

    # Everything but the id and the time was written by someone else: labels and one-line
    # fields, and the body's further lines aligned under its first (attend.domain.framing).
    lines = [
        # The client was checked as a bare token when the message was parsed (attend.domain.envelope).
        f"[{framing.label(m.scope)}] {framing.label(m.sender)} ({m.from_kind}{', ' + m.client if m.client else ''})",
        f"  when:    {terminal.when(m.at, utc)}",
        f"  id:      {m.id}",
    ]
    if m.re:
        lines.append(f"  re:      {framing.inline(m.re)}")
    if m.on_behalf_of:
        lines.append(f"  for:     {framing.inline(m.on_behalf_of)}")
    lines.append(f"  to:      {framing.inline(m.to_name or m.to)}")
    lines.append(terminal.hang("  message: ", "\n".join(framing.trimmed(m.body)), columns))
    return "\n".join(lines)


def _inbox_text(result: inbox_verb.Inbox, utc: bool = False) -> str:
    from attend.cli import terminal

    columns = terminal.width()
    head = ""
    if result.unread:
        # The human's own mail first, oldest first as it arrived; now marked read.
        count = len(result.unread)
        shown = "\n\n".join(_message_block(m, utc, columns) for m in result.unread)
        head = f"{count} unread, to you:\n\n{shown}\n\n"
        head += "--- the rest, newest first ---\n\n" if result.messages else ""
    if not result.messages:
        if head:
            return head.rstrip("\n")
        if result.sent:
            return "nothing sent" if result.page == 1 else f"nothing sent on page {result.page}"
        # Own messages are never listed; say so, or a sender's first look reads as "nothing arrived".
        return "no messages from others" if result.page == 1 else f"no messages on page {result.page}"
    blocks = [_message_block(m, utc, columns) for m in result.messages]
    footer = f"page {result.page} · {len(result.messages)} {'sent' if result.sent else 'shown'}"
    if result.older:
        again = "attend inbox --sent" if result.sent else "attend inbox"
        footer += f" · older: {again} --page {result.page + 1} (or --before {result.messages[-1].id})"
    return head + "\n\n".join(blocks) + "\n\n" + footer


@click.command(help=inbox_verb.DESCRIPTION, epilog=epilog(inbox_verb.EXAMPLES))
@click.argument("msg_id", required=False, metavar="[ID]", shell_complete=complete("id"))
@click.option("--limit", default=25, show_default=True, help=inbox_verb.PARAMS["limit"])
@click.option("--page", default=1, show_default=True, help=inbox_verb.PARAMS["page"])
@click.option("--before", metavar="ID", help=inbox_verb.PARAMS["before"])
@click.option("--room", multiple=True, help=inbox_verb.PARAMS["room"])
@click.option("--all", "all_", is_flag=True, help=inbox_verb.PARAMS["all"])
@click.option("--status", "receipt", is_flag=True, help=inbox_verb.PARAMS["status"])
@click.option("--from", "sender", metavar="WHO", help=inbox_verb.PARAMS["sender"])
@click.option("--grep", metavar="PATTERN", help=inbox_verb.PARAMS["grep"])
@click.option("--since", metavar="WHEN", help=inbox_verb.PARAMS["since"])
@click.option("--utc", is_flag=True, help=UTC_HELP)
@click.option("--sent", is_flag=True, help=inbox_verb.PARAMS["sent"])
@click.option("--drain", is_flag=True, help=drain_verb.DESCRIPTION)
@click.option("--format", "fmt", type=click.Choice(drain_verb.FORMATS), help=drain_verb.PARAMS["format"])
@wait_option
@json_option
def inbox(
    msg_id: str | None,
    limit: int,
    page: int,
    before: str | None,
    room: tuple[str, ...],
    all_: bool,
    receipt: bool,
    sender: str | None,
    grep: str | None,
    since: str | None,
    utc: bool,
    sent: bool,
    drain: bool,
    fmt: str | None,
    as_json: bool,
) -> None:
    if drain or fmt:
        from attend.cli import conduits

        if not drain:
            raise click.UsageError("--format applies to --drain only; add --drain or drop --format")
        if msg_id is not None:
            raise click.UsageError("--drain takes no message id; drop the id, or read it with attend inbox ID")
        ctx = click.get_current_context()
        given = [
            param.opts[0]
            for param in ctx.command.params
            if param.name not in ("drain", "fmt")
            and ctx.get_parameter_source(param.name or "") == click.core.ParameterSource.COMMANDLINE
        ]
        if given:
            raise click.UsageError(
                "--drain takes everything pending and has its own output (--format plain|hook); "
                f"drop {', '.join(given)}"
            )
        if fmt == "hook":
            conduits.drain_hook()
        else:
            conduits.drain_plain()
        return
    req = inbox_verb.InboxRequest(msg_id, limit, page, before, room, all_, receipt, sender, grep, since, sent)
    result = inbox_verb.run(context(), req)
    if result.receipt is not None:
        emit(result, as_json, _receipt_text)
    else:
        emit(result, as_json, lambda r: _inbox_text(r, utc), paged=True)


def _receipt_text(result: inbox_verb.Inbox) -> str:
    r = result.receipt
    assert r is not None
    head = f"{r.id} in {result.messages[0].scope}: {r.delivered} delivered, {r.claimed} claimed, {r.seen} seen"
    if r.missing:
        head += f", {r.missing} missing (attend doctor repairs)"
    rows = [[d.display, d.session_id, d.state] for d in r.recipients]
    return head + ("\n" + table(rows, ["Recipient", "Session", "State"]) if rows else "\nno recipients")


@click.command(help=peers_verb.DESCRIPTION, epilog=epilog(peers_verb.EXAMPLES))
@json_option
def peers(as_json: bool) -> None:
    emit(peers_verb.run(context(), peers_verb.PeersRequest()), as_json, peers_text)


@click.command(help=status_verb.DESCRIPTION, epilog=epilog(status_verb.EXAMPLES))
@json_option
def status(as_json: bool) -> None:
    emit(status_verb.run(context(), status_verb.StatusRequest()), as_json, status_text)


def _whoami_text(w: whoami_verb.WhoAmI) -> str:
    rows = [
        ["session", w.session_id],
        ["origin", w.origin_path],
        ["resolved", f"{'yes' if w.resolved else 'no'} ({w.resolved_by})"],
        ["evidence", w.evidence],
        *(["ignored", note] for note in w.warnings),
        ["display", w.display],
        ["kind", w.kind + (f" ({w.host})" if w.host else "")],
        ["enrolled", "yes" if w.enrolled else "no"],
    ]
    return table(rows) + f"\nspool: {w.spool}"


@click.command(help=whoami_verb.DESCRIPTION, epilog=epilog(whoami_verb.EXAMPLES))
@click.option("--machine", is_flag=True, help="Print exactly session_id=, origin_path= and resolved= lines.")
@json_option
def whoami(machine: bool, as_json: bool) -> None:
    if machine and as_json:
        raise click.UsageError("choose one output: --machine (three key=value lines) or --json")
    result = whoami_verb.run(context(), whoami_verb.WhoAmIRequest())
    if machine:
        click.echo(
            f"session_id={result.session_id}\norigin_path={result.origin_path}\n"
            f"resolved={'true' if result.resolved else 'false'}"
        )
        return
    emit(result, as_json, _whoami_text)


def _mutes_tail(items: list[str]) -> str:
    return f" (muted now: {', '.join(items)})" if items else " (nothing muted now)"


@click.command(help=mute_verb.DESCRIPTION, epilog=epilog(mute_verb.EXAMPLES))
@click.argument("target")
@click.option("--for", "duration", metavar="DURATION", help=mute_verb.PARAMS["duration"])
@json_option
def mute(target: str, duration: str | None, as_json: bool) -> None:
    def text(r: mute_verb.Muted) -> str:
        until = f" until {r.until}" if r.until else " until unmuted"
        return f"muted {r.target}{until}: its messages stay in attend inbox, and never wake you"

    emit(mute_verb.run(context(), mute_verb.MuteRequest(target, duration)), as_json, text)


@click.command(help=unmute_verb.DESCRIPTION, epilog=epilog(unmute_verb.EXAMPLES))
@click.argument("target")
@json_option
def unmute(target: str, as_json: bool) -> None:
    def text(r: unmute_verb.Unmuted) -> str:
        return f"unmuted {r.target}" + _mutes_tail(r.mutes)

    emit(unmute_verb.run(context(), unmute_verb.UnmuteRequest(target)), as_json, text)
