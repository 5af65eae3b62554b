"""status: the spool, this caller's identity and registration, what is pending, and its conduits. Read-only."""

from __future__ import annotations

from dataclasses import dataclass, field

from attend import hosts
from attend.conduits import inbox_socket, waiter
from attend.domain.attention import attention
from attend.domain.sessions import mcp_markers, sessions
from attend.domain.sessions.context import Context
from attend.errors import AttendError
from attend.identity import Identity
from attend.verbs import mute, permissions

DESCRIPTION = "Show this session's identity, enrollment, pending deliveries, conduits, channels and mutes."
EXAMPLES = (  # the end of `attend status --help` (CLI only)
    ("attend status", "this session's state: enrolled, pending, conduits"),
    ("attend status --json", "the same, for a script"),
)
PARAMS: dict[str, str] = {}


@dataclass(frozen=True)
class StatusRequest:
    """status takes no parameters."""


@dataclass
class Serving:
    conduit: str  # drain, sensor, socket, waiter
    serves: bool  # it brings this session its mail now
    why: str  # one line: how it serves, or why it does not (steps aside, not wired, …)


@dataclass
class Conduits:
    sensor: bool  # `attend run` holds the duplicate-run lock
    drain: bool  # enrolled, so the Stop-hook drain serves it
    mcp: bool  # a live `attend mcp` presence marker
    waiter: bool  # an `attend wait --hook` is waiting to wake this session
    waiter_wired: bool  # the client's settings run the waiter as an asyncRewake Stop hook
    socket: bool = False  # an `attend mcp` of this session posts its mail to the client's inbox socket
    serving: str = ""  # which conduit brings mail between turn ends, and why (one line)
    serves: list[Serving] = field(default_factory=list)  # each conduit of this session: serving or not, and why


@dataclass
class Status:
    spool: str
    session_id: str
    kind: str
    client: str | None  # the agent client the session runs in (claude, codex, gemini); None for a human
    origin_path: str
    resolved: bool
    resolved_by: str
    display: str
    enrolled: bool  # receives: fan-out and the drain serve it
    ways: list[str]  # how it enrolled: run, join
    ordinal: str | None
    pending: int
    conduits: Conduits
    channels: list[str]
    mutes: list[str]  # peers, channels and projects muted (their messages reach inbox only)
    warnings: list[str] = field(default_factory=list)


def run(ctx: Context, req: StatusRequest) -> Status:
    spool = ctx.spool
    who = ctx.who()
    enrollment = sessions.read_enrollment(spool, who.id) if who.is_agent else None
    enrolled = who.is_agent and sessions.is_enrolled(spool, who.id)
    display = sessions.display_name(spool, who)  # first: a nameless session is registered by it
    entry = sessions.registration(spool, who.id, who.origin) if who.is_agent else None
    pending = len(spool.listing(who.id, "new")) + len(spool.listing(who.id, "claimed")) if who.is_agent else 0
    sensor = who.is_agent and sessions.run_is_live(spool, who.id)
    waiting = who.is_agent and waiter.waiter_live(spool, who.id)
    wired = _waiter_wired(ctx)
    return Status(
        spool=str(spool.root),
        session_id=who.id,
        kind=who.kind,
        client=hosts.of(who.host).name if who.is_agent else None,
        origin_path=who.origin,
        resolved=who.resolved,
        resolved_by=who.resolved_by,
        display=display,
        enrolled=enrolled,
        ways=list(enrollment.ways) if enrollment and enrolled else [],
        ordinal=sessions.ordinal_of(entry),
        pending=pending,
        conduits=Conduits(
            sensor=sensor,
            drain=enrolled,
            mcp=who.is_agent and mcp_markers.mcp_live(spool, who.id),
            waiter=waiting,
            waiter_wired=wired,
            socket=who.is_agent and inbox_socket.served_by(spool, who.id) is not None,
            serving=inbox_socket.serving(spool, who.id, sensor, waiting, ctx.env, who.origin) if enrolled else "",
            serves=_serves(ctx, who, sensor, waiting, wired) if enrolled else [],
        ),
        # A human may join channels too (its member file is named by its id).
        channels=["#" + c for c in sessions.channels_of(spool, who.id)],
        mutes=mute.shown(attention.mutes(spool, who.id)) if who.is_agent else [],
        warnings=list(who.notes),
    )


def _waiter_wired(ctx: Context) -> bool:
    """Whether the default target's settings wire the waiter (what `attend install` writes)."""
    try:
        return permissions.run(ctx, permissions.PermissionsRequest()).waiter
    except AttendError:
        return False


def _serves(ctx: Context, who: Identity, sensor: bool, waiting: bool, wired: bool) -> list[Serving]:
    """Each conduit of an enrolled session, serving or not, and why (docs/architecture/conduits.md)."""
    spool = ctx.spool
    out = [Serving("drain", True, "the turn-end hook shows what is pending")]
    out.append(Serving("sensor", sensor, "attend run is live under Monitor" if sensor else "attend run is not armed"))
    pid = inbox_socket.served_by(spool, who.id)
    if pid is not None:
        out.append(Serving("socket", True, f"attend mcp (pid {pid}) posts each message to the client's inbox socket"))
    else:
        why = (
            inbox_socket.declined_reason(spool, who.id)
            or inbox_socket.why_not(ctx.env, None, who.origin)
            or "no attend mcp of this session serves it"
        )
        out.append(Serving("socket", False, why))
    if hosts.of(who.host).unattended(ctx.env, who.claude_pid):
        stay = int(waiter.load_config(ctx.env).get("conduits.headless_wait"))  # config read only here
        if stay <= 0:
            why = (
                "steps aside: a headless session (claude -p, the Agent SDK) ends after its last turn; "
                "conduits.headless_wait opts in to waiting"
            )
            out.append(Serving("waiter", False, why))
        else:
            why = f"a headless session that opted in: waits {stay} s after each turn (conduits.headless_wait)"
            out.append(Serving("waiter", waiting, why))
    elif pid is not None and not waiting:
        out.append(Serving("waiter", False, "steps aside: the socket serves"))
    elif waiting:
        out.append(Serving("waiter", True, "waiting to wake the idle session"))
    else:
        out.append(
            Serving("waiter", False, "wired, not waiting now" if wired else "not wired (attend install wires it)")
        )
    return out
