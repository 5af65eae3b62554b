"""inbound: a session's inbound rule (accept, hold or refuse, per sender class), and what it holds.

A session sets its own rule; the human sets any session's (``session``); no session sets another's.
Without an action it lists what waits: the caller's held messages, or for the human every session's.
``accept ID`` / ``decline ID`` decide one; ``accept`` without an id also sets the rule to accept and
accepts what waits from those classes (docs/architecture/outcomes.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from attend import identity
from attend.domain.core import outcomes
from attend.domain.messages import addressing, inbound
from attend.domain.sessions.context import Context
from attend.errors import IdentityError, NotFoundError, UsageError
from attend.identity import Identity
from attend.layout import NAME_RE

DESCRIPTION = "List, accept or decline held messages; set your inbound rule."
PARAMS = {
    "action": "hold|refuse|accept [local,humans,hosts]|decline",
    "id": "Held id",
    "senders": "Whose messages the rule covers: local, humans, hosts (comma-separated; default all).",
    "session": "The session whose rule or held messages (the human only; default yours).",
}
MCP_PARAMS = ("action", "id")  # the MCP tool's: a session's own rule, its sender classes in the action
EXAMPLES = (  # the end of `attend inbound --help` (CLI only)
    ("attend inbound hold --from hosts", "hold what comes over the relay until you look"),
    ("attend inbound", "what waits"),
    ("attend inbound accept 1765000000.M1P2Q3R4.host", "show that one, once, to its session"),
    ("attend inbound refuse --from local --session Tao", "the human: Tao takes nothing from its neighbours"),
)
ACTIONS = ("accept", "hold", "refuse", "decline")


@dataclass(frozen=True)
class InboundRequest:
    action: str | None = None
    id: str | None = None
    senders: str | None = None
    session: str | None = None


@dataclass
class Held:
    id: str
    session: str  # the session it waits for
    session_name: str
    sender: str
    from_id: str
    sender_class: str  # local, humans or hosts
    at: str  # ISO 8601 UTC
    subject: str
    unreviewed: bool  # it waited past a day (it stays)


@dataclass
class Inbound:
    action: str  # "list", or the action taken
    sessions: list[str]  # the sessions it concerns (ids)
    rule: dict[str, str]  # one session's rule in force, per sender class ({} when several)
    waiting: list[Held]  # what still waits, oldest first
    decided: list[str] = field(default_factory=list)  # ids accepted or declined by this call
    warnings: list[str] = field(default_factory=list)


def classes(raw: str | None) -> tuple[str, ...]:
    if raw is None or not raw.strip():
        return outcomes.CLASSES
    out = tuple(dict.fromkeys(p.strip() for p in raw.split(",") if p.strip()))
    bad = [c for c in out if c not in outcomes.CLASSES]
    if bad or not out:
        raise UsageError(f"--from {raw!r}: give local, humans or hosts (comma-separated)")
    return out


def target(ctx: Context, who: Identity, session: str | None) -> str | None:
    """The session the call concerns: the caller's own, or (the human only) the one named; None for the
    human naming none (every session). A session naming another is refused: the rule is its own."""
    if session is None:
        return who.id if who.is_agent else None
    address = addressing.resolve(ctx.spool, session, who, ctx.sessions_dir, identity.human_id(ctx.env))
    if len(address.rooms) != 1 or not address.rooms[0].startswith("d-") or "@" in address.rooms[0][1:]:
        raise UsageError(f"{session!r} is not one session of this host")
    sid = address.to
    if who.is_agent and sid != who.id:
        raise IdentityError(
            f"session {who.id} may not set or decide {session}'s inbound rule: a session's rule is its own "
            "(the human may set any session's, from a terminal)"
        )
    return sid


def iso(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def run(ctx: Context, req: InboundRequest) -> Inbound:
    action, _, rest = (req.action or "list").strip().partition(" ")
    if rest.strip():  # "hold hosts,humans": the classes with the action (the MCP tool's one parameter)
        if req.senders is not None:
            raise UsageError("give the sender classes once: after the action, or as --from")
        req = InboundRequest(action, req.id, rest.strip(), req.session)
    if action not in ("list", *ACTIONS):
        raise UsageError(f"{action!r} is not an action: give accept, hold, refuse or decline (or none, to list)")
    if req.id is not None and not NAME_RE.fullmatch(req.id):
        raise UsageError(f"{req.id!r} is not a message id (attend inbound lists what waits)")
    if req.id is not None and action not in ("accept", "decline"):
        raise UsageError("an id is accepted or declined: attend inbound accept ID, or attend inbound decline ID")
    if action == "decline" and req.id is None:
        raise UsageError("decline one message by its id: attend inbound decline ID (attend inbound lists them)")
    which = classes(req.senders)
    if req.id is not None and req.senders is not None:
        raise UsageError("--from sets a rule; an id decides one message: give one or the other")
    who = ctx.who()
    sid = target(ctx, who, req.session)
    spool = ctx.spool
    scope = [sid] if sid is not None else [s for s in spool.names("sessions") if inbound.waiting(spool, s)]
    decided: list[str] = []
    if req.id is not None:
        holding = [s for s in scope if spool.delivery_state(s, req.id) == "held"]
        if not holding:
            raise NotFoundError(f"nothing with id {req.id} waits here (attend inbound lists what waits)")
        decided = [req.id] if any([inbound.decide(spool, s, req.id, action == "accept") for s in holding]) else []
    elif action in ("accept", "hold", "refuse"):
        if sid is None:
            raise UsageError(f"name the session whose rule to set: attend inbound {action} --session NAME")
        inbound.set_rule(spool, sid, which, action)
        if action == "accept":  # and what waits from those classes: accepted now, shown once
            for w in inbound.waiting(spool, sid):
                if w.sender_class in which and inbound.decide(spool, sid, w.id, True):
                    decided.append(w.id)
    names = addressing.session_names(spool, ctx.sessions_dir)
    held = [
        Held(
            w.id,
            w.session,
            names.get(w.session, w.session),
            w.sender,
            w.from_id,
            w.sender_class,
            iso(w.at),
            w.subject,
            w.unreviewed,
        )
        for s in scope
        for w in inbound.waiting(spool, s)
    ]
    rule = outcomes.rule_of(spool, sid) if sid is not None else {}
    return Inbound(action, scope, rule, held, decided)
