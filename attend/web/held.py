"""Who holds which files, live on the page: a thread that sleeps until the leases may have changed,
lists them again, and hands the list to the page's streams only when it differs from the last.

What wakes it, with no timer of its own beyond a slow look (``RESCAN_SECONDS``):

- a lease or a release: each runs under ``locks/leases``, and closing that lock file after the
  write is an inotify event on ``locks/`` (the folder is watched from the spool's top until it exists);
- a holder's process ending: a pidfd per local holder process turns readable as it exits (a lease
  lives exactly as long as its holder's process, and nothing is written when it dies);
- the slow look, every ``RESCAN_SECONDS`` while something asks for it (a holder with no process of
  its own, whose liveness is the heartbeat's; a relay, whose mirror of other hosts' leases changes
  unannounced), else every ``IDLE_SECONDS`` in case a wake was missed (a kernel without inotify or
  pidfds polls instead).

The pidfds and the stop pipe sit in one epoll set, handed to the watcher as its one ``wake`` file.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
from collections.abc import Callable
from typing import Any

from attend.conduits.watch import ARRIVALS, CHANGES, WAKE, Watcher
from attend.layout import LEASES_LOCK, LOCKS
from attend.spool import Spool

RESCAN_SECONDS = 15.0
IDLE_SECONDS = 300.0

# What the look returns: the page's document of the leases, the pids of the local holders' processes,
# and whether the slow look is needed (see above).
Look = Callable[[], tuple[Any, set[int], bool]]


class HeldWatch:
    def __init__(
        self, spool: Spool, look: Look, on_change: Callable[[Any], None], rescan: float = RESCAN_SECONDS
    ) -> None:
        self.spool = spool
        self.look = look
        self.on_change = on_change
        self.rescan = rescan
        self.last: Any = None
        self.slow = True
        self._pidfds: dict[int, int] = {}  # pid -> its pidfd
        self._ended_pids: set[int] = set()  # pids whose pidfd fired: never watched again (no busy wake)
        self._epoll = select.epoll()
        self._stop_r, self._stop_w = os.pipe()
        self._epoll.register(self._stop_r, select.EPOLLIN)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="attend-web-leases", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        os.write(self._stop_w, b"x")
        if self._thread is not None:
            self._thread.join(5)
        self._thread = None
        for fd in self._pidfds.values():
            os.close(fd)
        self._pidfds.clear()
        self._epoll.close()
        os.close(self._stop_r)
        os.close(self._stop_w)

    def _watch_locks(self, watcher: Watcher) -> None:
        if not watcher.watching("locks"):
            watcher.add("locks", self.spool.path(LOCKS), CHANGES, named=True)

    def _run(self) -> None:
        watcher = Watcher()
        try:
            watcher.add("top", self.spool.path(), ARRIVALS)  # locks/ made after the start
            self._watch_locks(watcher)
            self._refresh()
            self.ready.set()
            while not self._stop.is_set():
                tags = watcher.wait(self.rescan if self.slow else IDLE_SECONDS, wake=self._epoll.fileno())
                if self._stop.is_set():
                    break
                if WAKE in tags:
                    self._ended()
                if "top" in tags or not tags:
                    self._watch_locks(watcher)
                names = watcher.take_names("locks") if "locks" in tags else set()
                if not tags or tags - {"locks"} or names is None or LEASES_LOCK in names:
                    self._refresh()
        finally:
            self.ready.set()
            watcher.close()

    def _ended(self) -> None:
        """Close the pidfds of processes that ended (a pidfd stays readable)."""
        for fd, _ in self._epoll.poll(0):
            if fd == self._stop_r:
                continue
            pid = next((p for p, f in self._pidfds.items() if f == fd), None)
            if pid is not None:
                self._forget(pid)
                self._ended_pids.add(pid)

    def _forget(self, pid: int) -> None:
        fd = self._pidfds.pop(pid)
        with contextlib.suppress(OSError, ValueError):
            self._epoll.unregister(fd)
        os.close(fd)

    def _refresh(self) -> None:
        try:
            doc, pids, self.slow = self.look()
        except Exception:  # a spool refused for a moment, say: the next wake looks again
            return
        for pid in set(self._pidfds) - pids:
            self._forget(pid)
        self._ended_pids &= pids
        for pid in pids - set(self._pidfds) - self._ended_pids:
            try:
                fd = os.pidfd_open(pid)
            except (OSError, AttributeError):  # gone already, or no pidfds here: the slow look finds it
                continue
            self._pidfds[pid] = fd
            self._epoll.register(fd, select.EPOLLIN)
        if doc != self.last:
            self.last = doc
            self.on_change(doc)
