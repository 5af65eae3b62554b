"""leave: stop being a member of a channel. Leaving the last channel withdraws the ``join``
enrollment (an ``attend run`` enrollment stays); an unpinned channel left empty is removed with
its history."""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.domain import channels, sessions
from attend.domain.context import Context
from attend.identity import Identity
from attend.spool import Spool

DESCRIPTION = (
    "Leave a channel. An unpinned channel left empty is removed with its history; leaving the last "
    "channel withdraws the enrollment that join made (one made by attend run stays)."
)
PARAMS = {"name": "The channel to leave, e.g. 'deploy' or '#deploy'."}
EXAMPLES = (  # the end of `attend leave --help` (CLI only)
    ("attend leave deploy", "leave #deploy; its history stays"),
    ("attend leave deploy --yes", "and delete its history if you were the last member"),
)


@dataclass(frozen=True)
class LeaveRequest:
    name: str


@dataclass
class Left:
    channel: str
    was_member: bool
    removed: bool  # the channel was unpinned and left empty, so it is gone with its history
    enrolled: bool  # the caller still receives (agents: enrolled by run, or still in a channel)
    warnings: list[str] = field(default_factory=list)


def leave_one(spool: Spool, who: Identity, name: str, withdraw: bool = True) -> Left:
    """The leave itself, shared by ``leave`` and ``scene``. ``name`` is validated and exists."""
    was_member = channels.remove_member(spool, name, who.id)
    removed = channels.remove_if_empty(spool, name) if was_member else False
    enrolled = False
    if who.is_agent:
        enrolled = sessions.is_enrolled(spool, who.id)
        if withdraw and was_member and enrolled and not sessions.channels_of(spool, who.id):
            enrolled = sessions.withdraw(spool, who.id, "join")
    return Left(name, was_member, removed, enrolled)


def run(ctx: Context, req: LeaveRequest) -> Left:
    name = channels.parse_name(req.name, "left")
    who = ctx.who()
    channels.require(ctx.spool, name, creatable=False)
    result = leave_one(ctx.spool, who, name)
    result.warnings = list(who.notes)
    return result
