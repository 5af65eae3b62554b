"""Receipts: where one message stands for each session that has it, or should.

A delivery's state is where its link is in the session's maildir: new/ (delivered), claimed/ (a
conduit took it and has not yet shown it), cur/ (seen), held/ (its inbound rule holds it) or
declined/ (held, then declined: the sender's receipt says so, and nothing is mailed back). Five lstat
calls per session at most; nothing is read or written.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from attend.domain.core import outcomes
from attend.domain.sessions import sessions
from attend.layout import name_time
from attend.spool import Spool


@dataclass
class Delivery:
    session_id: str
    display: str
    state: str  # "delivered" | "claimed" | "seen" | "held" | "declined" | "missing" (should have it, and lacks it)
    unreviewed: bool = False  # held, and waiting past a day (it stays): the sender sees it as the session does


@dataclass
class Receipt:
    id: str
    room: str
    recipients: list[Delivery] = field(default_factory=list)
    delivered: int = 0
    claimed: int = 0
    seen: int = 0
    held: int = 0
    declined: int = 0
    missing: int = 0


def state_of(spool: Spool, sid: str, name: str) -> str | None:
    return spool.delivery_state(sid, name)


def receipt(spool: Spool, room: str, name: str, sender: str) -> Receipt:
    out = Receipt(name, room)
    names = sessions.registered_names(spool)
    sids = spool.names("sessions")
    expected = set(sessions.recipients(spool, room)) - {sender}
    for sid in sids:
        state = state_of(spool, sid, name)
        if state is None and sid in expected:
            state = "missing"
        if state is None:
            continue
        late = state == "held" and time.time() - name_time(name) > outcomes.UNREVIEWED_AFTER
        out.recipients.append(Delivery(sid, names.get(sid, sid[:8]), state, late))
        setattr(out, state, getattr(out, state) + 1)
    return out
