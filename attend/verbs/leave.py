"""leave: stop being a member of a channel. Leaving the last channel withdraws the ``join``
enrollment (an ``attend run`` enrollment stays). A channel left empty keeps its history (its room)
until retention takes it, unless ``purge`` asks for it to go now: deleting history is the caller's
explicit choice, never a side effect of leaving."""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.domain.messages import channels
from attend.domain.sessions import sessions
from attend.domain.sessions.context import Context
from attend.errors import AttendError
from attend.identity import Identity
from attend.spool import Spool

DESCRIPTION = "Leave a channel. Leaving your last one withdraws the enrollment join made (not attend run's)."
PARAMS = {
    "name": "The channel, e.g. 'deploy' or '#deploy'.",
    "purge": (
        "If this leave empties an unpinned channel, delete the channel and its history now. On a terminal "
        "you are asked; elsewhere the history stays (retention takes it later) unless this is given."
    ),
}
EXAMPLES = (  # the end of `attend leave --help` (CLI only)
    ("attend leave deploy", "leave #deploy; its history stays"),
    ("attend leave deploy --yes", "and delete its history if you were the last member"),
)


@dataclass(frozen=True)
class LeaveRequest:
    name: str
    purge: bool = False


@dataclass
class Left:
    channel: str
    was_member: bool
    removed: bool  # purge: the channel was unpinned and left empty, so it is gone with its history
    enrolled: bool  # the caller still receives (agents: enrolled by run, or still in a channel)
    warnings: list[str] = field(default_factory=list)


def would_empty(ctx: Context, raw: str) -> bool:
    """Whether the caller leaving channel ``raw`` would leave it empty and unpinned: the one leave
    that can delete history (with purge), so a frontend asks before it. False when the leave would
    be refused anyway: ``run`` then says why."""
    try:
        name = channels.parse_name(raw, "left")
        if not channels.exists(ctx.spool, name):
            return False
        info = channels.info(ctx.spool, name)
        return not info.pinned and list(info.members) == [ctx.who().id]
    except AttendError:
        return False


def leave_one(spool: Spool, who: Identity, name: str, withdraw: bool = True, purge: bool = False) -> Left:
    """The leave itself, shared by ``leave`` and ``scene``. ``name`` is validated and exists."""
    was_member = channels.remove_member(spool, name, who.id)
    removed = channels.remove_if_empty(spool, name) if was_member and purge else False
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
    result = leave_one(ctx.spool, who, name, purge=req.purge)
    result.warnings = list(who.notes)
    return result
