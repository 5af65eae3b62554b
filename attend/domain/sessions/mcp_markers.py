"""The MCP server's presence markers: which sessions have a live ``attend mcp``.

A marker is ``sessions/<sid>/mcp/<pid>.json`` holding pid, procStart, start time and version.
Readers treat a marker whose process is gone (or whose pid was reused) as absent.
"""

from __future__ import annotations

import _thread
import os
import time

from attend import identity, safejson
from attend.domain.sessions import sessions
from attend.spool import Spool


def live_markers(spool: Spool, sid: str) -> list[dict[str, object]]:
    try:
        names = spool.names("sessions", sid, "mcp")
    except OSError:  # a planted symlink or file in place of the folder: no server keeps markers there
        return []
    live = []
    for name in names:
        if not name.endswith(".json"):
            continue
        try:
            raw = safejson.loads(spool.read("sessions", sid, "mcp", name))
        except (OSError, ValueError):
            continue
        if not isinstance(raw, dict):
            continue
        pid = raw.get("pid")
        if not isinstance(pid, int) or not identity.pid_alive(pid):
            continue
        start = raw.get("procStart")
        if start is not None and identity.proc_start(pid) not in (None, str(start)):
            continue
        live.append(raw)
    return live


def mcp_live(spool: Spool, sid: str) -> bool:
    return bool(live_markers(spool, sid))


# ---------------------------------------------------------------------- the server's own marker


def marker_parts(sid: str, pid: int) -> tuple[str, ...]:
    return ("sessions", sid, "mcp", f"{pid}.json")


class Marker:
    """One `attend mcp` process's presence marker: written on start, re-keyed after a /clear, removed
    on exit. The only thing it remembers between calls is where its own file is, so it can remove it.

    Calls run in worker threads and the exit path in a signal handler, so the file is touched under a
    lock, and once removed the marker stays removed: a call still in flight does not write it back.
    """

    def __init__(self, pid: int | None = None, version: str = "") -> None:
        self.pid = os.getpid() if pid is None else pid
        self.version = version
        self.started_at = time.time()
        self.where: tuple[Spool, str] | None = None
        self._lock = _thread.allocate_lock()  # not threading: ~1 ms on the send path
        self._closed = False

    def ensure(self, spool: Spool, sid: str) -> None:
        """Make sure the marker sits under ``sid``: one stat when it already does."""
        if self.where is not None and self.where[1] == sid and spool.exists(*marker_parts(sid, self.pid)):
            return
        record = {
            "pid": self.pid,
            "procStart": identity.proc_start(self.pid),
            "started_at": self.started_at,
            "version": self.version,
        }
        with self._lock:
            if self._closed:
                return
            spool.write_state(safejson.dumps(record).encode(), *marker_parts(sid, self.pid))
            old = self.where
            self.where = (spool, sid)
            if old is not None and old[1] != sid:
                old[0].remove(*marker_parts(old[1], self.pid))

    def remove(self) -> None:
        self._closed = True  # first, so a call racing with the exit writes nothing after this
        with self._lock:
            if self.where is not None:
                spool, sid = self.where
                # A /clear may have carried the file to the new id (the move takes the mcp folder).
                if not spool.remove(*marker_parts(sid, self.pid)):
                    spool.remove(*marker_parts(sessions.moved_to(spool, sid), self.pid))
                self.where = None
