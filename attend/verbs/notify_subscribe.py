"""notify_subscribe: a standing subscription for the notification trailer (docs/architecture/mcp.md,
"The trailer"). ``session`` is the caller check the three notify verbs share."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from attend import identity
from attend.domain.attention import trailer
from attend.domain.sessions.context import Context
from attend.errors import NotASessionError
from attend.identity import Identity

DESCRIPTION = "Subscribe to events, reported from now on as nudges on later attend tool results."
PARAMS = {
    "kinds": "Any of: open, channel:<name>, peer_started, peer_ended.",
    "project": "Only events from sessions in this project path.",
}
EXAMPLES = (  # the end of `attend notify subscribe --help` (CLI only)
    ("attend notify subscribe peer_started", "a trailer note when a peer starts"),
    ("attend notify subscribe open --project ~/src/api", "#open messages from one project"),
)


@dataclass(frozen=True)
class SubscribeRequest:
    kinds: tuple[str, ...]
    project: str | None = None


@dataclass
class Subscribed:
    subscription_id: str
    kinds: list[str]
    project: str | None
    warnings: list[str] = field(default_factory=list)


def session(ctx: Context) -> Identity:
    """The caller, who must be an agent session: notifications belong to one."""
    who = ctx.who()
    if not who.is_agent:
        raise NotASessionError(
            "notifications belong to an agent session, and this caller is not one; run this from inside the session"
        )
    return who


def run(ctx: Context, req: SubscribeRequest) -> Subscribed:
    kinds = trailer.parse_kinds(req.kinds)
    # The same path grammar as a `to` project address: ~ expanded, symlinks and relative parts resolved.
    project = identity.normalise_origin(os.path.realpath(os.path.expanduser(req.project))) if req.project else None
    who = session(ctx)
    sub = trailer.subscribe(ctx.spool, who, kinds, project)
    return Subscribed(sub.id, sub.kinds, sub.project, list(who.notes))
