"""notify_unsubscribe: remove one of this session's notification subscriptions."""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.domain.attention import trailer
from attend.domain.sessions.context import Context
from attend.errors import NotFoundError
from attend.verbs.notify_subscribe import session

DESCRIPTION = "Remove one of your notify subscriptions."
PARAMS = {"subscription_id": "The id notify_subscribe returned."}
EXAMPLES = (  # the end of `attend notify unsubscribe --help` (CLI only)
    ("attend notify unsubscribe <subscription-id>", "stop one (ids from attend notify list)"),
    ("attend notify list", "the ids"),
)


@dataclass(frozen=True)
class UnsubscribeRequest:
    subscription_id: str


@dataclass
class Unsubscribed:
    subscription_id: str
    removed: bool
    warnings: list[str] = field(default_factory=list)


def run(ctx: Context, req: UnsubscribeRequest) -> Unsubscribed:
    who = session(ctx)
    # Another session's subscription lives in its own folder, so it reads exactly like a missing one.
    if not trailer.unsubscribe(ctx.spool, who.id, req.subscription_id):
        raise NotFoundError(f"no subscription {req.subscription_id!r} for this session; attend notify list shows yours")
    return Unsubscribed(req.subscription_id, True, list(who.notes))
