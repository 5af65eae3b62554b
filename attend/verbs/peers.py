"""peers: the live Claude sessions on this machine, from their own session records. Read-only."""

from __future__ import annotations

from dataclasses import dataclass, field

from attend import identity, presence, sessions
from attend.context import Context

DESCRIPTION = "List live Claude Code sessions on this machine: display name, project, status, channels, conduits."
PARAMS: dict[str, str] = {}


@dataclass
class Peer:
    session_id: str
    display: str
    project: str
    status: str
    enrolled: bool
    channels: list[str]
    sensor: bool
    mcp: bool
    self: bool


@dataclass
class Peers:
    peers: list[Peer]
    warnings: list[str] = field(default_factory=list)


def run(ctx: Context) -> Peers:
    try:
        me = ctx.who().id
    except Exception:  # an unresolvable caller still gets the list
        me = ""
    spool = ctx.spool
    out = []
    for record in identity.live_records(ctx.sessions_dir):
        origin = identity.normalise_origin(record.cwd or "/")
        who = identity.Identity(
            "agent", record.session_id, origin, "record", True, record.pid, record.proc_start, record.name
        )
        entry = sessions.registration(spool, record.session_id, origin)
        display = identity.persona(who) + (f"-{entry['ordinal']}" if entry and entry.get("ordinal") else "")
        out.append(
            Peer(
                session_id=record.session_id,
                display=display,
                project=origin,
                status=record.status or presence.transcript_status(ctx.env, record),
                enrolled=sessions.is_enrolled(spool, record.session_id),
                channels=["#" + c for c in sessions.channels_of(spool, record.session_id)],
                sensor=sessions.run_is_live(spool, record.session_id),
                mcp=presence.mcp_live(spool, record.session_id),
                self=record.session_id == me,
            )
        )
    out.sort(key=lambda p: (p.project, p.display))
    return Peers(out)
