"""Liveness, one policy for every reader (docs/architecture/sessions.md, "Session state").

A session is live when any of these holds:
- a client process is behind it: a session record naming it whose pid is alive with a matching
  ``procStart``, or the enrollment's own pid and ``procStart``;
- for a session bound to no process of its own (a host whose one process hosts many sessions), one of
  its conduits runs (``attend run`` holds its run lock, or an ``attend mcp`` marker is live), or its
  heartbeat is fresh (the loop and the drain touch it).
A session bound to a process that has ended is not live, whatever marker or heartbeat it left: what
``peers`` lists is what ``send`` counts live.

Retention never reaps, channel pruning never drops, and a channel send counts as heard, exactly the
sessions this calls live.
"""

from __future__ import annotations

import os
import time

from attend import identity
from attend.domain.sessions import mcp_markers, sessions
from attend.procfs import stat_fields
from attend.spool import Spool

HEARTBEAT_FRESH = 90.0  # seconds: the loop touches it every 30 s, the drain at every turn end


def heartbeat_fresh(spool: Spool, sid: str, now: float | None = None) -> bool:
    mtime = spool.mtime("sessions", sid, "heartbeat")
    return mtime is not None and (time.time() if now is None else now) - mtime < HEARTBEAT_FRESH


def claude_running(pid: int, start: str | None) -> bool:
    """Whether the Claude process ``pid`` (started at ``start``, the record's ``procStart``) still runs:
    not gone, not a zombie nobody has reaped yet, and not a later process that reused its pid."""
    fields = stat_fields(pid)
    if fields is None:
        return identity.pid_alive(pid) if not os.path.isdir("/proc") else False
    return fields[0] not in ("Z", "X") and (start is None or fields[19] == start)


class Liveness:
    """The policy above, for many sessions at once: the session records are scanned once, on the
    first session that needs them."""

    def __init__(self, spool: Spool, sessions_dir: os.PathLike[str] | str | None = None) -> None:
        self.spool = spool
        self.sessions_dir = os.fspath(sessions_dir) if sessions_dir else identity.sessions_home()
        self._recorded: set[str] | None = None

    def __call__(self, sid: str) -> bool:
        enrollment = sessions.read_enrollment(self.spool, sid)
        pid = enrollment.claude_pid if enrollment else None
        bound = bool(enrollment and pid and enrollment.proc_start)
        live_pid = enrollment and pid and bound and identity.pid_alive(pid)
        if enrollment and pid and live_pid and identity.proc_start(pid) == enrollment.proc_start:
            return True
        if self._recorded is None:
            self._recorded = {r.session_id for r in identity.live_records(self.sessions_dir)}
        if sid in self._recorded:
            return True
        if bound:
            # Its client's process is known, has ended, and no record names the session in another:
            # it is not live, whatever heartbeat or marker it left (send counted such a session live
            # for 90 s after it ended while peers no longer listed it).
            return False
        return (
            sessions.run_is_live(self.spool, sid)
            or mcp_markers.mcp_live(self.spool, sid)
            or heartbeat_fresh(self.spool, sid)
        )


def is_live(spool: Spool, sid: str, sessions_dir: os.PathLike[str] | str | None = None) -> bool:
    return Liveness(spool, sessions_dir)(sid)


def holder_live(spool: Spool, sid: str, pid: int | None, start: str | None, live: Liveness | None = None) -> bool:
    """Whether a lease's holder lives (docs/architecture/leases.md). Where one host process stands for
    the session (recorded with the lease: its pid and ``procStart``), that process alone decides, the
    policy's first clause asked by itself: a session whose process is gone has ended, and its leases
    with it, at once, whatever a heartbeat of the last 90 s still says. Otherwise, the whole policy."""
    if pid is not None and start is not None:
        return claude_running(pid, start)
    return (live or Liveness(spool))(sid)
