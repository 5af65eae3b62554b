"""send: publish a message to #open, a channel, a project, or chosen sessions."""

from __future__ import annotations

from dataclasses import dataclass, field

from attend import identity
from attend.domain import addressing, humans, liveness, rooms, sessions
from attend.domain.context import MESSAGE_BUDGET, MESSAGE_LIMIT, Context
from attend.domain.envelope import Signal
from attend.errors import UsageError
from attend.identity import Identity
from attend.layout import NAME_RE

DESCRIPTION = "Send a message; it starts a topic (answer one with reply). Default scope: #open, everyone."
PARAMS = {
    "message": "The text (UTF-8, at most 64 KiB).",
    "to": (
        "Recipients: '*', '#channel', a project path, or comma-separated session ids, display names or "
        "human user names."
    ),
    "channel": "The same as to='#channel'.",
    "broadcast": "The same as to='*'.",
    "re": "Thread under this message id.",
    "on_behalf_of": "Whom you act for (an id or name), recorded in the envelope.",
}
EXAMPLES = (  # the end of `attend send --help` (CLI only)
    ('attend send "freeze main at 5pm"', "to #open, everyone"),
    ('attend send --to Hana-beta "a word?"', "to one session, by display name"),
    ('attend send --channel deploy -- "--force is gone"', "to a channel; -- ends the options"),
    ("git log -1 | attend send --to ~/src/api", "the body from stdin, to every session of a project"),
)


@dataclass(frozen=True)
class SendRequest:
    message: str
    to: str | None = None
    channel: str | None = None
    broadcast: bool = False
    re: str | None = None
    on_behalf_of: str | None = None


@dataclass
class Sent:
    id: str
    room: str
    scope: str
    to: str
    re: str | None
    from_kind: str
    from_id: str
    delivered: int  # recipients linked: live + parked
    live: int  # of them, live now (peers lists them): a session per the liveness policy, a human active recently
    parked: int  # enrolled (or a human's mailbox) but not live: it keeps the message until it is back
    warnings: list[str] = field(default_factory=list)


def check_message(message: str) -> list[str]:
    """Refuse an empty, oversized or non-UTF-8 message; warn above the budget agents are told."""
    if not message.strip():
        raise UsageError('empty message; give the text to send, e.g. attend send "hello"')
    try:
        size = len(message.encode("utf-8"))
    except UnicodeEncodeError as e:
        raise UsageError("the message is not valid UTF-8; re-encode it and send again") from e
    if "\x00" in message:
        raise UsageError("the message holds a NUL byte; remove it and send again")
    if size > MESSAGE_LIMIT:
        raise UsageError(f"message is {size} bytes, over the 64 KiB limit; shorten it or point at a file")
    if len(message) > MESSAGE_BUDGET:
        return [f"message is {len(message)} characters; peers read best under ~{MESSAGE_BUDGET}"]
    return []


def check_id(value: str | None, flag: str) -> str | None:
    if value is None:
        return None
    if not NAME_RE.fullmatch(value):
        raise UsageError(f"{flag} {value!r} is not a message id (attend inbox shows ids)")
    return value


def check_on_behalf_of(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    if not value or len(value) > 128 or not all(c.isalnum() or c in "@._-:" for c in value):
        raise UsageError(f"on_behalf_of {value!r} must be one id or name: letters, digits and @._-: only")
    return value


def deliver(
    ctx: Context, sender: Identity, message: str, address: addressing.Address, re: str | None, obo: str | None
) -> Sent:
    from attend.domain import delivery

    sig = Signal(
        id="",
        sender=sessions.display_name(ctx.spool, sender),
        from_kind=sender.kind,
        from_id=sender.id,
        to=address.to,
        room=address.rooms[0],
        origin=sender.origin,
        body=message,
        at=0.0,
        re=re,
        on_behalf_of=obo,
    )
    if not sender.is_agent:
        humans.note_active(ctx.spool, sender.id)
    sig, linked = delivery.send(ctx.spool, sig, address.rooms)
    is_live = liveness.Liveness(ctx.spool, ctx.sessions_dir)
    live = sum(map(is_live, linked.sessions)) + sum(humans.is_recent(ctx.spool, u) for u in linked.humans)
    scope = rooms.scope(sig.room)
    return Sent(sig.id, sig.room, scope, sig.to, re, sig.from_kind, sig.from_id, len(linked), live, len(linked) - live)


def run(ctx: Context, req: SendRequest) -> Sent:
    warnings = check_message(req.message)
    to = addressing.scope_to(req.to, req.channel, req.broadcast)
    re = check_id(req.re, "--re")
    obo = check_on_behalf_of(req.on_behalf_of)
    sender = ctx.sender()
    address = addressing.resolve(ctx.spool, to, sender, ctx.sessions_dir, identity.human_id(ctx.env))
    sent = deliver(ctx, sender, req.message, address, re, obo)
    sent.warnings = warnings + list(sender.notes) + slow_down(ctx, sender, sent)
    return sent


def slow_down(ctx: Context, sender: Identity, sent: Sent) -> list[str]:
    """Backpressure: the sender's warning when most of the sessions it reaches fold its messages."""
    if not sender.is_agent:
        return []
    from attend.domain import attention

    warning = attention.backpressure(ctx.spool, sender.id, sent.live)
    return [warning] if warning else []
