"""The seat's live feed (`attend chat`, `attend web`): a thread that sleeps on the same inotify watches
the sensor loop and tail use (attend.conduits.watch), and hands each new record, and each presence
event, to the screen.

It watches rooms/ (a room that appears), every room's folder (its new/ may be made after it) and
new/, and the presence room; a watch whose folder is not there yet is set at the next wake that finds
it, which the watch on its parent brings, so no record waits for the rescan whatever order rooms,
sessions and chat appeared in. An event is only a hint: each wake lists the room again and hands over
the names not seen before. A pipe wakes it to stop, so quitting never waits for a timeout. No screen's
framework here: the screen passes callbacks, which run on the feed's thread.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from attend.conduits.watch import ARRIVALS, Watcher
from attend.layout import PRESENCE_ROOM
from attend.spool import Spool
from attend.verbs import chat as chat_verb
from attend.verbs.inbox import Message

RESCAN_SECONDS = 5.0  # a missed event (or the polling fallback) costs at most this long


class Feed:
    def __init__(
        self,
        spool: Spool,
        on_messages: Callable[[list[Message]], None],
        on_presence: Callable[[], None],
        on_rooms: Callable[[], None],
        rescan: float = RESCAN_SECONDS,
    ) -> None:
        self.spool = spool
        self.on_messages = on_messages
        self.on_presence = on_presence
        self.on_rooms = on_rooms
        self.rescan = rescan
        # room -> names present (or handed over). Taken now, before the app lists what it shows, so a
        # record landing in between is handed over as well (the app drops what it already has) rather
        # than lost between the two looks.
        self.seen: dict[str, set[str]] = {
            room: set(spool.room_names(room)) for room in [*chat_verb.watched_rooms(spool), PRESENCE_ROOM]
        }
        self._stop = threading.Event()
        self._wake_r, self._wake_w = os.pipe()
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()  # set once the watches are in place (tests and the benchmark wait on it)
        self.mode = ""
        self.rescans = 0  # wakes by the timer
        self.rescued = 0  # records a rescan found that no watch of their room reported (0 under inotify)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="attend-seat-feed", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        os.write(self._wake_w, b"x")
        if self._thread is not None:
            self._thread.join(5)
        self._thread = None
        os.close(self._wake_r)
        os.close(self._wake_w)

    def _follow(self, watcher: Watcher, room: str) -> bool:
        """Watch a room's folder (for a new/ made after it) and its new/, each where it exists now; True
        when new/ is watched from this call on (list it then: records may have landed before the watch).
        A watch that could not be set is tried again at every wake, never left to the rescan."""
        self.seen.setdefault(room, set())  # a room that appeared after the start: news from its first record
        for tag, path in (
            (f"room:{room}", self.spool.path("rooms", room)),
            (f"new:{room}", self.spool.path("rooms", room, "new")),
        ):
            if not watcher.watching(tag) and watcher.add(tag, path, ARRIVALS) and tag.startswith("new:"):
                return True
        return False

    def _run(self) -> None:
        watcher = Watcher()
        self.mode = "polling" if watcher.fallback_reason else "inotify"
        try:
            self._wake(watcher, set(), first=True)  # the watches, and what landed before they were set
            self.ready.set()
            while not self._stop.is_set():
                tags = watcher.wait(self.rescan, wake=self._wake_r)
                if self._stop.is_set():
                    break
                self._wake(watcher, tags)
        finally:
            watcher.close()

    def _wake(self, watcher: Watcher, tags: set[str], first: bool = False) -> None:
        timer = not tags and not first  # the rescan: it finds only what a watch failed to report
        if timer:
            self.rescans += 1
        if not watcher.watching("top"):  # rooms/ itself may be made after chat started
            watcher.add("top", self.spool.path("rooms"), ARRIVALS)
        rescan = timer or first or "top" in tags or bool(watcher.fallback_reason)
        # The rooms a watch of their own reported (or whose new/ is watched from now on): what the rest
        # of a rescan finds there, no watch reported.
        changed = {t.partition(":")[2] for t in tags if t.startswith(("new:", "room:"))}
        fresh: list[str] = []
        if rescan:
            fresh = [r for r in chat_verb.watched_rooms(self.spool) if r not in self.seen]
            for room in fresh:
                if self._follow(watcher, room):
                    changed.add(room)
        for room in [r for r in self.seen if not watcher.watching(f"new:{r}")]:
            if self._follow(watcher, room):
                changed.add(room)
        reported = set(changed)
        if rescan:
            changed |= set(self.seen)
        if fresh:
            self.on_rooms()
        arrived: list[Message] = []
        for room in sorted(changed):
            names = self.spool.room_names(room)
            known = self.seen.setdefault(room, set())
            new = [n for n in names if n not in known]
            known.update(new)
            if room == PRESENCE_ROOM:
                if new:
                    self.on_presence()
                continue
            for name in new:
                msg = chat_verb.read(self.spool, room, name)
                if msg is not None:
                    arrived.append(msg)
                    if room not in reported and not first and not watcher.fallback_reason:
                        self.rescued += 1
        if arrived:
            arrived.sort(key=lambda m: m.id)
            self.on_messages(arrived)
