"""The relay's side of the spool, through the gate only: the outbox it publishes from, and the arrivals
it writes. Plain functions the daemon runs in a worker thread (every fsync stays off its event loop);
nothing here imports nats.

**Outbox.** ``send`` links a record for other hosts into ``relay/outbox/new/`` with its room links,
durable before it returns. The relay publishes them in name order, each with its name as
``Nats-Msg-Id``; on the server's ack it renames the entry into ``relay/outbox/cur/`` (what the server
took; pruned after a day). Whatever is in ``new/`` is the queue, across crashes and outages.

**Arrivals.** Each is checked (the subject's host, the name's host and the ``Attend-From-Host`` header
agree; the record is a plain, unrelayed record of that host for a room its subject allows), then
recorded in ``relay/seen/<original id>`` with the fresh local name it gets (a batch's entries synced
together), then published into its room under that name within the link bound (a batch's records
synced together), then fanned out like any send, then marked landed in ``relay/landed/<original id>``
(an empty file each, the folder synced once); only then is the batch acknowledged. A redelivery that
is marked landed, or whose seen entry names a record still in the room, is a duplicate, whether or not
retention has removed the room's copy since; one whose record never landed (a crash between the index
and the room) is written again under a fresh name. Both folders outlive the room's ``new/``.
"""

from __future__ import annotations

import contextlib
import time
from typing import NamedTuple

from attend import layout
from attend.domain.core import envelope, rooms
from attend.domain.core.envelope import EnvelopeError, Signal
from attend.domain.messages import delivery, remote
from attend.domain.sessions.context import MESSAGE_LIMIT
from attend.errors import SpoolError
from attend.layout import NAME_RE, OUTBOX, RELAY, RELAY_SEEN
from attend.relay import subjects
from attend.spool import LateName, Spool

FROM_HOST = "Attend-From-Host"  # header: the sending host, checked against the subject and the name
PARENT = "Attend-Re"  # header: a reply's parent by its original id (the sender's copy may be relayed)
LANDED = "landed"  # relay/landed/<original id>: empty; the arrival landed in its room (outlives the room's copy)
OUTBOX_KEEP = 24 * 3600  # seconds a published record stays in outbox/cur/ (a replay source)
SEEN_KEEP = (subjects.MAX_AGE_DAYS + 1) * 86400  # the index outlives anything the stream can deliver again


NAME_MAX = 128  # characters of a relayed sender's name or on-behalf-of kept
FIELD_MAX = 4096  # characters of a relayed origin or To kept


class Refused(Exception):
    """An arrival that must never be written: the server is told to stop delivering it."""


# ---------------------------------------------------------------------- outbox


def pending(spool: Spool) -> list[str]:
    """The outbox queue, oldest first."""
    return spool.names(RELAY, OUTBOX, layout.NEW)


def outgoing(spool: Spool, me: str, name: str) -> tuple[str, bytes, dict[str, str]] | None:
    """(subject, record, headers) for one outbox entry; None for one that cannot go out (set aside)."""
    try:
        data = spool.read(RELAY, OUTBOX, layout.NEW, name, limit=subjects.MAX_MSG)
        headers, _ = envelope.parse_headers(data)
    except FileNotFoundError:
        return None
    except (OSError, EnvelopeError) as e:
        set_aside(spool, name, "", f"unreadable ({e})")
        return None
    room = headers.get("Room", "")
    subject = subjects.subject_for(me, room)
    if subject is None or layout.name_host(name) != me or headers.get("Relayed-From"):
        # A relayed arrival is never published again (no loops), nor a record of another host.
        if layout.name_host(name) != me:
            why = f"named for host {layout.name_host(name)[:63]}, and this relay publishes as {me}"
        elif headers.get("Relayed-From"):
            why = "an arrival from another host, never published again"
        else:
            why = f"room {room[:80]!r} goes to no other host"
        set_aside(spool, name, headers.get("From-Id", ""), why)
        return None
    out = {"Nats-Msg-Id": name, FROM_HOST: me}
    parent = headers.get("Re")
    if parent and NAME_RE.fullmatch(parent):
        out[PARENT] = original_id(spool, parent, room)
    return subject, data, out


def original_id(spool: Spool, name: str, room: str) -> str:
    """A parent's id as its own host named it: a relayed copy's ``Relayed-Id``, else the name."""
    for where in [room, *(r for r in spool.rooms() if r != room)]:
        try:
            headers, _ = envelope.parse_headers(spool.read_record(where, name, 4096))
        except FileNotFoundError:
            continue
        except (OSError, EnvelopeError):
            break
        relayed = headers.get("Relayed-Id", "")
        return relayed if NAME_RE.fullmatch(relayed) else name
    return name


def set_aside(spool: Spool, name: str, sender: str, why: str) -> None:
    """An outbox entry that cannot go out: moved to ``relay/outbox/aside/``, never in silence. The log
    says it, ``relay/aside.log`` keeps why (doctor and relay --check count and show them), and the
    sender's next send says it."""
    spool.log(f"relay: outbox entry {name} set aside: {why}")
    spool.make_dir(RELAY, OUTBOX, layout.ASIDE)
    spool.move_entry((RELAY, OUTBOX, layout.NEW, name), (RELAY, OUTBOX, layout.ASIDE, name))
    remote.set_aside_note(spool, name, sender, why)


def sent(spool: Spool, name: str) -> None:
    """The server took it: out of the queue."""
    spool.move_entry((RELAY, OUTBOX, layout.NEW, name), (RELAY, OUTBOX, layout.CUR, name))


def prune(spool: Spool, now: float | None = None) -> int:
    """Drop published outbox entries and index entries past their keep (bounded growth)."""
    now = time.time() if now is None else now
    removed = 0
    for parts, keep in (
        ((RELAY, OUTBOX, layout.CUR), OUTBOX_KEEP),
        ((RELAY, OUTBOX, layout.ASIDE), SEEN_KEEP),  # what doctor counts, kept as long as the index
        ((RELAY, RELAY_SEEN), SEEN_KEEP),
        ((RELAY, LANDED), SEEN_KEEP),
    ):
        cut = layout.cutoff_name(now - keep)
        for name in spool.names(*parts):
            if name >= cut:
                break
            removed += spool.remove(*parts, name)
    return removed


# ---------------------------------------------------------------------- arrivals


class Arrival(NamedTuple):
    """An arrival admitted for writing: its room here, the fresh local name its index entry holds, its
    original id, and the record as it will be written."""

    room: str
    name: str
    msg_id: str
    sig: Signal
    also: tuple[str, ...] = ()  # the mailbox room of a human of this host the record answers


def receive(spool: Spool, me: str, subject: str, headers: dict[str, str], data: bytes) -> str:
    """Write one arrival, durable on return: "stored", "duplicate" or "own" (this host's broadcast,
    skipped). Raises as ``admit`` and ``land`` do."""
    got = admit(spool, me, subject, headers, data)
    if isinstance(got, str):
        return got
    spool.sync_files((RELAY, RELAY_SEEN), [got.msg_id])
    land(spool, got, sync=True)
    mark_landed(spool, [got.msg_id])
    return "stored"


def admit(
    spool: Spool, me: str, subject: str, headers: dict[str, str], data: bytes, batch: set[str] | None = None
) -> str | Arrival:
    """Check one arrival and record it in the index (not synced: the caller syncs a batch's entries
    before any of them lands, so no record is ever in a room ahead of its durable entry). "duplicate"
    or "own" when there is nothing to write; ``batch`` holds the ids admitted so far in this batch (a
    record the stream holds twice). Raises Refused for an arrival that lies about its host or its room,
    SpoolError/OSError when the spool cannot take it now (not acknowledged: the server delivers it again)."""
    parsed = subjects.parse(subject)
    if parsed is None:
        raise Refused(f"not a relay subject: {subject[:80]}")
    src, dst, kind = parsed
    if src == me:
        return "own"
    msg_id = headers.get("Nats-Msg-Id", "")
    if not NAME_RE.fullmatch(msg_id) or layout.name_host(msg_id) != src or headers.get(FROM_HOST) != src:
        raise Refused(f"from {src}: its id {msg_id[:80]!r} or {FROM_HOST} names another host")
    try:
        sig = envelope.parse(data)
    except EnvelopeError as e:
        raise Refused(f"from {src}: {msg_id} is not a record this attend reads ({e})") from e
    if sig.id != msg_id or sig.via or "@" in sig.from_id:
        raise Refused(f"from {src}: {msg_id} is not {src}'s own record")
    if not (layout.is_user_name(sig.from_id) if sig.from_kind == "human" else layout.is_session_id(sig.from_id)):
        raise Refused(f"from {src}: {msg_id}'s From-Id {sig.from_id[:80]!r} is not a session id or user name")
    if len(sig.to) > FIELD_MAX or not sig.to.isprintable():
        raise Refused(f"from {src}: {msg_id}'s Attend-To is not a short printable list")
    size = len(sig.body.encode("utf-8", "surrogatepass"))
    if size > MESSAGE_LIMIT or "\x00" in sig.body:
        # Another host's record obeys this host's limits, as a send here does.
        limit = f"the {MESSAGE_LIMIT // 1024} KiB limit"
        raise Refused(f"from {src}: {msg_id}'s body ({size} bytes) is over {limit} or holds NUL")
    room = subjects.local_room(sig.room, dst, kind, me)
    if room is None:
        raise Refused(f"from {src}: {msg_id}'s room {sig.room[:80]!r} does not match {subject}")
    if kind == "human" and not spool.exists(layout.HUMANS, room[2:]):
        # Only a human of this host mints its mailbox (it used the bus here, and presence said so).
        raise Refused(f"from {src}: {msg_id} is for {room[2:]!r}, who has no mailbox on {me}")
    if batch is not None and msg_id in batch:
        return "duplicate"
    seen = spool.read_text(RELAY, RELAY_SEEN, msg_id)
    if seen:
        local, _, where = seen.strip().partition(" ")
        if NAME_RE.fullmatch(local) and spool.exists(layout.ROOMS, where or room, layout.NEW, local):
            # Landed; its fan-out may not have (a relay killed between the two): link what is missing,
            # as repair would (a name already in a maildir is never linked again).
            with contextlib.suppress(OSError, EnvelopeError):
                here = envelope.parse(spool.read_record(where or room, local))
                delivery.fan_out(spool, here, [where or room])
            return "duplicate"
        if spool.exists(RELAY, LANDED, msg_id):
            return "duplicate"  # landed, and retention (age, max_per_room) has removed it since
        if (
            NAME_RE.fullmatch(local)
            and where
            and local < layout.cutoff_name(time.time() - subjects.MAX_AGE_DAYS * 86400)
        ):
            return "duplicate"  # an entry older than the landed marks, landed long ago
    parent = _parent_here(spool, me, headers.get(PARENT, ""))
    # Fields that only describe the record are dropped when bad, never trusted as they came.
    sender = sig.sender if 0 < len(sig.sender) <= NAME_MAX and sig.sender.isprintable() else sig.from_id
    origin = sig.origin if len(sig.origin) <= FIELD_MAX and "\0" not in sig.origin else ""
    obo = sig.on_behalf_of
    if obo is not None and not (len(obo) <= NAME_MAX and obo.isprintable()):
        obo = None
    relayed = Signal(
        id="",
        sender=f"{sender}@{src}",
        from_kind=sig.from_kind,
        from_id=f"{sig.from_id}@{src}",
        to=",".join(part.removesuffix("@" + me) for part in sig.to.split(",")),  # this host's, as named here
        room=room,
        origin=f"{src}:{origin}",
        body=sig.body,
        at=0.0,
        re=parent,
        on_behalf_of=obo,
        via=src,
        relayed=msg_id,
        client=sig.client,
    )
    name = layout.unique_name()
    # The index first: a redelivery after a crash finds the name and looks for it in the room.
    spool.write_state(f"{name} {room}\n".encode(), RELAY, RELAY_SEEN, msg_id)
    if batch is not None:
        batch.add(msg_id)
    return Arrival(room, name, msg_id, relayed, _asker(spool, room, parent))


def _asker(spool: Spool, room: str, parent: str | None) -> tuple[str, ...]:
    """The mailbox room of the human of this host whose record in ``room`` an arrival answers: a reply
    to a human's message reaches the human's mailbox as it does on one host (verbs/reply.py links a
    reply there when the human does not hear the room itself)."""
    if parent is None or room.startswith("h-"):
        return ()
    try:
        headers, _ = envelope.parse_headers(spool.read_record(room, parent, 4096))
    except (OSError, EnvelopeError):
        return ()
    user = headers.get("From-Id", "")
    if headers.get("From-Kind") != "human" or headers.get("Relayed-From") or not layout.is_user_name(user):
        return ()
    return (rooms.human_room(user),) if spool.exists(layout.HUMANS, user) else ()


def land(spool: Spool, arrival: Arrival, sync: bool = False) -> str:
    """Publish an admitted arrival into its room under its local name, within the link bound, and fan it
    out like any send; the name it landed under. ``sync=False`` leaves the record's syncs to the
    caller's one ``Spool.sync_records`` per batch, before it acknowledges anything. A name that missed
    the bound is replaced by a fresh one, its index entry rewritten (and synced) first."""
    name = arrival.name
    for _ in range(delivery.PUBLISH_TRIES):
        named = arrival.sig.with_id(name, layout.name_time(name))
        try:
            spool.publish([arrival.room, *arrival.also], envelope.render(named), name, bounded=True, sync=sync)
        except LateName as e:
            spool.log(f"relay: {e}; writing {arrival.msg_id} again under a fresh name")
            name = layout.unique_name()
            spool.write_state(f"{name} {arrival.room}\n".encode(), RELAY, RELAY_SEEN, arrival.msg_id, durable=True)
            continue
        delivery.fan_out(spool, named, [arrival.room, *arrival.also])
        return name
    raise SpoolError(f"the spool at {spool.root} is too slow to take {arrival.msg_id}")


def mark_landed(spool: Spool, msg_ids: list[str]) -> None:
    """Mark arrivals whose records are durable in their rooms: from now on a redelivery is a duplicate
    even once retention has removed the room's copy. Empty files, so the folder's one sync makes the
    batch's marks durable (before it is acknowledged)."""
    for msg_id in msg_ids:
        spool.create_exclusive(b"", RELAY, LANDED, msg_id)
    spool.sync_files((RELAY, LANDED), [])


def _parent_here(spool: Spool, me: str, parent: str) -> str | None:
    """A reply's parent as this spool names it: this host's own id, or the local name an arrival got."""
    if not NAME_RE.fullmatch(parent):
        return None
    if layout.name_host(parent) == me:
        return parent
    seen = spool.read_text(RELAY, RELAY_SEEN, parent)
    local = seen.split(" ", 1)[0].strip() if seen else ""
    return local if NAME_RE.fullmatch(local) else None
