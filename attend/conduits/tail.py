"""The operator's live view: new room records as they land, event-driven.

On Linux, inotify (attend.conduits.watch) watches each chosen room's new/, plus rooms/ itself and each room
folder, so a room that appears while tailing is picked up; every wake re-lists the room, since an
event is only a hint. Elsewhere, or when inotify is unavailable, it polls twice a second.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from attend.conduits.watch import ARRIVALS, Watcher
from attend.domain.core import envelope, framing, rooms
from attend.layout import NAME_RE, iso, name_time
from attend.spool import Spool

RESELECT_SECONDS = 5.0  # how often the chosen rooms are recomputed (a channel joined meanwhile)
POLL_SECONDS = 0.5  # the fallback's interval
SHOWN_MAX = 10000  # names remembered as shown


@dataclass
class Watching:
    rooms: list[str]
    mode: str  # "inotify" or "polling"


@dataclass
class Record:
    id: str
    at: str  # ISO 8601, UTC, as inbox gives it
    room: str
    scope: str
    sender: str
    from_id: str
    body: str  # the whole body; renderers trim it


def scope_label(room: str, sig: envelope.Signal | None) -> str:
    if room.startswith("p-") and sig is not None and sig.to:
        return "project:" + framing.label(os.path.basename(sig.to.rstrip("/")))
    return rooms.scope(room)


def read_record(spool: Spool, room: str, name: str) -> Record | None:
    try:
        sig = envelope.parse(spool.read_record(room, name))
    except (OSError, envelope.EnvelopeError):
        return None
    return Record(name, iso(name_time(name)), room, scope_label(room, sig), sig.sender, sig.from_id, sig.body)


class Tail:
    """Yields Watching once the watches are set, then each new Record in send order."""

    def __init__(self, spool: Spool, select: Callable[[], list[str]]) -> None:
        self.spool = spool
        self.select = select
        self.floor: dict[str, str] = {}  # room -> newest name present when it was first watched
        # Names already shown, bounded: two senders may link out of name order, so "newer than the
        # last shown" would drop one; this remembers enough to never show a record twice.
        self.shown: set[str] = set()
        self.order: deque[str] = deque()

    def _baseline(self, room: str) -> None:
        if room not in self.floor:
            names = self.spool.room_names(room)
            self.floor[room] = names[-1] if names else ""

    def _fresh(self, room: str, names: list[str]) -> list[tuple[str, str]]:
        floor = self.floor.get(room, "")
        out = []
        for n in names:
            if n > floor and n not in self.shown and NAME_RE.fullmatch(n):
                self.shown.add(n)
                self.order.append(n)
                out.append((n, room))
        while len(self.order) > SHOWN_MAX:
            self.shown.discard(self.order.popleft())
        return out

    def _emit(self, batch: list[tuple[str, str]]) -> Iterator[Record]:
        for name, room in sorted(batch):
            record = read_record(self.spool, room, name)
            if record is not None:
                yield record

    def __iter__(self) -> Iterator[Watching | Record]:
        watcher = Watcher(poll_seconds=POLL_SECONDS)
        try:
            watcher.add("top", self.spool.path("rooms"), ARRIVALS)  # a room that appears while tailing
            chosen = set(self.select())
            for room in chosen:
                self._follow(watcher, room, appeared=False)
            yield Watching(sorted(chosen), "polling" if watcher.fallback_reason else "inotify")
            reselect = time.monotonic() + RESELECT_SECONDS
            while True:
                tags = watcher.wait(RESELECT_SECONDS)
                batch: list[tuple[str, str]] = []
                if "top" in tags or time.monotonic() >= reselect:
                    reselect = time.monotonic() + RESELECT_SECONDS
                    chosen = set(self.select())
                    for room in chosen:
                        batch.extend(self._follow(watcher, room, appeared=room not in self.floor))
                for tag in tags - {"top"}:
                    room = tag.partition(":")[2]
                    if room in chosen:
                        batch.extend(self._follow(watcher, room, appeared=True))
                yield from self._emit(batch)
        finally:
            watcher.close()

    def _follow(self, watcher: Watcher, room: str, *, appeared: bool) -> list[tuple[str, str]]:
        """Watch a room (its folder, for a new/ that appears later, and its new/); return what is
        new in it. A room that appeared after the start is new from its first record."""
        for tag, path in (
            (f"room:{room}", self.spool.path("rooms", room)),
            (f"new:{room}", self.spool.path("rooms", room, "new")),
        ):
            if not watcher.watching(tag):
                watcher.add(tag, path, ARRIVALS)
        if appeared and room not in self.floor:
            self.floor[room] = ""
        self._baseline(room)
        # The watch is a hint: the listing is the truth (and covers records that landed before it).
        return self._fresh(room, self.spool.room_names(room))
