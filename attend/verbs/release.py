"""release: give up the calling session's leases (named, or all); or, for the human at a terminal,
another session's (``--holder``). Every glob not released is listed with the reason."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from attend.domain.sessions.context import Context
from attend.errors import NotASessionError, NotFoundError
from attend.leases import ops
from attend.verbs.lease import LeaseRow, NotTouched, checked_globs, holder, row, untouched

DESCRIPTION = "Release this session's leases (those named, else all); the human may release any holder's."
PARAMS = {
    "globs": "Globs as leased; none: all of them.",
    "holder": "Another session's name or id (the human only, asked on a terminal).",
}
EXAMPLES = (  # the end of `attend release --help` (CLI only)
    ("attend release 'src/api/**'", "one of this session's leases"),
    ("attend release", "all of them"),
    ("attend release --holder Hana-beta", "the human, at a terminal: every lease Hana-beta holds"),
)
HUMAN_ACTION = "releasing another session's leases"


@dataclass(frozen=True)
class ReleaseRequest:
    globs: tuple[str, ...] = ()
    holder: str | None = None


@dataclass
class Released:
    holder: str
    released: list[LeaseRow]
    not_released: list[NotTouched]
    warnings: list[str] = field(default_factory=list)


def run(ctx: Context, req: ReleaseRequest) -> Released:
    asked = checked_globs(req.globs, False)
    cwd = ctx.cwd or os.getcwd()
    if req.holder is not None:
        ctx.human(HUMAN_ACTION)  # no session releases another's, by any name
        found = ops.find_holder(ctx.spool, req.holder)
        if found is None:
            raise NotFoundError(f"no live session named {req.holder!r} holds a lease (attend leases lists them)")
        out = ops.give_up(ctx.spool, found.sid, cwd, asked)
        return Released(found.name, [row(x) for x in out.done], untouched(out.untouched))
    try:
        _who, me = holder(ctx, "release")
    except NotASessionError:
        raise NotASessionError(
            "the human holds no leases; to release a session's, name it: attend release --holder NAME"
        ) from None
    out = ops.give_up(ctx.spool, me.sid, cwd, asked, process=(me.pid, me.start))
    return Released(me.name, [row(x) for x in out.done], untouched(out.untouched))
