"""CLI handler for `attend inbox`: the listing, one message by id, the receipt, and the flags that
hand over to the drain (``--drain``) and to the inbox_wait verb (``--wait``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from attend.cli.app import epilog
from attend.cli.common import complete, context, emit, json_option, table
from attend.domain.core import framing
from attend.verbs import drain as drain_verb
from attend.verbs import inbox as inbox_verb

F = TypeVar("F", bound=Callable[..., Any])


def wait_option(f: F) -> F:
    """``attend inbox --wait SECONDS``: the inbox_wait verb, behind a flag of the inbox command."""
    from attend.verbs import inbox_wait as wait_verb

    @functools.wraps(f)
    def wrapper(*args: Any, wait: float | None = None, **kwargs: Any) -> Any:
        if wait is None:
            return f(*args, **kwargs)
        result = wait_verb.run(context(), wait_verb.WaitRequest(wait))
        emit(result, bool(kwargs.get("as_json")), _waited_text)
        return None

    help_text = f"{wait_verb.DESCRIPTION} SECONDS: {wait_verb.PARAMS['seconds']}"
    option = click.option("--wait", type=float, metavar="SECONDS", help=help_text)
    return option(wrapper)  # type: ignore[return-value]


def _waited_text(result: Any) -> str:
    if not result.items:
        return f"nothing arrived in {result.waited:g}s"
    return "\n".join(f"{i.id}  [{i.kind}] {i.title}" for i in result.items)


UTC_HELP = "Show times in UTC, not local time."


def _message_block(m: inbox_verb.Message, utc: bool, columns: int | None) -> str:
    from attend.cli import terminal

    # Everything but the id and the time was written by someone else: labels and one-line
    # fields, and the body's further lines aligned under its first (attend.domain.core.framing).
    lines = [
        # The client was checked as a bare token when the message was parsed (attend.domain.core.envelope).
        f"[{framing.label(m.scope)}] {framing.label(m.sender)} ({framing.kind(m.from_kind, m.client)})",
        f"  when:    {terminal.when(m.at, utc)}",
        f"  id:      {m.id}",
    ]
    if m.re:
        lines.append(f"  re:      {framing.inline(m.re)}")
    if m.on_behalf_of:
        lines.append(f"  for:     {framing.inline(m.on_behalf_of)}")
    lines.append(f"  to:      {framing.inline(m.to_name or m.to)}")
    if m.recipients:  # --sent: where it stands now for each recipient
        states = ", ".join(f"{d.display} {d.state}{' (unreviewed)' if d.unreviewed else ''}" for d in m.recipients)
        lines.append(f"  now:     {framing.inline(states)}")
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
    # Every message printed counts, the unread mail above the rest too ("1 shown" under two was a lie).
    printed = len(result.messages) + len(result.unread)
    footer = f"page {result.page} · {printed} {'sent' if result.sent else 'shown'}"
    if result.unread:
        footer += f" ({len(result.unread)} unread, to you)"
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
    if r.held or r.declined:  # by the recipients' inbound rules (docs/architecture/outcomes.md)
        head += f", {r.held} held, {r.declined} declined"
    if r.missing:
        head += f", {r.missing} missing (attend doctor repairs)"
    rows = [[d.display, d.session_id, d.state] for d in r.recipients]
    return head + ("\n" + table(rows, ["Recipient", "Session", "State"]) if rows else "\nno recipients")
