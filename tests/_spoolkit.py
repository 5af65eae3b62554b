"""Small helpers for tests that need records of a given age: written through the real send path."""

from __future__ import annotations

import itertools
import os
import secrets
import time

from attend.domain import envelope, sessions
from attend.domain.envelope import Signal
from attend.spool import Spool

_seq = itertools.count()


def name_at(at: float) -> str:
    """A unique name for time ``at``. spool.unique_name never goes back in time within a process,
    so backdated records get their names here, in the same grammar."""
    sec, usec = divmod(int(at * 1_000_000), 1_000_000)
    return f"{sec:010d}.M{usec:06d}P{os.getpid()}Q{next(_seq)}R{secrets.token_hex(4)}.test"


def post(spool: Spool, room: str, body: str, *, sender: str = "someone-else", age: float = 0.0) -> str:
    """Publish one record into ``room`` as if sent ``age`` seconds ago, fanned out as send does."""
    sig = Signal(
        id="",
        sender="Other-alpha",
        from_kind="agent",
        from_id=sender,
        to="*",
        room=room,
        origin="/elsewhere",
        body=body,
        at=0.0,
    )
    name = name_at(time.time() - age)
    sig = sig.with_id(name, time.time() - age)
    spool.publish([room], envelope.render(sig), name)
    for sid in sessions.recipients(spool, room):
        if sid != sender:
            spool.link_delivery(sid, room, name)
    return name


def tree(root: object) -> dict[str, bytes | None]:
    """Every path below root with its bytes (None for a folder): for byte-identical comparisons."""
    import os

    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(str(root)):
        for d in dirnames:
            out[os.path.join(dirpath, d)] = None
        for f in filenames:
            path = os.path.join(dirpath, f)
            with open(path, "rb") as fh:
                out[path] = fh.read()
    return out
