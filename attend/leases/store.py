"""The leases in the spool, through the gate (docs/architecture/leases.md).

Each holder's leases are one small JSON file, ``sessions/<sid>/leases``: the host process the session
lives in (its pid and ``procStart``, where one process stands for the session), its name and client
when it leased, and the leases, each a root, a glob, a reason, shared or not, since, and an optional
end. A ``/clear`` carries the file to the new id with the rest of the session's state
(``layout.CARRIED_FILES``). A lease or a release runs under ``locks/leases``, so two sessions asking
for one file at once never both win it.

There is no timer: a lease whose holder has ended (``liveness.holder_live``) or whose ``--for`` has
run out is ignored by every reader at once, and removed by the next lease, release or listing.
"""

from __future__ import annotations

import contextlib
import time

from attend import layout as L
from attend.domain.sessions import liveness
from attend.leases.record import MAX_FILE, MAX_LEASES, MAX_REASON, Holding, Lease, parse
from attend.spool import Spool

__all__ = ["MAX_FILE", "MAX_LEASES", "MAX_REASON", "Holding", "Lease", "parse"]


def read(spool: Spool, sid: str) -> Holding | None:
    try:
        data = spool.read(L.SESSIONS, sid, L.LEASES, limit=MAX_FILE)
    except OSError:
        return None
    return parse(sid, data)


def write(spool: Spool, holding: Holding) -> None:
    if holding.leases:
        spool.write_state(holding.document(), L.SESSIONS, holding.sid, L.LEASES)
    else:
        spool.remove(L.SESSIONS, holding.sid, L.LEASES)


def holder_ids(spool: Spool) -> list[str]:
    """The sessions with a lease file (one listing of sessions/, one probe per folder)."""
    return [sid for sid, has in spool.survey(L.SESSIONS, (L.LEASES,)).items() if isinstance(has, tuple) and has[0]]


def lock(spool: Spool) -> contextlib.AbstractContextManager[bool]:
    return spool.named_lock(L.LEASES_LOCK)


class Live:
    """Which holders live, each asked once (one liveness policy: ``liveness.holder_live``)."""

    def __init__(self, spool: Spool) -> None:
        self.spool = spool
        self.policy = liveness.Liveness(spool)
        self.known: dict[str, bool] = {}

    def __call__(self, holding: Holding) -> bool:
        if holding.sid not in self.known:
            self.known[holding.sid] = liveness.holder_live(
                self.spool, holding.sid, holding.pid, holding.start, self.policy
            )
        return self.known[holding.sid]


def current(holding: Holding, now: float) -> Holding:
    """The holding without leases whose ``--for`` has run out."""
    kept = tuple(x for x in holding.leases if x.until is None or x.until > now)
    return holding if len(kept) == len(holding.leases) else holding._replace(leases=kept)


def live_holdings(spool: Spool, now: float | None = None, sweep: bool = False) -> list[Holding]:
    """Every live holder's current leases. ``sweep`` (under the lock): remove what is ended or run out."""
    now = time.time() if now is None else now
    live = Live(spool)
    out = []
    for sid in holder_ids(spool):
        holding = read(spool, sid)
        if holding is None:
            continue
        alive = live(holding)
        kept = current(holding, now) if alive else holding._replace(leases=())
        if sweep and kept != holding:
            write(spool, kept)
        if kept.leases:
            out.append(kept)
    return out


def same_process(a: Holding, pid: int | None, start: str | None) -> bool:
    """Whether a holding was made by the host process ``pid`` (the caller's, before a /clear moved it)."""
    return a.pid is not None and a.pid == pid and a.start == start
