"""When the reheat is said (docs/architecture/sensors.md, "Disclosure").

The judgment layer is re-presented when the session is first shown a message, after every
compaction (the SessionStart hook, ``attend recall --hook``, says it then), and otherwise at most
once per ``disclosure.stretch`` seconds of messaging: a message shown once the stretch has passed
brings it back. Whoever says it (the loop's disclosure sensor, the waiter, the drain, the compact
hook) stamps ``sessions/<sid>/disclosed``, so it is said once, not by each of them. The stamp is a
file of its own, not the loop's ``sensors.json``, because the loop holds that one in memory and
writes it whole: another writer's stamp would be lost.
"""

from __future__ import annotations

import contextlib
import json

from attend import layout as L
from attend import safejson
from attend.domain.attention import reheat
from attend.errors import AttendError
from attend.spool import Spool

TYPE_CHECKING = False
if TYPE_CHECKING:  # the waiter and the drain load config only when they show something
    from attend.domain.settings.config import Config

NAME = "disclosure"
FIRST, STRETCH, COMPACT = "first", "stretch", "compact"


def enabled(cfg: Config | None) -> bool:
    """Off when config says ``-disclosure:`` or ``disclosure: {enabled: false}``."""
    setting = cfg.sensors.get(NAME) if cfg is not None else None
    return setting is None or setting.enabled


def stretch(cfg: Config | None) -> float:
    return float(cfg.get("disclosure.stretch")) if cfg is not None else 7200.0


def last(spool: Spool, sid: str) -> float | None:
    """When the reheat was last said to this session (epoch seconds); None: never."""
    try:
        raw = spool.read_text(L.SESSIONS, sid, L.DISCLOSED)
        data = safejson.loads(raw) if raw else None
    except (OSError, ValueError):
        return None
    at = data.get("at") if isinstance(data, dict) else None
    return float(at) if isinstance(at, (int, float)) else None


def due(said: float | None, now: float, every: float) -> str | None:
    """Why the reheat is due at a shown message (``first``, ``stretch``), or None."""
    if said is None:
        return FIRST
    if now - said >= every:
        return STRETCH
    return None


def stamp(spool: Spool, sid: str, now: float, why: str) -> None:
    spool.write_state(json.dumps({"at": now, "why": why}).encode(), L.SESSIONS, sid, L.DISCLOSED)


def text(mcp: bool) -> str:
    return reheat.wording(mcp)


def take(spool: Spool, sid: str, cfg: Config | None, now: float, mcp: bool) -> str | None:
    """At a message shown to the session: the reheat when it is due (stamped as said), else None.
    A stamp that cannot be written says nothing: better silent than said at every message."""
    if not enabled(cfg):
        return None
    why = due(last(spool, sid), now, stretch(cfg))
    if why is None:
        return None
    try:
        stamp(spool, sid, now, why)
    except (OSError, AttendError):
        return None
    return text(mcp)


def said_after_compaction(spool: Spool, sid: str, now: float) -> None:
    """The compact hook said it: the stretch starts again from the compaction."""
    with contextlib.suppress(OSError, AttendError):
        stamp(spool, sid, now, COMPACT)
