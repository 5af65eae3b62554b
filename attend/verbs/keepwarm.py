"""keepwarm: keep this session's prompt cache warm while it idles (``on [WINDOW]``, ``off``), or show
the card (``status``): model, warm or cold, context, what a cold re-write costs against a warm turn,
and the keepwarm state. The loop (or the idle waiter) prints the line; this verb only arms it
(sessions/<sid>/keepwarm)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from attend.domain.attention import keepwarm
from attend.domain.sessions import transcript
from attend.domain.sessions.context import Context
from attend.domain.settings import config
from attend.errors import NotASessionError, UsageError

DESCRIPTION = (
    "Keep this session's prompt cache warm while it idles: on [WINDOW] (6h by default; 90m, 2h30m) arms "
    "one wake 50 minutes into each idle stretch, off disarms it, status shows the model, warm or cold, the "
    "context, a cold re-write's cost against a warm turn, and the keepwarm state."
)
PARAMS = {
    "action": "status (default), on or off.",
    "window": f"How long to keep it warm, with on: {keepwarm.WINDOW_FORMS} (default 6h).",
}
EXAMPLES = (  # the end of `attend keepwarm --help` (CLI only)
    ("attend keepwarm on", "keep the cache warm for the next 6 hours of idleness"),
    ("attend keepwarm on 2h30m", "for two and a half hours"),
    ("attend keepwarm", "the card: warm or cold, and what a cold turn costs"),
)
ACTIONS = ("status", "on", "off")


@dataclass(frozen=True)
class KeepwarmRequest:
    action: str = "status"
    window: str | None = None


@dataclass
class KeepwarmResult:
    action: str
    on: bool
    message: str  # what on / off did, one line
    card: keepwarm.Card | None = None  # status only
    warnings: list[str] = field(default_factory=list)


def run(ctx: Context, req: KeepwarmRequest) -> KeepwarmResult:
    if req.action not in ACTIONS:
        raise UsageError(f"unknown action {req.action!r}; use one of: {', '.join(ACTIONS)}")
    if req.window is not None and req.action != "on":
        raise UsageError(f"keepwarm {req.action} takes no window; only keepwarm on does")
    seconds = keepwarm.DEFAULT_WINDOW
    if req.window is not None:
        parsed = keepwarm.parse_window(req.window)
        if parsed is None:
            raise UsageError(f"keepwarm on takes a window such as {keepwarm.WINDOW_FORMS}, not {req.window!r}")
        seconds = parsed
    who = ctx.who()
    if not who.is_agent:
        raise NotASessionError("keepwarm: no agent session owns this process, nothing to warm")
    now = time.time()
    cfg = config.load(ctx.env, who.origin, announce=True)
    idle = keepwarm.duration(float(cfg.get("keepwarm.idle_seconds")))
    if req.action == "on":
        keepwarm.turn_on(ctx.spool, who.id, seconds, now)
        message = (
            f"keepwarm on for {keepwarm.duration(seconds)}: one wake {idle} into each idle stretch keeps the "
            "cache read, not re-written. Answer it with one word."
        )
        return KeepwarmResult("on", True, message, warnings=cfg.warnings())
    if req.action == "off":
        keepwarm.turn_off(ctx.spool, who.id, now)
        return KeepwarmResult("off", False, "keepwarm is off", warnings=cfg.warnings())
    card = keepwarm.card(ctx.spool, who.id, transcript.of_session(ctx.env, who), cfg, now)
    return KeepwarmResult("status", card.keepwarm_on, "", card, cfg.warnings())
