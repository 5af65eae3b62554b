"""The operator's live view: new room records as they land, event-driven.

On Linux, inotify watches each chosen room's new/ (a delivery is a link(), so IN_CREATE names the
record), plus rooms/ itself and each room folder, so a room that appears while tailing is picked up.
Elsewhere, or when inotify is unavailable, it polls the rooms' listings twice a second.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from attend import envelope, rooms
from attend.spool import NAME_RE, Spool, name_time

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
    at: float
    room: str
    scope: str
    sender: str
    from_id: str
    body: str  # the whole body; renderers trim it


def scope_label(room: str, sig: envelope.Signal | None) -> str:
    if room.startswith("p-") and sig is not None and sig.to:
        return "project:" + os.path.basename(sig.to.rstrip("/"))
    return rooms.scope(room)


def read_record(spool: Spool, room: str, name: str) -> Record | None:
    try:
        sig = envelope.parse(spool.read(spool.room_path(room, name)))
    except (OSError, envelope.EnvelopeError):
        return None
    return Record(name, name_time(name), room, scope_label(room, sig), sig.sender, sig.from_id, sig.body)


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
        try:
            from inotify_simple import INotify  # noqa: F401
        except ImportError:  # not Linux, or the package is missing: poll instead
            yield from self._poll()
            return
        yield from self._inotify()

    def _poll(self) -> Iterator[Watching | Record]:
        chosen = self.select()
        for room in chosen:
            self._baseline(room)
        yield Watching(chosen, "polling")
        while True:
            time.sleep(POLL_SECONDS)
            chosen = self.select()
            batch: list[tuple[str, str]] = []
            for room in chosen:
                if room not in self.floor:
                    self.floor[room] = ""  # a room that appeared after the start: everything in it is new
                batch.extend(self._fresh(room, self.spool.room_names(room)))
            yield from self._emit(batch)

    def _inotify(self) -> Iterator[Watching | Record]:
        from inotify_simple import INotify
        from inotify_simple import flags as f

        mask = f.CREATE | f.MOVED_TO | f.ONLYDIR
        ino = INotify()
        watches: dict[int, tuple[str, str]] = {}  # wd -> ("top", "") | ("room", room) | ("new", room)
        watched: set[tuple[str, str]] = set()
        top = self.spool.dir("rooms")

        def watch(kind: str, room: str, path: str) -> bool:
            if (kind, room) in watched:
                return True
            try:
                wd = ino.add_watch(path, mask)
            except OSError:
                return False
            watches[wd] = (kind, room)
            watched.add((kind, room))
            return True

        def follow(room: str, *, appeared: bool) -> list[tuple[str, str]]:
            """Watch a room; a room that appeared after the start is new from its first record."""
            base = os.path.join(top, room)
            watch("room", room, base)
            if appeared and room not in self.floor:
                self.floor[room] = ""
            self._baseline(room)
            if watch("new", room, os.path.join(base, "new")):
                # Records may have landed between the room appearing and the watch: look once.
                return self._fresh(room, self.spool.room_names(room))
            return []

        try:
            watch("top", "", str(top))
            chosen = set(self.select())
            for room in chosen:
                follow(room, appeared=False)
            yield Watching(sorted(chosen), "inotify")
            reselect = time.monotonic() + RESELECT_SECONDS
            while True:
                events = ino.read(timeout=int(RESELECT_SECONDS * 1000))
                batch: list[tuple[str, str]] = []
                if time.monotonic() >= reselect or any(e.mask & f.Q_OVERFLOW for e in events):
                    reselect = time.monotonic() + RESELECT_SECONDS
                    chosen = set(self.select())
                    for room in chosen:
                        batch.extend(follow(room, appeared=room not in self.floor))
                for event in events:
                    kind, room = watches.get(event.wd, ("", ""))
                    if kind == "top" and event.name:
                        chosen = set(self.select())
                        if event.name in chosen:
                            batch.extend(follow(event.name, appeared=True))
                    elif kind == "room" and event.name == "new" and room in chosen:
                        batch.extend(follow(room, appeared=True))
                    elif kind == "new" and room in chosen and event.name:
                        batch.extend(self._fresh(room, [event.name]))
                yield from self._emit(batch)
        finally:
            ino.close()
