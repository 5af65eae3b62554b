"""peers: the live sessions on this machine, of every host (attend/hosts: each one's own records, or
for a host whose process hosts many sessions, the enrolled ones live by a conduit), and the humans who
used the bus recently. Read-only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from attend import identity
from attend.domain.core import rooms
from attend.domain.messages import channels, remote
from attend.domain.sessions import humans, liveness, mcp_markers, sessions, transcript
from attend.domain.sessions.context import Context
from attend.domain.settings import config
from attend.errors import AttendError
from attend.hosts import DEFAULT, HOSTS, by_name
from attend.hosts.base import Host
from attend.layout import iso
from attend.verbs import leases as leases_verb
from attend.verbs.leases import HeldLease

DESCRIPTION = (
    "List live sessions on this machine (name, project, status, context, channels, conduits) and the "
    "humans active in the last 12 hours (their user name addresses them); with a relay, other hosts' too "
    "(name@host)."
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
    host: str | None = None  # another host's session (through the relay); None: this machine's
    client: str = DEFAULT.name  # the agent client it runs in (its host's name): claude, codex, gemini
    earlier: list[str] = field(default_factory=list)  # the client's earlier names for it: each still addresses it


@dataclass
class HumanPeer:
    user: str  # the user name: to='<user>' reaches its mailbox
    active_at: str  # when it last sent or read (ISO 8601, UTC)
    channels: list[str]
    self: bool
    host: str | None = None  # another host's human (through the relay); None: this machine's


@dataclass
class Peers:
    peers: list[Peer]
    humans: list[HumanPeer] = field(default_factory=list)
    leases: list[HeldLease] = field(default_factory=list)  # who holds what (attend leases)
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
    # The user's file: yaml only if it exists.
    window = float(config.load(ctx.env, announce=True).get("peers.activity_window"))
    out = []
    listed: set[str] = set()
    found = [(record, host) for host in HOSTS for record in host.live_records(ctx.env)]
    for record, host in found:
        sid = record.session_id
        listed.add(sid)
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
                status=record.status or identity.transcript_status(ctx.env, record, window, host),
                enrolled=sessions.is_enrolled(spool, sid),
                channels=member_of.get(sid, []),
                sensor=sessions.run_is_live(spool, sid),
                mcp=mcp_markers.mcp_live(spool, sid),
                self=sid == me,
                pid=record.pid,
                ordinal=sessions.ordinal_of(entry),
                ctx=_context(ctx, record, host),
                client=host.name,
                earlier=list(sessions.earlier_names(entry)),
            )
        )
    out += _enrolled_peers(ctx, me, member_of, registries, listed, window)
    out.sort(key=lambda p: (p.project, p.display))
    people = [
        HumanPeer(h.user, iso(h.active_at), member_of.get(h.user, []), h.user == me) for h in humans.recent(spool)
    ]
    for p in remote.peers(spool):  # other hosts', as the relay last heard (nothing without a relay)
        chans = ["#" + c for c in p.channels]
        if p.kind == "human":
            # Its own last activity, as its host published it; the relay's hearing of it is no activity.
            people.append(HumanPeer(p.id, iso(p.active or p.seen), chans, False, p.host))
        else:
            out.append(
                Peer(p.id, p.name, p.project, p.status or "-", True, chans, False, False, False, 0, None, None, p.host)
            )
    return Peers(out, people, leases_verb.run(ctx, leases_verb.LeasesRequest()).leases)


def _enrolled_peers(
    ctx: Context,
    me: str,
    member_of: dict[str, list[str]],
    registries: dict[str, dict[str, dict[str, object]]],
    listed: set[str],
    window: float,
) -> list[Peer]:
    """The sessions of a host that keeps no record by process (one process hosts many, as Codex's
    daemon does): the enrolled ones that are live by a conduit or a fresh heartbeat (liveness.py)."""
    spool = ctx.spool
    is_live = liveness.Liveness(spool, ctx.sessions_dir)
    out = []
    for sid in sessions.enrolled_sessions(spool):
        if sid in listed:
            continue
        enrollment = sessions.read_enrollment(spool, sid)
        host = by_name(enrollment.client) if enrollment is not None else None
        if enrollment is None or host is None or host.one_session_per_process or not is_live(sid):
            continue
        key = rooms.project_key(enrollment.origin)
        if key not in registries:
            registries[key] = sessions.read_registry(spool, key)
        entry = registries[key].get(sid)
        who = identity.Identity("agent", sid, enrollment.origin, "enrollment", False, name=enrollment.name)
        out.append(
            Peer(
                session_id=sid,
                display=sessions.display(identity.persona(who), entry, sessions.client_name(who, entry)),
                project=enrollment.origin,
                status=identity.activity(host.transcript(sid, enrollment.origin, ctx.env), window),
                enrolled=True,
                channels=member_of.get(sid, []),
                sensor=sessions.run_is_live(spool, sid),
                mcp=mcp_markers.mcp_live(spool, sid),
                self=sid == me,
                pid=0,
                ordinal=sessions.ordinal_of(entry),
                client=host.name,
                earlier=list(sessions.earlier_names(entry)),
            )
        )
    return out


def _context(ctx: Context, record: identity.SessionRecord, host: Host) -> int | None:
    """The context figure, from a transcript that carries the model's usage as Claude Code's does."""
    if not host.usage_in_transcript:
        return None
    usage = transcript.last_usage(identity.transcript_path(ctx.env, record.session_id, record.cwd, host, record.pid))
    return usage.percent if usage else None
