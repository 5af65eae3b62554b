"""mute: stop a peer, a channel or a project from reaching this session's model. Its messages still
arrive in the maildir and in ``inbox``; the conduits mark them seen without showing them, so they
never wake the session (docs/architecture/conduits.md, "Attention")."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from attend import identity
from attend.domain.attention import attention
from attend.domain.core import rooms
from attend.domain.messages import addressing
from attend.domain.sessions.context import Context
from attend.errors import NotASessionError, UsageError
from attend.verbs.inbox_filters import DURATION_RE, UNITS

DESCRIPTION = "Mute a peer, #channel or project: its messages still reach inbox, but never show or wake you."
PARAMS = {
    "target": "A session id or display name, a human's user name, '#channel' (or '#open'), or a project path.",
    "duration": "For how long: 30m, 2h, 1d (default: until unmute).",
}
EXAMPLES = (  # the end of `attend mute --help` (CLI only)
    ("attend mute Hana-beta --for 1h", "an hour without Hana-beta's messages"),
    ("attend mute '#open'", "#open traffic stays in the inbox only"),
    ("attend mute ~/src/noisy", "every session of that project"),
)


@dataclass(frozen=True)
class MuteRequest:
    target: str
    duration: str | None = None


@dataclass
class Muted:
    target: str  # as shown: a name, #channel or a project path
    key: str  # peer:<id>, room:<room> or project:<path>
    until: str | None  # ISO 8601 UTC; None until unmuted
    mutes: list[str]  # every mute now in force, as shown
    warnings: list[str] = field(default_factory=list)


def key_of(ctx: Context, target: str) -> tuple[str, str]:
    """(key, label) for a mute target: a channel, a project path, or a peer (a session or a human)."""
    raw = target.strip()
    if not raw:
        raise UsageError("give whom to mute: a peer's name or id, '#channel', or a project path")
    if raw.startswith("#"):
        name = rooms.channel_name(raw, allow_open=True)
        room = rooms.OPEN if name == rooms.OPEN else rooms.channel_room(name)
        return f"room:{room}", rooms.scope(room)
    if raw.startswith(("/", "~", ".")):
        path = os.path.realpath(os.path.expanduser(raw))
        return f"project:{path.rstrip('/') or '/'}", path
    address = addressing.resolve(ctx.spool, raw, ctx.sender(), ctx.sessions_dir, identity.human_id(ctx.env))
    if len(address.rooms) != 1 or not address.rooms[0].startswith(("d-", "h-")):
        raise UsageError(f"{raw!r} is not one peer; give a name or id, '#channel', or a project path")
    peer = address.to
    return f"peer:{peer}", raw


def seconds(duration: str | None) -> float | None:
    if duration is None:
        return None
    m = DURATION_RE.fullmatch(duration.strip())
    if not m or float(m.group(1)) <= 0:
        raise UsageError(f"{duration!r} is not a duration: give one such as 30m, 2h or 1d")
    return float(m.group(1)) * UNITS[m.group(2)]


def shown(items: list[attention.Mute]) -> list[str]:
    return [m.label + (f" until {iso(m.until)}" if m.until else "") for m in items]


def iso(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def run(ctx: Context, req: MuteRequest) -> Muted:
    span = seconds(req.duration)
    who = ctx.who()
    if not who.is_agent:
        raise NotASessionError("mute serves an agent session (its conduits); the human's inbox shows everything")
    key, label = key_of(ctx, req.target)
    if key == f"peer:{who.id}":
        raise UsageError("that is this session; nothing to mute")
    until = time.time() + span if span is not None else None
    items = [m for m in attention.mutes(ctx.spool, who.id) if m.key != key] + [attention.Mute(key, until, label)]
    attention.save_mutes(ctx.spool, who.id, items)
    now = attention.mutes(ctx.spool, who.id)
    return Muted(label, key, iso(until) if until else None, shown(now))
