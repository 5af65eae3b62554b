"""Sending, as the verbs `send` and `reply` do it: the checks on what is sent, and the delivery with
its honest counts and the sender's warnings.

Here rather than in ``attend.verbs.send`` so the CLI's fast send path (``attend.cli.fastsend``) runs
the same rules without importing ``dataclasses``, which the verbs' request and result types need
(and which costs more than the rest of the send path together).
"""

from __future__ import annotations

from attend.domain.core import outcomes, rooms
from attend.domain.core.envelope import Signal
from attend.domain.messages import addressing, delivery
from attend.domain.sessions import humans, liveness, sessions
from attend.domain.sessions.context import MESSAGE_BUDGET, MESSAGE_LIMIT, Context
from attend.errors import AttendError, UsageError
from attend.identity import Identity, human_id
from attend.layout import FOLDED_BY, NAME_RE, RELAY, RELAY_ON, SESSIONS
from attend.record import Record
from attend.spool import Spool

TYPE_CHECKING = False
if TYPE_CHECKING:
    from attend.spool import Spool


class Outcome(Record):
    """One delivered message: its signal as published, and whom it reached."""

    sig: Signal
    scope: str  # rooms.scope of its room
    to_name: str  # the recipients as attend names them (the To header holds session ids)
    delivered: int  # recipients linked: live + parked
    live: int  # of them, live now (peers lists them)
    warnings: list[str]
    humans: tuple[str, ...] = ()  # the humans a name in ``to`` resolved to
    # Per recipient: (name, id, kind, outcome), outcome one of attend.domain.core.outcomes.OUTCOMES.
    recipients: tuple[tuple[str, str, str, str], ...] = ()


def check_message(message: str, example: str = 'attend send "hello"') -> list[str]:
    """Refuse an empty, oversized or non-UTF-8 message; warn above the budget agents are told. An empty
    one is answered with ``example``, the verb's own command line."""
    if not message.strip():
        raise UsageError(f"empty message; give the text to send, e.g. {example}")
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


def check_id(value: str | None, flag: str, spool: Spool | None = None) -> str | None:
    """A message id, or (with ``spool``) a unique prefix of one, as the full id (attend.domain.core.ids)."""
    if value is None:
        return None
    if not NAME_RE.fullmatch(value):
        if spool is None:
            raise UsageError(f"{flag} {value!r} is not a message id (attend inbox shows ids)")
        from attend.domain.core import ids  # only a prefix pays for the lookup

        return ids.resolve(spool, value, flag)
    return value


def check_on_behalf_of(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    if not value or len(value) > 128 or not all(c.isalnum() or c in "@._-:" for c in value):
        raise UsageError(f"on_behalf_of {value!r} must be one id or name: letters, digits and @._-: only")
    return value


def deliver(
    ctx: Context,
    sender: Identity,
    message: str,
    address: addressing.Address,
    re: str | None,
    obo: str | None,
    warnings: list[str],
) -> Outcome:
    """Publish and fan out, as each recipient's inbound rule says; ``warnings`` (the message's own) gain
    the sender's identity notes and backpressure. Every recipient refusing: nothing is written."""
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
        client=sender.host if sender.is_agent else None,
    )
    if not sender.is_agent:
        humans.note_active(ctx.spool, sender.id)
    rules = delivery.plan(ctx.spool, sig, address.rooms)
    across = _across(ctx.spool, address.rooms)
    kept = [r for r in address.rooms if _taken(r, rules, across)]
    if not kept:
        raise AttendError(_nobody_takes(address, sig))
    sig, linked = delivery.send(ctx.spool, sig._replace(room=kept[0]), kept, rules)
    for room in address.rooms:
        if room not in kept and room not in across:  # a direct room its one recipient refuses: not written
            linked.refused += [sid for sid, rule in rules.rules.get(room, {}).items() if rule == outcomes.REFUSE]
    is_live = liveness.Liveness(ctx.spool, ctx.sessions_dir)
    live_now = {s: is_live(s) for s in linked.sessions}
    rows = _rows(ctx, sig, address, linked, across, live_now, rules)
    live = sum(live_now.values()) + sum(humans.is_recent(ctx.spool, u) for u in linked.humans)
    warnings = warnings + list(address.warnings) + list(sender.notes) + slow_down(ctx, sender, live)
    if ctx.spool.exists(RELAY, RELAY_ON):  # a relay serves this spool: did it set aside one of ours?
        from attend.domain.messages import remote

        if notice := remote.take_notice(ctx.spool, sender.id):
            warnings.append(notice)
    shown = address.to_name or address.to
    return Outcome(sig, rooms.scope(sig.room), shown, len(linked), live, warnings, address.humans, tuple(rows))


def _across(spool: Spool, room_list: list[str]) -> dict[str, tuple[str, str, str]]:
    """Each room of another host's session or human: (name, kind, its inbound rule for other hosts as
    its relay last published it; "" when not said)."""
    if not any("@" in r[1:] and r[:2] in ("d-", "h-") for r in room_list):
        return {}
    from attend.domain.messages import remote  # only a send to another host reads the mirror

    mirror = remote.read(spool)
    found = {p.room: (p.address, p.kind, p.inbound) for p in (mirror.peers if mirror else [])}
    return {r: found.get(r, (r[2:], "human" if r.startswith("h-") else "agent", "")) for r in room_list if r in found}


def _taken(room: str, rules: delivery.Plan, across: dict[str, tuple[str, str, str]]) -> bool:
    """Whether a room's copy reaches anyone: a direct room whose one recipient refuses is never written."""
    if room in across:
        return across[room][2] != outcomes.REFUSE
    if room.startswith("d-") and "@" not in room[1:]:
        return rules.takers(room)
    return True


def _nobody_takes(address: addressing.Address, sig: Signal) -> str:
    """The one line of a send every recipient refuses (exit 1): whom, and which senders it refuses."""
    names = address.to_name or address.to
    klass = outcomes.sender_class(sig.from_kind, sig.from_id, sig.via)
    return (
        f"not sent: {names} refuses messages from {outcomes.CLASS_LABELS[klass]} (its inbound rule, attend "
        "inbound); nothing was written"
    )


def _rows(
    ctx: Context,
    sig: Signal,
    address: addressing.Address,
    linked: delivery.Fanout,
    across: dict[str, tuple[str, str, str]],
    live: dict[str, bool],
    rules: delivery.Plan,
) -> list[tuple[str, str, str, str]]:
    """(name, id, kind, outcome) per recipient, in the order they were reached."""
    if not (linked.sessions or linked.held or linked.refused or linked.waiting or linked.humans or across):
        return []
    spool = ctx.spool
    named = dict(zip(address.to.split(","), (address.to_name or address.to).split(","), strict=False))
    names = named if all(s in named for s in (*linked.sessions, *linked.held, *linked.refused)) else None
    if names is None:
        names = {**sessions.registered_names(spool), **named}
    judge = outcomes.Judge(spool, sig.from_kind, sig.from_id, sig.origin, sig.via)
    read = rules.states
    rows = [
        (names.get(s, s), s, "agent", judge.shown(s, sig.room, live[s], read.get(s) or outcomes.state(spool, s)))
        for s in linked.sessions
    ]
    rows += [(names.get(s, s), s, "agent", outcomes.HELD) for s in linked.held]
    rows += [(names.get(s, s), s, "agent", outcomes.REFUSED) for s in linked.refused]
    rows += [(names.get(s, s), s, "agent", outcomes.PARKED) for s in linked.waiting]
    rows += [
        (u, u, "human", outcomes.DELIVERED if humans.is_recent(spool, u) else outcomes.PARKED) for u in linked.humans
    ]
    for room, (name, kind, rule) in across.items():  # refused ones too: their rooms were not written
        took = {outcomes.REFUSE: outcomes.REFUSED, outcomes.HOLD: outcomes.HELD}.get(rule, outcomes.DELIVERED)
        rows.append((name, room[2:], kind, took))
    return rows


def slow_down(ctx: Context, sender: Identity, live: int) -> list[str]:
    """Backpressure: the sender's warning when most of the ``live`` sessions it reaches fold its messages."""
    if not sender.is_agent or not _ever_folded(ctx, sender.id):
        return []  # nobody folds it: the governor's module (dataclasses and all) stays unloaded
    from attend.domain.attention import attention

    warning = attention.backpressure(ctx.spool, sender.id, live)
    return [warning] if warning else []


def _ever_folded(ctx: Context, sid: str) -> bool:
    try:
        return bool(ctx.spool.entries(SESSIONS, sid, FOLDED_BY))
    except (OSError, AttendError):
        return False  # unreadable: no warning, as attention.folded_by counts it


def send(
    ctx: Context,
    message: str,
    to: str | None = None,
    channel: str | None = None,
    broadcast: bool = False,
    re: str | None = None,
    on_behalf_of: str | None = None,
) -> Outcome:
    """`send`: to #open by default, or the one scope given."""
    warnings = check_message(message)
    scope = addressing.scope_to(to, channel, broadcast)
    re = check_id(re, "--re", ctx.spool)
    obo = check_on_behalf_of(on_behalf_of)
    sender = ctx.sender()
    address = addressing.resolve(ctx.spool, scope, sender, ctx.sessions_dir, human_id(ctx.env))
    return deliver(ctx, sender, message, address, re, obo, warnings)
