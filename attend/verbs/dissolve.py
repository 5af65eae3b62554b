"""dissolve: remove a channel and its history whatever its members. #open cannot be dissolved.

Members are released but stay enrolled: dissolving is an act on the channel, not on their sessions,
and a session keeps hearing #open and its project until it leaves or ends.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.domain.messages import channels
from attend.domain.sessions.context import Context

DESCRIPTION = "Dissolve a channel: remove it, its members and its history. #open cannot be dissolved."
PARAMS = {"name": "The channel to dissolve, e.g. 'deploy' or '#deploy'."}
EXAMPLES = (  # the end of `attend dissolve --help` (CLI only)
    ("attend dissolve deploy", "asks first on a terminal"),
    ("attend dissolve deploy --yes", "from a script: no question"),
)


@dataclass(frozen=True)
class DissolveRequest:
    name: str


@dataclass
class Dissolved:
    channel: str
    released: list[str]  # the members it had
    warnings: list[str] = field(default_factory=list)


def check(ctx: Context, raw: str) -> str:
    """The channel ``raw`` names, refused as ``run`` would refuse it: a frontend that asks before
    dissolving checks first, so no one confirms a dissolve that cannot happen."""
    name = channels.parse_name(raw, "dissolved")
    channels.require(ctx.spool, name, creatable=False)
    return name


def run(ctx: Context, req: DissolveRequest) -> Dissolved:
    name = channels.parse_name(req.name, "dissolved")
    return Dissolved(name, channels.dissolve(ctx.spool, name))
