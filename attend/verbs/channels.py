"""channels: list channels, or create, describe, pin and unpin one. A listing only reads: the spool is
byte-identical after it. It shows the members that are here (a human, or an agent session that is
live); the member files of a session that ended go when retention reaps its spool, after the grace."""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.domain.messages import channels
from attend.domain.sessions.context import Context
from attend.domain.sessions.liveness import Liveness
from attend.errors import AttendError, UsageError

DESCRIPTION = (
    "List channels with their members, pinned flag and description (a listing changes nothing; sessions "
    "that have ended are not shown as members), or: create NAME [DESC], describe NAME [DESC], pin NAME, "
    "unpin NAME. --joined lists only the caller's channels."
)
PARAMS = {
    "action": "list (default), create, describe, pin or unpin.",
    "name": "The channel, for create, describe, pin and unpin.",
    "description": "The description, for create and describe (describe with none clears it).",
    "joined": "List only the channels the caller is in.",
}
EXAMPLES = (  # the end of `attend channels --help` (CLI only)
    ("attend channels", "every channel, its members and whether you joined"),
    ('attend channels create deploy "release coordination"', "a pinned channel with a description"),
    ("attend channels --joined", "only yours"),
)
ACTIONS = ("list", "create", "describe", "pin", "unpin")


@dataclass(frozen=True)
class ChannelsRequest:
    action: str = "list"
    name: str | None = None
    description: str | None = None
    joined: bool = False


@dataclass
class Channel:
    name: str
    members: list[str]
    pinned: bool
    description: str
    joined: bool  # the caller is a member


@dataclass
class Channels:
    action: str
    channels: list[Channel]
    changed: str | None = None  # the channel an action changed
    removed: list[str] = field(default_factory=list)  # unpin: the channel went away (empty and unpinned)
    warnings: list[str] = field(default_factory=list)


def run(ctx: Context, req: ChannelsRequest) -> Channels:
    if req.action not in ACTIONS:
        raise UsageError(f"unknown action {req.action!r}; use one of: {', '.join(ACTIONS)}")
    if req.action == "list":
        return _list(ctx, req.joined)
    if req.name is None:
        raise UsageError(f"channels {req.action} needs a channel name")
    if req.joined:
        raise UsageError("--joined goes with list only")
    name = channels.parse_name(req.name, f"{req.action}ned" if req.action.endswith("pin") else "changed")
    spool = ctx.spool
    out = Channels(req.action, [], changed=name)
    if req.action == "create":
        desc = channels.check_description(req.description or "")
        if not channels.create(spool, name, desc):
            raise AttendError(f"#{name} already exists; attend channels describe {name} changes its description")
    elif req.action == "describe":
        channels.require(spool, name)
        channels.update_meta(spool, name, description=channels.check_description(req.description or ""))
    else:
        if req.description:
            raise UsageError(f"channels {req.action} takes only a channel name")
        channels.require(spool, name)
        channels.update_meta(spool, name, pinned=req.action == "pin")
        if req.action == "unpin" and channels.remove_if_empty(spool, name):
            out.removed.append(name)
    if name not in out.removed:
        info = channels.info(spool, name)
        out.channels.append(Channel(name, list(info.members), info.pinned, info.description, False))
        out.warnings.extend(info.warnings)
    return out


def _list(ctx: Context, joined_only: bool) -> Channels:
    spool = ctx.spool
    try:
        me = ctx.who().id
    except Exception:  # an unresolvable caller (the Bash sandbox) still gets the list
        if joined_only:
            raise
        me = ""
    out = Channels("list", [])
    live = Liveness(spool, ctx.sessions_dir)
    for name in channels.names(spool):
        if joined_only and not channels.is_member(spool, name, me):
            continue
        info = channels.info(spool, name)
        out.warnings.extend(w for w in info.warnings if w not in out.warnings)
        # Who is here: an agent member whose session ended stays on disk until retention reaps it.
        here = [m for m in info.members if channels.member_kind(spool, name, m) == "human" or live(m)]
        out.channels.append(Channel(name, here, info.pinned, info.description, me in info.members))
    return out
