"""cleanup: apply the retention policy to the spool now, or with ``dry_run`` list what would go."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from attend.domain.messages import retention
from attend.domain.messages.retention import Item, Tally
from attend.domain.sessions.context import Context
from attend.domain.sessions.liveness import Liveness
from attend.domain.settings import config
from attend.verbs import FRONTEND

DESCRIPTION = (
    "Remove what the retention policy says is old: stale tmp files (36 h), the spool of sessions that "
    "ended (after a grace period), room records and seen entries past the age and count limits, and "
    "unpinned channels left with no members and no history. Never an unseen delivery of a live session. "
    "--dry-run lists what would go, with sizes."
)
PARAMS = {"dry_run": "List what would be removed, with sizes, and remove nothing."}
EXAMPLES = (  # the end of `attend cleanup --help` (CLI only)
    ("attend cleanup --dry-run", "what retention would remove"),
    ("attend cleanup", "remove it"),
)


@dataclass(frozen=True)
class CleanupRequest:
    dry_run: bool = False
    # Called with (done, total) as the folders are walked; a frontend may draw a progress bar.
    progress: Callable[[int, int], None] | None = field(default=None, metadata=FRONTEND)


@dataclass
class CleanupResult:
    dry_run: bool
    examined: int
    files: int
    bytes: int  # freed (last links only), or with dry_run the sizes of what would go
    by_reason: dict[str, Tally]
    sessions: list[str]
    channels: list[str]
    items: list[Item]  # at most retention.ITEM_LIMIT; the totals count everything
    policy: dict[str, float]
    warnings: list[str] = field(default_factory=list)


def run(ctx: Context, req: CleanupRequest) -> CleanupResult:
    cfg = config.load(ctx.env, config.project_of(ctx.cwd), announce=True)
    policy = retention.Policy.from_config(cfg)
    report = retention.run(
        ctx.spool,
        policy,
        dry_run=req.dry_run,
        is_live=Liveness(ctx.spool, ctx.sessions_dir),
        progress=req.progress,
    )
    return CleanupResult(
        report.dry_run,
        report.examined,
        report.files,
        report.bytes,
        report.by_reason,
        report.sessions,
        report.channels,
        report.items,
        {
            "max_age_days": policy.max_age / 86400,
            "max_per_room": policy.max_per_room,
            "max_seen_per_session": policy.max_seen_per_session,
            "session_grace_hours": policy.session_grace / 3600,
        },
        cfg.warnings() + report.refused,  # anything planted in the spool is left alone, and named
    )
