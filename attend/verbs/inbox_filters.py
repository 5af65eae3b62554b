"""Inbox filters (--from, --grep, --since): the page of messages that match, newest first.

--since cuts by name alone (names sort by send time); --from reads headers and --grep bodies, so a
filtered page reads records until it has enough, newest first, and stops.
"""

from __future__ import annotations

import bisect
import datetime as dt
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from attend import envelope
from attend.errors import UsageError
from attend.spool import Spool

if TYPE_CHECKING:
    from attend.verbs.inbox import Message

DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


@dataclass(frozen=True)
class Match:
    sender: str | None
    pattern: re.Pattern[str] | None
    since: float | None

    def accepts(self, sig: envelope.Signal) -> bool:
        if self.sender is not None:
            want = self.sender.lower()
            if sig.from_id.lower() != want and not sig.sender.lower().startswith(want):
                return False
        return self.pattern is None or self.pattern.search(sig.body) is not None


def parse_since(text: str, now: float | None = None) -> float:
    now = time.time() if now is None else now
    raw = text.strip()
    if m := DURATION_RE.fullmatch(raw):
        return now - float(m.group(1)) * UNITS[m.group(2)]
    try:
        when = dt.datetime.fromisoformat(raw)
    except ValueError as e:
        raise UsageError(
            f"--since {text!r}: give a duration (30s, 10m, 2h, 3d, 1w) "
            "or an ISO date such as 2025-01-31 or 2025-01-31T09:30"
        ) from e
    return when.timestamp()  # a naive date/time is local time


def build(sender: str | None, grep: str | None, since: str | None) -> Match | None:
    if sender is None and grep is None and since is None:
        return None
    pattern = None
    if grep is not None:
        if not grep:
            raise UsageError("--grep needs a pattern")
        try:
            pattern = re.compile(grep, re.IGNORECASE)
        except re.error:
            pattern = re.compile(re.escape(grep), re.IGNORECASE)  # not a regex: match it literally
    if sender is not None and not sender.strip():
        raise UsageError("--from needs a sender id or display name")
    return Match(sender.strip() if sender else None, pattern, parse_since(since) if since is not None else None)


def page(
    spool: Spool,
    room_list: list[str],
    me: str,
    limit: int,
    page_no: int,
    before: str | None,
    match: Match,
) -> tuple[list[Message], bool, list[str]]:
    from attend.cleanup import cutoff_name
    from attend.verbs.inbox import to_message

    floor = cutoff_name(match.since) if match.since is not None else ""
    candidates: list[tuple[str, str]] = []
    for room in room_list:
        names = spool.room_names(room)
        lo = bisect.bisect_left(names, floor) if floor else 0
        hi = bisect.bisect_left(names, before) if before is not None else len(names)
        candidates.extend((n, room) for n in names[lo:hi])
    candidates.sort(reverse=True)
    want = page_no * limit + 1
    rows: list[Message] = []
    warnings: list[str] = []
    accepts: Callable[[envelope.Signal], bool] = match.accepts
    for name, room in candidates:
        try:
            sig = envelope.parse(spool.read(spool.room_path(room, name)))
        except FileNotFoundError:
            continue
        except (OSError, envelope.EnvelopeError) as e:
            warnings.append(f"skipped {room}/{name}: {e}")
            continue
        if sig.from_id == me or not accepts(sig):
            continue
        rows.append(to_message(sig, room))
        if len(rows) >= want:
            break
    skip = (page_no - 1) * limit
    return rows[skip : skip + limit], len(rows) > skip + limit, warnings
