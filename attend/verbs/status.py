"""status: the spool, this caller's identity and registration, what is pending, and its conduits. Read-only."""

from __future__ import annotations

from dataclasses import dataclass, field

from attend import presence, sessions
from attend.context import Context

DESCRIPTION = (
    "Show this session's state: identity and how it was resolved, enrollment, registration, pending "
    "deliveries, conduits (sensor loop, drain, MCP), channels, and the spool."
)
PARAMS: dict[str, str] = {}


@dataclass
class Conduits:
    sensor: bool  # `attend run` holds the duplicate-run lock
    drain: bool  # enrolled, so the Stop-hook drain serves it
    mcp: bool  # a live `attend mcp` presence marker


@dataclass
class Status:
    spool: str
    session_id: str
    kind: str
    origin_path: str
    resolved: bool
    resolved_by: str
    display: str
    enrolled: list[str]
    ordinal: str | None
    pending: int
    conduits: Conduits
    channels: list[str]
    warnings: list[str] = field(default_factory=list)


def run(ctx: Context) -> Status:
    spool = ctx.spool
    who = ctx.who()
    enrollment = sessions.read_enrollment(spool, who.id) if who.is_agent else None
    enrolled = who.is_agent and sessions.is_enrolled(spool, who.id)
    entry = sessions.registration(spool, who.id, who.origin) if who.is_agent else None
    pending = len(spool.listing(who.id, "new")) + len(spool.listing(who.id, "claimed")) if who.is_agent else 0
    return Status(
        spool=str(spool.root),
        session_id=who.id,
        kind=who.kind,
        origin_path=who.origin,
        resolved=who.resolved,
        resolved_by=who.resolved_by,
        display=sessions.display_name(spool, who),
        enrolled=list(enrollment.ways) if enrollment and enrolled else [],
        ordinal=str(entry["ordinal"]) if entry and entry.get("ordinal") else None,
        pending=pending,
        conduits=Conduits(
            sensor=who.is_agent and sessions.run_is_live(spool, who.id),
            drain=enrolled,
            mcp=who.is_agent and presence.mcp_live(spool, who.id),
        ),
        channels=["#" + c for c in sessions.channels_of(spool, who.id)] if who.is_agent else [],
        warnings=list(who.notes),
    )
