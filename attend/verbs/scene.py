"""scene: switch to a named set of channels: leave every channel not in it, join the ones that are.
``scene private`` joins none and opts the session out of the drain (under a running sensor loop,
when that loop ends). The scenes file is checked whole first: a bad file changes no membership."""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.domain.messages import channels
from attend.domain.sessions import sessions
from attend.domain.sessions.context import Context
from attend.domain.settings import scenes
from attend.verbs.join import join_one
from attend.verbs.leave import leave_one

DESCRIPTION = (
    "Switch to a scene, a named set of channels from scenes.yaml ($XDG_CONFIG_HOME/attend/scenes.yaml, "
    "else ~/.config/attend/scenes.yaml; attend scenes lists them): leave every channel not in it and join "
    "those in it. 'private' is built in: it joins none and opts this session out of the drain."
)
PARAMS = {"name": "The scene name (attend scenes lists them)."}
EXAMPLES = (  # the end of `attend scene --help` (CLI only)
    ("attend scene review", "once scenes.yaml has a line `review: [review, deploy]`: join those two"),
    ("attend scene private", "no channels: opt out of the drain"),
)


@dataclass(frozen=True)
class SceneRequest:
    name: str


@dataclass
class SceneResult:
    scene: str
    channels: list[str]  # the channels the caller is in now
    joined: list[str]
    left: list[str]
    removed: list[str]  # channels removed because leaving emptied them (unpinned)
    withheld: int  # earlier messages of newly joined channels not delivered
    enrolled: bool
    opted_out: bool
    warnings: list[str] = field(default_factory=list)


def run(ctx: Context, req: SceneRequest) -> SceneResult:
    scene = scenes.find(scenes.load(ctx.env), req.name.strip(), ctx.env)
    who = ctx.who()
    spool = ctx.spool
    current = [c for c in channels.names(spool) if channels.is_member(spool, c, who.id)]
    joined: list[str] = []
    withheld = 0
    # Join first, then leave: the session is never left with no channel in between, so its join
    # enrollment is not withdrawn and re-made (which would run the cold-start rule a second time).
    for name in scene.channels:
        if name not in current:
            result = join_one(spool, who, name)
            joined.append(name)
            withheld += result.withheld
    left: list[str] = []
    removed: list[str] = []
    for name in current:
        if name not in scene.channels:
            gone = leave_one(spool, who, name, withdraw=False)
            left.append(name)
            if gone.removed:
                removed.append(name)
    enrolled = who.is_agent and sessions.is_enrolled(spool, who.id)
    opted_out = False
    if who.is_agent:
        if scene.name == scenes.PRIVATE:
            sessions.opt_out(spool, who.id)
            opted_out = True
            enrolled = sessions.is_enrolled(spool, who.id)
        elif not scene.channels and enrolled:
            enrolled = sessions.withdraw(spool, who.id, "join")
    now_in = [c for c in channels.names(spool) if channels.is_member(spool, c, who.id)]
    return SceneResult(scene.name, now_in, joined, left, removed, withheld, enrolled, opted_out, list(who.notes))
