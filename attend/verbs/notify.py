"""notify: standing subscriptions for the notification trailer (docs/architecture/mcp.md, "The trailer")."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from attend import identity, layout
from attend.domain import trailer
from attend.domain.context import Context
from attend.errors import IdentityError, NotFoundError
from attend.identity import Identity

SUBSCRIBE_DESCRIPTION = (
    "Subscribe this session to events, reported as nudges on later attend tool results. Starts from now (no history)."
)
SUBSCRIBE_PARAMS = {
    "kinds": "Any of: open, channel:<name>, peer_started, peer_ended.",
    "project": "Only events from sessions in this project path.",
}
UNSUBSCRIBE_DESCRIPTION = "Remove one of this session's notification subscriptions."
UNSUBSCRIBE_PARAMS = {"subscription_id": "The id notify_subscribe returned."}
LIST_DESCRIPTION = "List this session's notification subscriptions."


@dataclass(frozen=True)
class SubscribeRequest:
    kinds: tuple[str, ...]
    project: str | None = None


@dataclass(frozen=True)
class UnsubscribeRequest:
    subscription_id: str


@dataclass
class Subscribed:
    subscription_id: str
    kinds: list[str]
    project: str | None
    warnings: list[str] = field(default_factory=list)


@dataclass
class Unsubscribed:
    subscription_id: str
    removed: bool
    warnings: list[str] = field(default_factory=list)


@dataclass
class SubscriptionInfo:
    subscription_id: str
    kinds: list[str]
    project: str | None
    created_at: str


@dataclass
class Subscriptions:
    subscriptions: list[SubscriptionInfo]
    warnings: list[str] = field(default_factory=list)


def _session(ctx: Context) -> Identity:
    who = ctx.who()
    if not who.is_agent:
        raise IdentityError(
            "notifications belong to a Claude Code session, and this caller is not one; "
            "run this from inside the session"
        )
    return who


def subscribe(ctx: Context, req: SubscribeRequest) -> Subscribed:
    kinds = trailer.parse_kinds(req.kinds)
    # The same path grammar as a `to` project address: ~ expanded, symlinks and relative parts resolved.
    project = identity.normalise_origin(os.path.realpath(os.path.expanduser(req.project))) if req.project else None
    who = _session(ctx)
    sub = trailer.subscribe(ctx.spool, who, kinds, project)
    return Subscribed(sub.id, sub.kinds, sub.project, list(who.notes))


def unsubscribe(ctx: Context, req: UnsubscribeRequest) -> Unsubscribed:
    who = _session(ctx)
    # Another session's subscription lives in its own folder, so it reads exactly like a missing one.
    if not trailer.unsubscribe(ctx.spool, who.id, req.subscription_id):
        raise NotFoundError(f"no subscription {req.subscription_id!r} for this session; attend notify list shows yours")
    return Unsubscribed(req.subscription_id, True, list(who.notes))


def list_subscriptions(ctx: Context) -> Subscriptions:
    who = _session(ctx)
    subs = [
        SubscriptionInfo(s.id, s.kinds, s.project, layout.iso(s.created_at))
        for s in trailer.load_subscriptions(ctx.spool, who.id)
    ]
    return Subscriptions(subs, list(who.notes))
