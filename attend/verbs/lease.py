"""lease: take leases on files for the calling session, for as long as it lives
(docs/architecture/leases.md). Every glob not granted is listed with the reason; a conflict names the
holder and its reason."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from attend import hosts
from attend.domain.sessions import sessions
from attend.domain.sessions.context import Context
from attend.errors import NotASessionError, UsageError
from attend.identity import Identity
from attend.layout import iso
from attend.leases import ops
from attend.leases.store import MAX_REASON, Lease
from attend.verbs.leases import HeldLease
from attend.verbs.mute import seconds

DESCRIPTION = "Lease files for this session while it lives: others' edits of them are flagged (or refused)."
PARAMS = {
    "globs": "Paths or globs from the project root (src/**/api).",
    "reason": "Why; shown to others.",
    "shared": "Others' shared leases may overlap.",
    "duration": "End sooner: 30m, 2h.",
}
EXAMPLES = (  # the end of `attend lease --help` (CLI only)
    ("attend lease 'src/api/**' --reason 'reshaping the routes'", "exclusive, while this session lives"),
    ("attend lease docs/guide --shared --for 2h", "a folder, shared with other shared leases, for two hours"),
)

# The MCP frontend's one tool for lease, release and leases (its own description: the tool surface is
# counted in bytes; docs/architecture/mcp.md).
TOOL = "Lease files while you live: take (or share) globs, with reason, ttl (2h); release; list."
ACTIONS = ("take", "share", "release", "list")  # share: a shared lease


@dataclass(frozen=True)
class LeaseRequest:
    globs: tuple[str, ...]
    reason: str | None = None
    shared: bool = False
    duration: str | None = None


@dataclass
class LeaseRow:
    glob: str  # relative to root
    root: str
    reason: str
    shared: bool
    since: str  # ISO 8601 UTC
    until: str | None  # None: while the holder lives


@dataclass
class NotTouched:
    glob: str  # as given
    why: str
    holder: str | None = None
    holder_reason: str | None = None


@dataclass
class Leased:
    holder: str
    root: str
    granted: list[LeaseRow]
    not_granted: list[NotTouched]
    warnings: list[str] = field(default_factory=list)


@dataclass
class LeaseAnswer:
    """The MCP tool ``lease``'s answer, one shape for its actions: take and share answer as ``Leased``,
    release as ``release.Released``, list as ``leases.Leases`` (the fields each leaves out stay absent)."""

    holder: str | None = None
    root: str | None = None
    granted: list[LeaseRow] | None = None
    not_granted: list[NotTouched] | None = None
    released: list[LeaseRow] | None = None
    not_released: list[NotTouched] | None = None
    leases: list[HeldLease] | None = None
    warnings: list[str] = field(default_factory=list)


def row(x: Lease) -> LeaseRow:
    return LeaseRow(x.glob, x.root, x.reason, x.shared, iso(x.since), iso(x.until) if x.until else None)


def untouched(items: tuple[ops.Untouched, ...]) -> list[NotTouched]:
    return [NotTouched(u.glob, u.why, u.holder, u.holder_reason) for u in items]


def holder(ctx: Context, action: str) -> tuple[Identity, ops.Holder]:
    """The calling session as a holder; a lease is a session's, so the human is refused."""
    who = ctx.who()
    if not who.is_agent:
        raise NotASessionError(
            f"{action} serves an agent session, which holds its leases while it lives; "
            "a human releases another's with attend release --holder NAME"
        )
    if not sessions.is_enrolled(ctx.spool, who.id):
        sessions.follow_clear(ctx.spool, who)  # a /clear: the old id's leases become this one's first
    one = hosts.of(who.host).one_session_per_process
    pid, start = (who.claude_pid, who.proc_start) if one and who.claude_pid and who.proc_start else (None, None)
    if pid is None and who.resolved_by == "ancestry":
        # No process stands for this session (a Codex thread): the whole liveness policy decides, and
        # this call, from the session itself, proves it live now, as a turn end does.
        sessions.touch_heartbeat(ctx.spool, who.id)
    return who, ops.Holder(who.id, sessions.display_name(ctx.spool, who), who.host, pid, start)


def checked_globs(given: tuple[str, ...], required: bool) -> list[str]:
    if required and not given:
        raise UsageError("name what to lease: one or more paths or globs from the project root")
    if len(given) > ops.MAX_GLOBS:
        raise UsageError(f"at most {ops.MAX_GLOBS} globs at once")
    return list(given)


def run(ctx: Context, req: LeaseRequest) -> Leased:
    asked = checked_globs(req.globs, True)
    reason = " ".join((req.reason or "").split())
    if len(reason) > MAX_REASON:
        raise UsageError(f"the reason is {len(reason)} characters; give at most {MAX_REASON}")
    span = seconds(req.duration)
    _who, me = holder(ctx, "lease")
    import time

    now = time.time()
    out = ops.take(ctx.spool, me, ctx.cwd or os.getcwd(), asked, reason, req.shared, now + span if span else None, now)
    return Leased(me.name, out.root, [row(x) for x in out.done], untouched(out.untouched))
