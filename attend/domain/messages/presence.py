"""Peer presence as spool records: a Claude session started or ended.

Sensor loops notice session records appearing and disappearing under ``<claude dir>/sessions/``,
each loop reading only the records inotify names; a pid that died without removing its record is
found by a re-check of every record, made by one loop of the machine per minute (``check_turn``). Each
event becomes one signal in the system room ``sys-presence``: From-Id the peer's session id, body
``started`` or ``ended``. Many loops notice the same peer; an exclusive marker file per event
means exactly one of them writes the record. Nobody is fanned out to (``sessions.recipients``
returns no one for a system room): each loop reads the room from its own cursor.

A record whose session id changes for the same pid and start time is a ``/clear``, not an end and
a start, so peers are keyed by (pid, procStart).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass

from attend import identity, layout
from attend.domain.core import envelope
from attend.domain.core.envelope import EnvelopeError, Signal
from attend.domain.messages import delivery
from attend.domain.sessions import sessions
from attend.identity import SessionRecord
from attend.layout import is_session_id
from attend.spool import Spool

ROOM = layout.PRESENCE_ROOM
CURSOR = layout.PRESENCE_CURSOR  # per session: the newest presence record this loop has read
CHECKED = "checked"  # presence/checked: mtime = the machine's last re-check of every record

Key = tuple[int, str | None]


def display(spool: Spool, record: SessionRecord) -> str:
    origin = identity.normalise_origin(record.cwd or "/")
    who = identity.Identity(
        "agent", record.session_id, origin, "record", True, record.pid, record.proc_start, record.name
    )
    return sessions.display_name(spool, who)


def publish(spool: Spool, record: SessionRecord, event: str) -> bool:
    """Write one presence record for ``event`` of this peer, unless another loop already did."""
    marker = f"{record.session_id}.{event}"
    if not spool.create_exclusive(str(record.pid).encode(), layout.PRESENCE, marker):
        return False
    origin = identity.normalise_origin(record.cwd or "/")
    sig = Signal(
        id="",
        sender=display(spool, record),
        from_kind="agent",
        from_id=record.session_id,
        to="*",
        room=ROOM,
        origin=origin,
        body=event,
        at=0.0,
    )
    delivery.publish(spool, sig, [ROOM])  # within the link bound, as every send: the trailer relies on it
    return True


class PeerWatch:
    """What one loop knows of the machine's live sessions, to turn changes into presence records."""

    def __init__(self, spool: Spool, sessions_dir: str | os.PathLike[str]) -> None:
        self.spool = spool
        self.sessions_dir = sessions_dir
        self.known: dict[Key, SessionRecord] = {}

    def _live(self) -> dict[Key, SessionRecord]:
        return {(r.pid, r.proc_start): r for r in identity.live_records(self.sessions_dir)}

    def baseline(self) -> None:
        """Sessions already running when the loop starts are not news."""
        self.known = self._live()

    def scan(self) -> int:
        """Publish a record for each session that started or ended since the last scan."""
        live = self._live()
        written = 0
        for key, record in live.items():
            if key not in self.known:
                written += publish(self.spool, record, "started")
        for key, record in self.known.items():
            if key not in live:
                written += publish(self.spool, record, "ended")
        self.known = live
        return written

    def update(self, names: set[str]) -> int:
        """``scan`` for the session records ``names`` only (what inotify said changed): a session's
        start, end or status change costs each loop one record, not the machine's whole list."""
        written = 0
        for name in names:
            if not name.endswith(".json") or not name[:-5].isdigit():
                continue  # a client's temporary file, say
            pid = int(name[:-5])
            record = identity.read_record(self.sessions_dir, pid)
            if record is not None and (record.pid != pid or not identity.record_is_live(record)):
                record = None
            for key in [k for k in self.known if k[0] == pid]:
                if record is None or key != (pid, record.proc_start):
                    written += publish(self.spool, self.known.pop(key), "ended")
            if record is not None:
                key = (pid, record.proc_start)
                if key not in self.known:
                    written += publish(self.spool, record, "started")
                self.known[key] = record  # a /clear keeps the key and changes the id
        return written


@dataclass(frozen=True)
class PresenceEvent:
    name: str
    event: str  # "started" | "ended"
    sid: str
    display: str
    origin: str


def check_turn(spool: Spool, every: float, now: float | None = None) -> bool:
    """Whether this loop makes the machine's re-check of every session record now: the first loop
    whose liveness timer comes after ``every`` seconds have passed since the last re-check stamps
    ``presence/checked`` and makes it; the others skip it on one ``stat``. Two loops that both pass
    the stat both scan, which is harmless: each event's marker lets only one record through."""
    now = time.time() if now is None else now
    last = spool.mtime(layout.PRESENCE, CHECKED)
    if last is not None and 0 <= now - last < every:
        return False
    spool.touch(layout.PRESENCE, CHECKED)
    return True


def read_new(spool: Spool, sid: str) -> Iterator[PresenceEvent]:
    """Presence records newer than this session's cursor (the cursor starts at the newest: no
    replay of history). Advances the cursor past what it yields."""
    names = spool.room_names(ROOM)
    cursor = spool.read_text("sessions", sid, CURSOR)
    if cursor is None:
        if names:
            spool.write_state(names[-1].encode(), "sessions", sid, CURSOR)
        else:
            spool.write_state(b"", "sessions", sid, CURSOR)
        return
    cursor = cursor.strip()
    fresh = [n for n in names if n > cursor]
    for name in fresh:
        try:
            sig = envelope.parse(spool.read_record(ROOM, name))
        except (OSError, EnvelopeError):
            continue
        if sig.body in ("started", "ended") and is_session_id(sig.from_id):
            yield PresenceEvent(name, sig.body, sig.from_id, sig.sender, sig.origin)
    if fresh:
        spool.write_state(fresh[-1].encode(), "sessions", sid, CURSOR)
