"""tail: the operator's live view. New records in the rooms the caller receives (a human: #open, the
project of the working directory, its channels), or in every room with ``all``, as they land,
until interrupted. Read-only."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from attend.conduits.tail import Record, Tail, Watching
from attend.domain.sessions.context import Context
from attend.verbs import FRONTEND
from attend.verbs.inbox import caller_rooms

DESCRIPTION = (
    "Follow new messages as they land, one line each (time, room, sender, the body on one line), "
    "until interrupted. Covers the rooms the caller receives, or every room with --all. Read-only."
)
PARAMS = {
    "all": "Follow every room in the spool, including rooms that appear while tailing.",
    "count": "Stop after this many messages.",
}
EXAMPLES = (  # the end of `attend tail --help` (CLI only)
    ("attend tail", "follow what you receive, one line per message"),
    ("attend tail --all --utc", "every room, times in UTC"),
    ("attend tail --count 1 --json", "wait for one message, as JSON"),
)


@dataclass(frozen=True)
class TailRequest:
    all: bool = False
    count: int | None = None
    # Called as things happen: first a Watching (the rooms followed, and how), then each Record as it lands.
    show: Callable[[Watching | Record], None] | None = field(default=None, metadata=FRONTEND)


@dataclass
class Tailed:
    shown: int  # records shown before ``count`` was reached
    warnings: list[str] = field(default_factory=list)


def run(ctx: Context, req: TailRequest) -> Tailed:
    """Runs until ``count`` records were shown, or forever (a frontend ends it by interrupting)."""
    spool = ctx.spool
    who = ctx.who()

    def select() -> list[str]:
        return caller_rooms(spool, who, (), req.all)

    shown = 0
    for item in Tail(spool, select):  # leaving the loop drops the generator, which closes its watcher
        if req.show is not None:
            req.show(item)
        if isinstance(item, Record):
            shown += 1
            if req.count is not None and shown >= req.count:
                break
    return Tailed(shown)
