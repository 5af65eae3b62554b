"""log: the tail of attend's bounded diagnostic log, where hooks write what Claude Code swallows."""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.domain.sessions.context import Context
from attend.errors import UsageError

DESCRIPTION = (
    "Print the newest lines of attend's diagnostic log: errors from the Stop-hook drain and the "
    "sensor loop, whose stderr Claude Code does not show."
)
PARAMS = {"lines": "How many of the newest lines to print (1-10000)."}
EXAMPLES = (  # the end of `attend log --help` (CLI only)
    ("attend log", "the newest 50 lines of the diagnostic log"),
    ("attend log -n 200", "more of it"),
)


@dataclass(frozen=True)
class LogRequest:
    lines: int = 50


@dataclass
class LogTail:
    path: str
    lines: list[str]
    warnings: list[str] = field(default_factory=list)


def run(ctx: Context, req: LogRequest) -> LogTail:
    lines = req.lines
    if not 1 <= lines <= 10000:
        raise UsageError("lines must be between 1 and 10000")
    spool = ctx.spool
    text = "".join(spool.read_text("log", name) or "" for name in ("attend.log.1", "attend.log"))
    return LogTail(spool.path("log", "attend.log"), text.splitlines()[-lines:])
