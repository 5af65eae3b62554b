"""notify_list: this session's notification subscriptions. Read-only."""

from __future__ import annotations

from dataclasses import dataclass, field

from attend import layout
from attend.domain.attention import trailer
from attend.domain.sessions.context import Context
from attend.verbs.notify_subscribe import session

DESCRIPTION = "List this session's notification subscriptions."
EXAMPLES = (  # the end of `attend notify list --help` (CLI only)
    ("attend notify list", "the subscriptions"),
    ("attend notify list --json", "the same, for a script"),
)
PARAMS: dict[str, str] = {}


@dataclass(frozen=True)
class ListRequest:
    """notify list takes no parameters."""


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


def run(ctx: Context, req: ListRequest) -> Subscriptions:
    who = session(ctx)
    subs = [
        SubscriptionInfo(s.id, s.kinds, s.project, layout.iso(s.created_at))
        for s in trailer.load_subscriptions(ctx.spool, who.id)
    ]
    return Subscriptions(subs, list(who.notes))
