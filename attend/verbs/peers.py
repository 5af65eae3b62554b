"""peers: the live Claude sessions on this machine, from their own session records, and the humans
who used the bus recently. Read-only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from attend import identity
from attend.domain import channels, config, humans, mcp_markers, rooms, sessions, transcript
from attend.domain.context import Context
from attend.errors import AttendError
from attend.layout import iso

DESCRIPTION = (
    "List live sessions on this machine (name, project, status, context, channels, conduits) and the "
    "humans active in the last 12 hours (their user name addresses them)."
)
EXAMPLES = (  # the end of `attend peers --help` (CLI only)
    ("attend peers", "the live sessions, and the humans who used the bus today"),
    ("attend peers --json", "the same, for a script"),
)
PARAMS: dict[str, str] = {}


@dataclass(frozen=True)
class PeersRequest:
    """peers takes no parameters."""


@dataclass
class Peer:
    session_id: str
    display: str
    project: str
    status: str
    enrolled: bool  # false: a live session that has not joined attend (it hears nothing yet)
    channels: list[str]
    sensor: bool
    mcp: bool
    self: bool
    pid: int
    ordinal: str | None  # alpha, beta, … once registered (display only, never a key)
    ctx: int | None = None  # percent of its model's window the context fills, from its transcript


@dataclass
class HumanPeer:
    user: str  # the user name: to='<user>' reaches its mailbox
    active_at: str  # when it last sent or read (ISO 8601, UTC)
    channels: list[str]
    self: bool


@dataclass
class Peers:
    peers: list[Peer]
    humans: list[HumanPeer] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def run(ctx: Context, req: PeersRequest) -> Peers:
    try:
        me = ctx.who().id
    except AttendError:  # an unresolvable caller (the Bash sandbox) still gets the list
        me = ""
    spool = ctx.spool
    # One pass over channel membership and one read per project registry, not one per peer:
    # peers must stay fast with dozens of sessions.
    member_of: dict[str, list[str]] = {}
    for name in channels.names(spool):
        for member in channels.members(spool, name):
            member_of.setdefault(member, []).append("#" + name)
    registries: dict[str, dict[str, dict[str, object]]] = {}
    window = float(config.load(ctx.env).get("peers.activity_window"))  # the user's file: yaml only if it exists
    out = []
    for record in identity.live_records(ctx.sessions_dir):
        sid = record.session_id
        origin = identity.normalise_origin(record.cwd or "/")
        who = identity.Identity("agent", sid, origin, "record", True, record.pid, record.proc_start, record.name)
        key = rooms.project_key(origin)
        if key not in registries:
            registries[key] = sessions.read_registry(spool, key)
        entry: Mapping[str, object] | None = registries[key].get(sid)
        if (record.name and entry and entry.get("name") != record.name) or (
            not record.name and sessions.ordinal_of(entry) is None
        ):
            # Renamed in its client (a parked session keeps the new name), or nameless and never seen
            # (its Persona-ordinal now is the name it keeps when it enrolls).
            entry, _ = sessions.name_parts(spool, who)
        out.append(
            Peer(
                session_id=sid,
                display=sessions.display(identity.persona(who), entry, record.name),
                project=origin,
                status=record.status or identity.transcript_status(ctx.env, record, window),
                enrolled=sessions.is_enrolled(spool, sid),
                channels=member_of.get(sid, []),
                sensor=sessions.run_is_live(spool, sid),
                mcp=mcp_markers.mcp_live(spool, sid),
                self=sid == me,
                pid=record.pid,
                ordinal=sessions.ordinal_of(entry),
                ctx=_context(ctx, record),
            )
        )
    out.sort(key=lambda p: (p.project, p.display))
    people = [
        HumanPeer(h.user, iso(h.active_at), member_of.get(h.user, []), h.user == me) for h in humans.recent(spool)
    ]
    return Peers(out, people)


def _context(ctx: Context, record: identity.SessionRecord) -> int | None:
    usage = transcript.last_usage(transcript.path_for(ctx.env, record.session_id, record.cwd))
    return usage.percent if usage else None
