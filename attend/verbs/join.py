"""join: become a member of a channel. Joining enrolls a Claude session (``join``) and registers it
if needed; a late joiner is not handed the room's history (the cold-start rule, 120 s)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from attend.domain.core import rooms
from attend.domain.messages import channels, inbound
from attend.domain.sessions import sessions
from attend.domain.sessions.context import Context
from attend.identity import Identity
from attend.spool import Spool

DESCRIPTION = (
    "Join a channel, made if missing, and receive its messages; this enrolls the session, so it can send. "
    "Messages older than two minutes are not delivered (inbox lists them)."
)
PARAMS = {
    "name": "The channel, e.g. 'deploy' or '#deploy'.",
    "pin": "Keep the channel when its last member leaves.",
}
EXAMPLES = (  # the end of `attend join --help` (CLI only)
    ("attend join deploy", "join #deploy (it is made if missing)"),
    ("attend join deploy --pin", "and keep it when it empties"),
)


@dataclass(frozen=True)
class JoinRequest:
    name: str
    pin: bool = False


@dataclass
class Joined:
    channel: str
    already: bool  # was a member before this call
    pinned: bool
    enrolled: bool  # the caller is enrolled (agents only; a human is never enrolled)
    withheld: int  # earlier messages not delivered ("N earlier messages not shown")
    delivered: int  # recent messages delivered by the cold-start rule
    warnings: list[str] = field(default_factory=list)


def join_one(spool: Spool, who: Identity, name: str, pin: bool = False, now: float | None = None) -> Joined:
    """The join itself, shared by ``join`` and ``scene``. ``name`` is already validated."""
    now = time.time() if now is None else now
    kind = "agent" if who.is_agent else "human"
    added = channels.add_member(spool, name, who.id, kind)
    if pin:
        channels.update_meta(spool, name, pinned=True)
    delivered = withheld = 0
    enrolled = False
    if who.is_agent:
        # The member file is written first, so when this call newly enrolls the session, enroll's own
        # cold-start pass covers the channel too: once, and counted once.
        result = sessions.enroll(spool, who, "join", now)
        enrolled = True
        if result.newly:
            delivered, withheld = result.delivered, result.withheld
        elif added:
            delivered, withheld = sessions.catch_up(spool, who.id, [rooms.channel_room(name)], now)
    info = channels.info(spool, name)
    return Joined(name, not added, info.pinned, enrolled, withheld, delivered, list(info.warnings))


def run(ctx: Context, req: JoinRequest) -> Joined:
    name = channels.parse_name(req.name, "joined")
    who = ctx.who()
    if who.is_agent:  # before the cold-start pass links anything: it links as the rule says
        inbound.note_default(ctx.spool, who.id, who.origin, ctx.env)
    result = join_one(ctx.spool, who, name, req.pin)
    result.warnings = list(who.notes) + result.warnings
    return result
