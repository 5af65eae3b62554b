"""Keepwarm: Claude Code's prompt cache lapses after an idle hour, and the next turn re-writes the whole
context at the cache-write price. While armed, the loop (or, with no loop live, the idle waiter) prints
one line ``keepwarm.idle_seconds`` into each idle stretch, so the turn that follows reads the cache instead.

The arming is ``sessions/<sid>/keepwarm`` (JSON), written by ``attend keepwarm on|off`` and by the loop
and the idle waiter (the stretch warmed, or why it stopped). The idle stretch is read from the
transcript's mtime: any turn writes it. It disarms when the window ends, after a cold wake (a turn
after the cache lapsed), or when the cache has already lapsed when the loop looks.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass

from attend import layout, safejson
from attend.domain.sessions import transcript
from attend.domain.settings.config import Config
from attend.spool import Spool

DEFAULT_WINDOW = 6 * 3600.0
WINDOW_FORMS = "6h, 90m or 2h30m"
_WINDOW = re.compile(r"(?:(\d+)h)?(?:(\d+)m)?")


@dataclass
class Arm:
    deadline: float  # epoch seconds; 0: off
    armed_at: float
    window: float
    warmed_for: float = 0.0  # the transcript mtime of the idle stretch already warmed (one line each)
    seen: float = 0.0  # the transcript mtime the loop last saw
    stopped: str = ""  # why the loop disarmed it


def parse_window(text: str) -> float | None:
    """Seconds for ``6h``, ``90m``, ``2h30m``; None for anything else (or zero)."""
    m = _WINDOW.fullmatch(text.strip().lower())
    if not m or not any(m.groups()):
        return None
    seconds = int(m.group(1) or 0) * 3600 + int(m.group(2) or 0) * 60
    return float(seconds) or None


def duration(seconds: float) -> str:
    """``45s``, ``35m``, ``6h00m``, ``2d 3h`` (48 hours and more)."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 48 * 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d {s % 86400 // 3600}h"


def read(spool: Spool, sid: str) -> Arm | None:
    raw = spool.read_text(layout.SESSIONS, sid, layout.KEEPWARM)
    try:
        data = safejson.loads(raw) if raw else None
        return Arm(**data) if isinstance(data, dict) else None
    except (ValueError, TypeError):
        return None


def write(spool: Spool, sid: str, arm: Arm) -> None:
    spool.write_state(json.dumps(asdict(arm)).encode(), layout.SESSIONS, sid, layout.KEEPWARM)


def turn_on(spool: Spool, sid: str, window: float, now: float) -> Arm:
    arm = Arm(now + window, now, window)
    write(spool, sid, arm)
    return arm


def turn_off(spool: Spool, sid: str, now: float) -> None:
    write(spool, sid, Arm(0.0, now, 0.0))


def is_on(arm: Arm | None, now: float) -> bool:
    return arm is not None and arm.deadline > now and not arm.stopped


def _stop(spool: Spool, sid: str, arm: Arm, why: str) -> None:
    current = read(spool, sid)
    if current is not None and current.armed_at == arm.armed_at:  # `keepwarm on` since: leave it be
        arm.stopped = why
        write(spool, sid, arm)


def check(spool: Spool, sid: str, path: str | None, cfg: Config, now: float) -> str | None:
    """The loop's look: the keepwarm line when one is due now, else None (and disarm when it must)."""
    arm = read(spool, sid)
    if arm is None or arm.deadline == 0 or arm.stopped:
        return None
    if now >= arm.deadline:
        _stop(spool, sid, arm, "the window ended")
        return None
    last = transcript.mtime(path)
    if last is None:
        return None
    ttl = float(cfg.get("keepwarm.cache_ttl"))
    idle = now - last
    if arm.seen and last > arm.seen and last - arm.seen >= ttl:
        _stop(spool, sid, arm, "a cold wake: the session turned after the cache had lapsed")
        return None
    if idle >= ttl:
        _stop(spool, sid, arm, "the cache had already lapsed")
        return None
    line = None
    if idle >= float(cfg.get("keepwarm.idle_seconds")) and arm.warmed_for != last:
        usage = transcript.last_usage(path)
        tokens = usage.tokens if usage else 0
        if tokens >= int(cfg.get("keepwarm.min_tokens")):
            arm.warmed_for = last
            line = (
                f"keepwarm: {duration(idle)} idle, the prompt cache lapses in {duration(ttl - idle)} "
                f"on {tokens} tokens. Reply with one word and no tools."
            )
    if line or arm.seen != last:
        arm.seen = last
        current = read(spool, sid)
        if current is not None and current.armed_at == arm.armed_at:
            write(spool, sid, arm)
    return line


def due_at(spool: Spool, sid: str, path: str | None, cfg: Config, now: float) -> float | None:
    """When ``check`` may next have a line (epoch seconds), for a conduit that sleeps until then instead
    of looking every minute (the idle waiter); None when it has none to come for this stretch."""
    arm = read(spool, sid)
    last = transcript.mtime(path)
    if not is_on(arm, now) or last is None or arm is None or arm.warmed_for == last:
        return None
    return last + float(cfg.get("keepwarm.idle_seconds"))


# ---------------------------------------------------------------------- the status card


def family(model: str) -> str:
    m = model.lower()
    return "opus" if "opus" in m else "haiku" if "haiku" in m else "sonnet"


@dataclass
class Card:
    model: str | None
    warm: bool
    left: float  # seconds of cache left when warm
    last_request_ago: float | None  # None: no request yet
    tokens: int
    cold_cost: float  # USD to re-write the context
    warm_cost: float  # USD to read it
    keepwarm: str  # on, <left> left | stopped, <why> | off
    keepwarm_on: bool


def card(spool: Spool, sid: str, path: str | None, cfg: Config, now: float) -> Card:
    usage = transcript.last_usage(path)
    ttl = float(cfg.get("keepwarm.cache_ttl"))
    last = (usage.at if usage and usage.at else None) or transcript.mtime(path)
    ago = None if last is None or usage is None else max(0.0, now - last)
    warm = ago is not None and ago < ttl
    tokens = usage.tokens if usage else 0
    fam = family(usage.model) if usage else "sonnet"
    write_price = float(cfg.get(f"prices.{fam}.cache_write"))
    read_price = float(cfg.get(f"prices.{fam}.cache_read"))
    arm = read(spool, sid)
    if is_on(arm, now):
        assert arm is not None
        state = f"on, {duration(arm.deadline - now)} left"
        if warm and ago is not None:
            wake = float(cfg.get("keepwarm.idle_seconds")) - ago
            state += f" · wake in {duration(wake)}" if wake > 0 else " · wake due"
    elif arm is not None and arm.stopped:
        state = f"stopped, {arm.stopped}"
    else:
        state = f"off (attend keepwarm on to arm it for {duration(DEFAULT_WINDOW)})"
    return Card(
        model=usage.model if usage else None,
        warm=warm,
        left=max(0.0, ttl - ago) if warm and ago is not None else 0.0,
        last_request_ago=ago,
        tokens=tokens,
        cold_cost=round(tokens * write_price / 1e6, 4),
        warm_cost=round(tokens * read_price / 1e6, 4),
        keepwarm=state,
        keepwarm_on=is_on(arm, now),
    )
