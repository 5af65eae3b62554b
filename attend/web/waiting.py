"""What waits, live on the page: the human's unread mail (the title's count) and what sessions' inbound
rules hold (the panel to accept or decline). A thread sleeps on the folders those live in and, at each
wake, hands both to the page's streams; the hub sends each only when it changed.

Neither can be read off the feed of rooms: a send writes the room's record first and links it to each
recipient after, so a look woken by the record can run before the link (the count one short, the
held message not there yet) and nothing would wake a second look. These folders are where the links
land, so their events come after:

- ``humans/<user>/`` new/, claimed/ and cur/ (mail arriving, and read);
- ``sessions/`` (a session enrolled), each ``sessions/<sid>/`` (its held/ made on first use) and each
  ``sessions/<sid>/held/`` (a message held, accepted or declined).

A watch whose folder is not there yet is set at the next wake that finds it; a slow look
(``RESCAN_SECONDS``) covers a missed event, or a kernel without inotify.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable

from attend.conduits.watch import ARRIVALS, CHANGES, Watcher
from attend.layout import CLAIMED, CUR, HELD, HUMANS, NEW, SESSIONS
from attend.spool import Spool

RESCAN_SECONDS = 15.0


class WaitingWatch:
    def __init__(self, spool: Spool, user: str, on_wake: Callable[[], None], rescan: float = RESCAN_SECONDS) -> None:
        self.spool = spool
        self.user = user
        self.on_wake = on_wake
        self.rescan = rescan
        self._stop = threading.Event()
        self._wake_r, self._wake_w = os.pipe()
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="attend-web-waiting", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        os.write(self._wake_w, b"x")
        if self._thread is not None:
            self._thread.join(5)
        self._thread = None
        os.close(self._wake_r)
        os.close(self._wake_w)

    def _follow(self, watcher: Watcher) -> None:
        """Set each watch whose folder exists now and is not watched yet."""
        wanted = [("human", self.spool.path(HUMANS, self.user), ARRIVALS)]
        wanted += [(f"human:{sub}", self.spool.path(HUMANS, self.user, sub), CHANGES) for sub in (NEW, CLAIMED, CUR)]
        wanted.append(("sessions", self.spool.path(SESSIONS), ARRIVALS))
        for sid in self.spool.names(SESSIONS):
            wanted.append((f"s:{sid}", self.spool.path(SESSIONS, sid), ARRIVALS))
            wanted.append((f"held:{sid}", self.spool.path(SESSIONS, sid, HELD), CHANGES))
        for tag, path, mask in wanted:
            if not watcher.watching(tag):
                watcher.add(tag, path, mask)

    def _run(self) -> None:
        watcher = Watcher()
        try:
            while not self._stop.is_set():
                self._follow(watcher)  # before the look: what lands after it wakes the next one
                with contextlib.suppress(Exception):  # a spool refused for a moment, say: the next wake looks again
                    self.on_wake()
                self.ready.set()
                watcher.wait(self.rescan, wake=self._wake_r)
        finally:
            self.ready.set()
            watcher.close()
