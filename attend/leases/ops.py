"""Taking, releasing and listing leases (docs/architecture/leases.md). Every answer names each glob
it did not touch, and why; a conflict names the holder and its reason, and nothing that conflicts
is granted unless both sides are shared."""

from __future__ import annotations

import time
from dataclasses import dataclass

from attend.leases import globs, tree
from attend.leases.store import Holding, Lease, current, live_holdings, lock, read, same_process, write
from attend.spool import Spool

MAX_GLOBS = 64  # globs one call may name


@dataclass(frozen=True)
class Holder:
    """Who asks: a session id, its name and client, and the host process it lives in (if one stands for it)."""

    sid: str
    name: str
    client: str | None
    pid: int | None
    start: str | None


@dataclass(frozen=True)
class Untouched:
    glob: str  # as given
    why: str
    holder: str | None = None  # the holder's name, for a conflict
    holder_reason: str | None = None


@dataclass(frozen=True)
class Outcome:
    root: str
    done: tuple[Lease, ...]
    untouched: tuple[Untouched, ...]


def conflict_line(holding: Holding, lease: Lease) -> str:
    """A conflict, as an answer says it: the holder's name and reason are its own words (framing.py)."""
    from attend.domain.core import framing

    reason = f', reason "{framing.inline(lease.reason)}"' if lease.reason else ""
    client = f" ({framing.label(holding.client)})" if holding.client else ""
    return f"leased by {framing.label(holding.name)}{client}{reason}"


def take(
    spool: Spool,
    me: Holder,
    cwd: str,
    asked: list[str],
    reason: str,
    shared: bool,
    until: float | None,
    now: float | None = None,
) -> Outcome:
    now = time.time() if now is None else now
    root = tree.project_root(cwd)
    done: list[Lease] = []
    untouched: list[Untouched] = []
    with lock(spool):
        holdings = live_holdings(spool, now, sweep=True)
        others = [h for h in holdings if h.sid != me.sid and not same_process(h, me.pid, me.start)]
        kept = list(_adopt(spool, me.sid, me.pid, me.start, holdings, now))
        for given in asked:
            glob, why = tree.normalise(given, root)
            if glob is None:
                untouched.append(Untouched(given, why))
                continue
            lease = Lease(root, glob, reason, shared, now, until)
            clash = next(
                (
                    (h, x)
                    for h in others
                    for x in h.leases
                    if globs.overlap(x.where, lease.where) and not (x.shared and shared)
                ),
                None,
            )
            if clash is not None:
                holding, theirs = clash
                what = "a shared lease, and yours is not" if theirs.shared else "an exclusive lease"
                untouched.append(
                    Untouched(
                        given, f"{conflict_line(holding, theirs)}: {what} on {theirs.glob}", holding.name, theirs.reason
                    )
                )
                continue
            if len(kept) >= 256 and not any(x.where == lease.where for x in kept):
                untouched.append(Untouched(given, "this session holds 256 leases already; release some first"))
                continue
            kept = [x for x in kept if x.where != lease.where] + [lease]
            done.append(lease)
        if done:
            write(spool, Holding(me.sid, me.pid, me.start, me.name, me.client, tuple(kept)))
    return Outcome(root, tuple(done), tuple(untouched))


def _adopt(
    spool: Spool, sid: str, pid: int | None, start: str | None, holdings: list[Holding], now: float
) -> tuple[Lease, ...]:
    """The session's current leases, with those its own host process holds under an id it had before
    a /clear that no move carried (a session that never enrolled): they become this id's, at once."""
    mine = read(spool, sid)
    kept = list(current(mine, now).leases) if mine else []
    for h in holdings:
        if h.sid != sid and same_process(h, pid, start):
            kept += [x for x in h.leases if all(x.where != k.where for k in kept)]
            write(spool, h._replace(leases=()))
            if mine is None:
                mine = h._replace(sid=sid)
    if mine is not None and tuple(kept) != mine.leases:
        write(spool, mine._replace(sid=sid, leases=tuple(kept)))
    return tuple(kept)


def give_up(
    spool: Spool,
    sid: str,
    cwd: str,
    asked: list[str],
    now: float | None = None,
    process: tuple[int | None, str | None] = (None, None),
) -> Outcome:
    """Release ``asked`` (globs as leased, or paths they cover exactly) of session ``sid``, or all of its
    leases when ``asked`` is empty. ``process``: the caller's host process (pid, procStart), whose
    leases under an id before a /clear are its own too."""
    now = time.time() if now is None else now
    root = tree.project_root(cwd)
    with lock(spool):
        holdings = live_holdings(spool, now, sweep=True)
        held = list(_adopt(spool, sid, *process, holdings, now))
        others = {h.sid: h for h in holdings if h.sid != sid and not same_process(h, *process)}
        mine = read(spool, sid)
        if not asked:
            if mine is not None:
                write(spool, mine._replace(leases=()))
            return Outcome(root, tuple(held), ())
        done: list[Lease] = []
        untouched: list[Untouched] = []
        for given in asked:
            glob, why = tree.normalise(given, root)
            if glob is None:
                untouched.append(Untouched(given, why))
                continue
            where = f"{root.rstrip('/')}/{glob}"
            hit = [x for x in held if x.where == where]
            if hit:
                done += hit
                held = [x for x in held if x.where != where]
                continue
            holder = next((h for s, h in others.items() if s != sid for x in h.leases if x.where == where), None)
            if holder is not None:
                untouched.append(
                    Untouched(
                        given,
                        f"held by {holder.name}, not by this session: only its holder or the human releases it",
                        holder.name,
                    )
                )
            else:
                untouched.append(Untouched(given, "no lease on it is held by this session"))
        if mine is not None and done:
            write(spool, mine._replace(leases=tuple(held)))
    return Outcome(root, tuple(done), tuple(untouched))


def find_holder(spool: Spool, name: str, now: float | None = None) -> Holding | None:
    """The live holder named (its id, or its name as shown, case-insensitively)."""
    wanted = name.strip()
    holdings = live_holdings(spool, now)
    return next((h for h in holdings if h.sid == wanted), None) or next(
        (h for h in holdings if h.name.lower() == wanted.lower()), None
    )
