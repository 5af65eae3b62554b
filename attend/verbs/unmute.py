"""unmute: let a muted peer, channel or project reach this session's model again."""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.domain.attention import attention
from attend.domain.sessions.context import Context
from attend.errors import NotASessionError, NotFoundError
from attend.verbs.mute import key_of, shown

DESCRIPTION = "Undo a mute; what arrived meanwhile stays in inbox."
PARAMS = {"target": "Named as it was muted."}
EXAMPLES = (  # the end of `attend unmute --help` (CLI only)
    ("attend unmute Hana-beta", "Hana-beta's messages reach you again"),
    ("attend unmute '#open'", "and #open traffic"),
)


@dataclass(frozen=True)
class UnmuteRequest:
    target: str


@dataclass
class Unmuted:
    target: str
    key: str
    mutes: list[str]  # the mutes still in force, as shown
    warnings: list[str] = field(default_factory=list)


def run(ctx: Context, req: UnmuteRequest) -> Unmuted:
    who = ctx.who()
    if not who.is_agent:
        raise NotASessionError("unmute serves an agent session; the human's inbox shows everything")
    key, label = key_of(ctx, req.target)
    items = attention.mutes(ctx.spool, who.id)
    if not any(m.key == key for m in items):
        raise NotFoundError(f"{label} is not muted (attend status lists mutes)")
    attention.save_mutes(ctx.spool, who.id, [m for m in items if m.key != key])
    return Unmuted(label, key, shown(attention.mutes(ctx.spool, who.id)))
