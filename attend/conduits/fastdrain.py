"""The drain's fast path: decide "nothing to deliver" on the standard library alone.

The Stop hook runs at every turn end of every session, so its common case (nothing pending) must
cost about a bare interpreter start: no click, psutil, portalocker or yaml. It reads the spool
through the gate (``attend.spool``, standard library only) and takes the session id from the
payload's ``session_id`` and the enrollment file (docs/architecture/conduits.md), with a few stat calls:

- not enrolled, and no sign of a /clear: exit 0 silently, writing nothing;
- enrolled, nothing in ``new/`` or ``claimed/`` (or what is there carried by a socket post in the
  client's queue: ``posted`` there and the show lock held), no cold-start note, and the authority
  rule's hook form bears the payload out (the session among this process's ancestors is the one it
  names): touch the heartbeat, end the chain of drain rounds, exit 0 silently;
- anything else (pending mail, an opt-out, a /clear, an odd payload, a payload the ancestry does
  not bear out, a spool the gate refuses): hand the payload to the full path in
  ``attend.conduits.drain``, which resolves the caller by the identity rule and reports.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping

from attend import layout as L
from attend import safejson
from attend.errors import SpoolError
from attend.procfs import stat_fields
from attend.spool import Spool

FAST_ARGS = (
    ("--drain", "--format", "hook"),
    ("--format", "hook", "--drain"),
    ("--drain", "--format=hook"),
    ("--format=hook", "--drain"),
)
MAX_HOPS = 15  # as hosts.base.MAX_HOPS
# The variable a host's hooks run with naming its process, where the walk for a /clear starts (else
# this process's parent). Named here, not asked of the hosts: importing them costs the fast path ~10 ms.
HOST_PID_ENV = "CLAUDE_PID"


def read_payload() -> bytes:
    """The Stop payload from stdin; empty when there is no stdin to read (a closed descriptor makes
    ``sys.stdin`` None), so the drain decides from its environment instead of crashing."""
    import sys

    try:
        return sys.stdin.buffer.read() if sys.stdin is not None else b""
    except (OSError, ValueError):
        return b""


def wants_fast_path(argv: list[str]) -> bool:
    return len(argv) >= 2 and argv[1] == "inbox" and tuple(argv[2:]) in FAST_ARGS


def _cleared(spool: Spool, sid: str, env: Mapping[str, str]) -> bool:
    """Whether a host process in our ancestry enrolled under another id (a /clear to follow). True
    too when an earlier release's pointers are still to carry over (layout.BY_HOST_BEFORE): the full
    path looks there, so only a miss pays for the look."""
    start = env.get(HOST_PID_ENV, "")
    pid: int | None = int(start) if start.isdigit() else os.getppid()
    for _ in range(MAX_HOPS + 1):
        if pid is None or pid <= 1:
            break
        fields = stat_fields(pid)
        if fields is None:
            return not os.path.isdir("/proc")  # no /proc: let the full path walk with psutil
        try:
            old = spool.read_text(L.BY_HOST, f"{pid}-{fields[19]}")
        except OSError:
            old = None
        if old is None:
            pid = int(fields[1])
            continue
        return old.strip() != sid
    return bool(spool.entries(L.BY_HOST_BEFORE))  # one failed open when it is gone: the common case


def is_ancestor(sid: str, env: Mapping[str, str]) -> bool:
    """Whether this hook may act for session ``sid``: the authority rule's hook form (the session
    among our ancestors is ``sid``; identity.authority)."""
    from attend import identity
    from attend.errors import IdentityError

    try:
        identity.authority(claimed=sid, env=env, hook=True)
    except IdentityError:
        return False
    return True


def _pending(spool: Spool, sid: str, sub: str) -> bool:
    return any(not n.startswith(".") for n in spool.entries(L.SESSIONS, sid, sub))


def _posting(spool: Spool, sid: str) -> bool:
    """Whether the socket conduit is mid-show with its post in the client's queue: it holds the show
    lock, and its record of the post is there. The client shows the post once this hook returns, so
    what is pending is the post's (the full path would leave it so too, having loaded the drain)."""
    with spool.show_lock(sid, timeout=0) as free:
        return not free


def verdict(spool: Spool, sid: str, data: bytes, blocked: bool) -> None:
    """Tell the waiter started by this same turn end whether the drain blocked: the client holds a
    block's continuation until every asyncRewake hook of the event has exited (measured), so the
    waiter must leave at once when the drain blocks (docs/architecture/conduits.md, "The waiter")."""
    with contextlib.suppress(OSError):
        spool.write_state(f"{L.event_tag(data)} {'block' if blocked else 'none'}".encode(), L.SESSIONS, sid, L.DRAINED)


def decide(data: bytes, env: Mapping[str, str]) -> int | None:
    """0 when the drain is decided here (nothing printed); None to take the full path."""
    try:
        payload = safejson.loads(data or b"{}")
    except ValueError:
        return None
    if not isinstance(payload, dict):
        return None
    sid = payload.get("session_id")
    if not isinstance(sid, str) or not L.is_session_id(sid):
        return None
    try:
        spool = Spool(L.default_root(env))
        enrolled, optout, notice = spool.present((L.SESSIONS, sid), (L.ENROLLED, L.OPTOUT, L.NOTICE))
        if not enrolled:
            return None if _cleared(spool, sid, env) else 0
        if optout or notice:
            return None
        pending = _pending(spool, sid, L.NEW) or _pending(spool, sid, L.CLAIMED)
        if pending and not spool.exists(L.SESSIONS, sid, L.POSTED):
            return None
        if not is_ancestor(sid, env):
            return None  # the full path resolves the caller, and writes nothing for another session
        spool.check()  # ours, and not open to others, before writing anything
        if pending and not _posting(spool, sid):
            return None
        spool.touch(L.SESSIONS, sid, L.HEARTBEAT)
        with contextlib.suppress(OSError):  # an empty drain ends the chain of rounds
            spool.remove(L.SESSIONS, sid, L.DRAIN_ROUNDS)
        verdict(spool, sid, data, blocked=False)
    except (OSError, SpoolError):
        return None  # the full path says what is wrong (a planted entry, a refused spool)
    return 0
