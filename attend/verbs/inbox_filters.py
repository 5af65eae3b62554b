"""Inbox filters (--from, --grep, --since): the page of messages that match, newest first.

--since cuts by name alone (names sort by send time); --from reads headers and --grep bodies, so a
filtered page reads records until it has enough, newest first, and stops.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from dataclasses import dataclass

from attend.domain.core import envelope
from attend.errors import UsageError

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


# A time as the CLI shows it: "2025-01-31 09:30:00 CET", "… UTC", or "… +0530" for a zone with no name.
ZONED_RE = re.compile(r"(?P<when>.*\d)\s+(?P<zone>[A-Za-z]{1,6}|[+-]\d{2}(?::?\d{2})?)")
UTC_NAMES = ("UTC", "GMT", "Z")


def parse_since(text: str, now: float | None = None) -> float:
    now = time.time() if now is None else now
    raw = text.strip()
    if m := DURATION_RE.fullmatch(raw):
        return now - float(m.group(1)) * UNITS[m.group(2)]
    zone = None
    if m := ZONED_RE.fullmatch(raw):
        raw, zone = m.group("when"), m.group("zone")
    try:
        when = dt.datetime.fromisoformat(raw)
        if zone is not None and zone[0] in "+-":
            when = dt.datetime.fromisoformat(raw + zone)
    except ValueError as e:
        raise UsageError(
            f"--since {text!r}: give a duration (30s, 10m, 2h, 3d, 1w) or a date/time such as "
            "2025-01-31, 2025-01-31T09:30 or 2025-01-31 09:30:00 CET (as attend shows times)"
        ) from e
    if zone is not None and zone[0] not in "+-":
        if zone.upper() in UTC_NAMES:
            when = when.replace(tzinfo=dt.UTC)
        elif zone not in time.tzname:  # only the local zone's own names are known without a database
            raise UsageError(f"--since {text!r}: {zone} is not the local zone ({'/'.join(time.tzname)}) or UTC")
    return when.timestamp()  # a naive date/time (or one in the local zone's name) is local time


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


def floor(match: Match) -> str:
    """The oldest name --since admits (names sort by send time, so no record is read for it)."""
    from attend.layout import cutoff_name

    return cutoff_name(match.since) if match.since is not None else ""
