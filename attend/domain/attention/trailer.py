"""The notification trailer's engine (docs/architecture/mcp.md, "The trailer"): attention, subscriptions, cursors.

A nudge, not a conduit: items are headers (who, what, which id), the body stays in the inbox, and
nothing here reads or changes a delivery's flags. Invariants:
- cursors live in ``sessions/<sid>/notify/`` keyed on the resolved session id, one file for
  attention and one per subscription (``sub-<id>.json``); a /clear move carries the folder;
- a cursor moves only forward, and only past what it delivered (its ``after``); ``scanned`` marks
  how far it looked, so an unrelated record is not read twice. Every pass runs under the session's
  notify lock and re-reads the cursor inside it, which makes the advance a compare-and-set;
- unique names sort in send order, but a sender can publish a name a little after a later one was
  published, never more than the link bound (``layout.LINK_BOUND``, enforced by Spool.publish) after
  its time. A pass therefore re-examines that many seconds below ``scanned`` (``GRACE``) and skips
  the names it already delivered there (``seen``), so a late record is still reported exactly once;
- "nothing pending" is one small read per cursor and one stat per watched room: a room whose
  ``new/`` mtime equals the stamp of the last complete pass has nothing new. A stamp taken within
  ``RACY`` seconds of its change is not trusted (mtimes are coarse), as git does with its index;
- at most ``LIMIT`` items per call; the rest stay above the cursor for the next call;
- building a trailer never fails the call: any error reads as nothing pending plus one log line.
"""

from __future__ import annotations

import bisect
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field

from attend import safejson
from attend.domain.core import envelope, framing, rooms
from attend.domain.sessions import sessions
from attend.errors import UsageError
from attend.identity import Identity
from attend.layout import LINK_BOUND, NAME_RE, SEEN, base_name, cutoff_name, is_session_id, iso, name_time
from attend.spool import Spool

LIMIT = 50  # items per call, over all sources
GRACE = LINK_BOUND  # seconds re-examined below a cursor: no record lands later than this after its name
RACY = 0.5  # seconds: a directory changed this recently may change again within the same mtime tick
SEED_WINDOW = 120.0  # a new attention cursor starts this far back (the cold-start window), or at enrollment
SUB_CAP = 32  # subscriptions per session
LOCK_WAIT = 2.0  # seconds the trailer waits for the notify lock (held for milliseconds by a pass)
TITLE_MAX = 80
PRESENCE_ROOM = "sys-presence"  # presence events: From-Id the peer, body "started" or "ended"
KINDS = ("open", "channel:<name>", "peer_started", "peer_ended")
HEAD_BYTES = 4096


@dataclass
class Item:
    source: str  # "attention" | "subscription"
    kind: str  # reply, direct, project, open, channel:<name>, peer_started, peer_ended
    id: str  # the message id: `inbox` with it reads the record
    project_id: str | None  # the sender's project path
    title: str
    at: str  # ISO 8601, UTC


@dataclass
class Cursor:
    after: str = ""  # newest name delivered
    scanned: str = ""  # newest name examined
    seen: list[str] = field(default_factory=list)  # names delivered within GRACE below `scanned`
    stamps: dict[str, int] = field(default_factory=dict)  # room -> new/ mtime_ns of the last full pass

    @classmethod
    def load(cls, raw: object) -> Cursor:
        if not isinstance(raw, dict):
            raise ValueError("cursor is not an object")
        stamps = raw.get("stamps") or {}
        return cls(
            after=str(raw.get("after", "")),
            scanned=str(raw.get("scanned", "")),
            seen=[str(n) for n in raw.get("seen") or []],
            stamps={str(k): int(v) for k, v in stamps.items()},
        )


@dataclass
class Subscription:
    id: str
    kinds: list[str]
    project: str | None
    created_at: float
    cursor: Cursor


def time_key(at: float) -> str:
    """A string that sorts just before every unique name sent at or after ``at``."""
    return cutoff_name(max(at, 0.0))


def title_of(sender: str, text: str, sep: str = ": ") -> str:
    """``<sender label>: <text>`` on one line (``attend.domain.core.framing``), at most 80 characters. A
    head read may end inside a character: the U+FFFD it decodes to is dropped."""
    line = framing.label(sender) + sep + " ".join(framing.inline(text).split())
    line = line.replace("\ufffd", "")
    return line if len(line) <= TITLE_MAX else line[: TITLE_MAX - 1] + "…"


# ---------------------------------------------------------------------- cursor files


def _folder(sid: str) -> tuple[str, ...]:
    return ("sessions", sid, "notify")


def _read_json(spool: Spool, *parts: str) -> object:
    text = spool.read_text(*parts)
    return None if text is None else safejson.loads(text)


def _write_json(spool: Spool, data: object, *parts: str) -> None:
    spool.write_state(json.dumps(data, separators=(",", ":")).encode(), *parts)


def seed_cursor(spool: Spool, room_list: list[str], at: float) -> Cursor:
    """A cursor at ``at`` (or at the newest record, if later), seen-set filled so nothing replays."""
    scanned = time_key(at)
    names_by_room = {room: spool.room_names(room) for room in room_list}
    for names in names_by_room.values():
        if names and names[-1] > scanned:
            scanned = names[-1]
    floor = time_key(name_time(scanned) - GRACE) if "." in scanned else ""
    seen = sorted(n for names in names_by_room.values() for n in names if floor < n <= scanned)
    return Cursor(after=scanned, scanned=scanned, seen=seen)


def load_attention(spool: Spool, who: Identity, room_list: list[str]) -> Cursor:
    try:
        raw = _read_json(spool, *_folder(who.id), "attention.json")
        if raw is not None:
            return Cursor.load(raw)
    except (ValueError, TypeError, AttributeError) as e:
        spool.log(f"notify: attention cursor of {who.id} is unreadable ({e}); starting it afresh")
    enrollment = sessions.read_enrollment(spool, who.id)
    now = time.time()
    start = now - SEED_WINDOW
    if enrollment is not None and start < enrollment.enrolled_at <= now:
        start = enrollment.enrolled_at
    return Cursor(after=time_key(start), scanned=time_key(start))


def load_subscriptions(spool: Spool, sid: str) -> list[Subscription]:
    try:
        names = spool.names(*_folder(sid))
    except OSError:  # a planted symlink or file in place of the folder: no subscriptions
        return []
    out = []
    for name in names:
        if not (name.startswith("sub-") and name.endswith(".json")):
            continue
        try:
            raw = _read_json(spool, *_folder(sid), name)
            assert isinstance(raw, dict)
            out.append(
                Subscription(
                    id=str(raw["id"]),
                    kinds=[str(k) for k in raw["kinds"]],
                    project=raw.get("project"),
                    created_at=float(raw.get("created_at", 0)),
                    cursor=Cursor.load(raw["cursor"]),
                )
            )
        except (ValueError, TypeError, KeyError, AssertionError, AttributeError) as e:
            spool.log(f"notify: subscription file {sid}/{name} is unreadable ({e}); skipping it")
    return out


def save_subscription(spool: Spool, sid: str, sub: Subscription) -> None:
    data = {
        "id": sub.id,
        "kinds": sub.kinds,
        "project": sub.project,
        "created_at": sub.created_at,
        "cursor": asdict(sub.cursor),
    }
    _write_json(spool, data, *_folder(sid), f"sub-{sub.id}.json")


# ---------------------------------------------------------------------- reading records


class Reader:
    """Header reads for one pass, with the parent lookups a reply check needs."""

    def __init__(self, spool: Spool, me: str) -> None:
        self.spool = spool
        self.me = me
        self._parents: dict[str, str | None] = {}  # parent name -> its From-Id (None: not found)
        self._rooms: list[str] | None = None

    def head(self, room: str, name: str) -> tuple[dict[str, str], str] | None:
        try:
            headers, body = envelope.parse_headers(self.spool.read_record(room, name, HEAD_BYTES))
        except (OSError, envelope.EnvelopeError):
            return None
        return headers, body.decode("utf-8", "replace")

    def parent_is_mine(self, room: str, re: str | None) -> bool:
        """Whether the message ``re`` names was sent by me (or by the id I had before a /clear). A reply
        need not share its parent's room: a private answer lands in my own room, an answer to a
        project or channel I do not hear in my room too, so the parent is looked for in the reply's
        room first and then in every room."""
        if not re or not NAME_RE.fullmatch(re):
            return False
        if re not in self._parents:
            self._parents[re] = self._sender_of(room, re)
        sender = self._parents[re]
        if sender is None:
            return False
        return sender == self.me or (is_session_id(sender) and self.spool.moved_to(sender) == self.me)

    def _sender_of(self, room: str, name: str) -> str | None:
        found = self.head(room, name)
        if found is None:
            if self._rooms is None:
                self._rooms = self.spool.rooms()  # listed once per pass, only when a parent is elsewhere
            found = next((f for r in self._rooms if r != room and (f := self.head(r, name))), None)
        return found[0].get("From-Id") if found else None

    def item(self, source: str, kind: str, name: str, headers: dict[str, str], body: str) -> Item:
        sender = envelope.sender_label(headers)
        presence = kind in ("peer_started", "peer_ended")
        title = title_of(sender, kind[5:], " ") if presence else title_of(sender, body)
        origin = headers.get("Origin")
        return Item(
            source=source,
            kind=kind,
            id=name,
            project_id=envelope.decode_value(origin) if origin else None,
            title=title,
            at=iso(name_time(name)),
        )


Select = Callable[[Reader, str, str], Item | None]


def attention_rooms(spool: Spool, who: Identity) -> list[str]:
    """Where attention can arrive: addressed rooms, and the rooms a reply to the caller lands in."""
    out = [rooms.direct_room(who.id), rooms.project_room(who.origin), rooms.OPEN]
    out.extend(rooms.channel_room(c) for c in sessions.channels_of(spool, who.id))
    return out


def attention_select(who: Identity) -> Select:
    direct, project = rooms.direct_room(who.id), rooms.project_room(who.origin)

    def select(reader: Reader, room: str, name: str) -> Item | None:
        found = reader.head(room, name)
        if found is None:
            return None
        headers, body = found
        if headers.get("From-Id") == who.id:
            return None
        if reader.parent_is_mine(room, headers.get("Re")):
            kind = "reply"
        elif room == direct:
            kind = "direct"
        elif room == project:
            kind = "project"
        else:
            return None
        return reader.item("attention", kind, name, headers, body)

    return select


def subscription_rooms(kinds: list[str]) -> list[str]:
    out: list[str] = []
    for kind in kinds:
        room = rooms.OPEN if kind == "open" else PRESENCE_ROOM
        if kind.startswith("channel:"):
            room = rooms.channel_room(kind.split(":", 1)[1])
        if room not in out:
            out.append(room)
    return out


def subscription_select(who: Identity, sub: Subscription) -> Select:
    kinds = set(sub.kinds)

    def select(reader: Reader, room: str, name: str) -> Item | None:
        found = reader.head(room, name)
        if found is None:
            return None
        headers, body = found
        if headers.get("From-Id") == who.id:
            return None
        if sub.project is not None and envelope.decode_value(headers.get("Origin", "")) != sub.project:
            return None
        if room == PRESENCE_ROOM:
            kind = {"started": "peer_started", "ended": "peer_ended"}.get(body.strip(), "")
        elif room == rooms.OPEN:
            kind = "open"
        else:
            kind = "channel:" + room[1:]
        return reader.item("subscription", kind, name, headers, body) if kind in kinds else None

    return select


# ---------------------------------------------------------------------- one pass


def _stamp(spool: Spool, room: str) -> int:
    return spool.mtime_ns("rooms", room, "new") or 0


def unchanged(spool: Spool, room_list: list[str], cursor: Cursor) -> bool:
    return all(room in cursor.stamps and cursor.stamps[room] == _stamp(spool, room) for room in room_list)


def drain(
    reader: Reader, room_list: list[str], cursor: Cursor, select: Select, budget: int
) -> tuple[list[Item], Cursor]:
    """Items above the cursor (at most ``budget``), and the cursor moved past exactly those."""
    spool = reader.spool
    now = time.time()
    # Stat before listing: a record that lands in between shows up now and again changes the stamp.
    stamps = {room: _stamp(spool, room) for room in room_list}
    floor = time_key(name_time(cursor.scanned) - GRACE) if cursor.scanned else ""
    seen = set(cursor.seen)
    candidates: list[tuple[str, str]] = []
    for room in room_list:
        names = spool.room_names(room)
        candidates.extend((n, room) for n in names[bisect.bisect_right(names, floor) :] if n not in seen)
    candidates.sort()
    items: list[Item] = []
    delivered: list[str] = []
    examined = ""
    capped = False
    for name, room in candidates:
        if len(items) >= budget:
            capped = True
            break
        item = select(reader, room, name)
        examined = name
        if item is not None:
            items.append(item)
            delivered.append(name)
    after = max([cursor.after, *delivered])
    scanned = max(cursor.scanned, delivered[-1] if capped and delivered else ("" if capped else examined))
    low = time_key(name_time(scanned) - GRACE) if scanned else ""
    new_seen = sorted(n for n in seen | set(delivered) if n > low)
    if capped:
        new_stamps: dict[str, int] = {}
    else:
        cutoff = int((now - RACY) * 1e9)
        new_stamps = {room: st for room, st in stamps.items() if st < cutoff}
    return items, Cursor(after, scanned, new_seen, new_stamps)


@dataclass
class Source:
    name: str  # "attention" or the subscription id
    room_list: list[str]
    cursor: Cursor
    select: Select
    save: Callable[[Cursor], None]


def _sources(spool: Spool, who: Identity) -> Iterator[Source]:
    att_rooms = attention_rooms(spool, who)
    folder = _folder(who.id)
    yield Source(
        "attention",
        att_rooms,
        load_attention(spool, who, att_rooms),
        attention_select(who),
        lambda c: _write_json(spool, asdict(c), *folder, "attention.json"),
    )
    for sub in load_subscriptions(spool, who.id):

        def save(c: Cursor, sub: Subscription = sub) -> None:
            sub.cursor = c
            save_subscription(spool, who.id, sub)

        yield Source(sub.id, subscription_rooms(sub.kinds), sub.cursor, subscription_select(who, sub), save)


def pending(spool: Spool, who: Identity, budget: int = LIMIT, wait: float | None = None) -> list[Item]:
    """What the caller has not been shown yet, moving each cursor past what it returns. With
    ``wait``, a lock still held after that many seconds raises TimeoutError, having moved nothing."""
    if not any(not unchanged(spool, s.room_list, s.cursor) for s in _sources(spool, who)):
        return []  # the common case: a few reads and stats, no lock, no listing
    items: list[Item] = []
    with spool.lock(*_folder(who.id), "lock", timeout=wait) as locked:
        if not locked:
            raise TimeoutError(f"the notify lock was held for over {wait:g}s")
        reader = Reader(spool, who.id)
        # Re-read inside the lock: another call may have advanced a cursor meanwhile.
        for source in _sources(spool, who):
            if unchanged(spool, source.room_list, source.cursor):
                continue
            got, cursor = drain(reader, source.room_list, source.cursor, source.select, budget - len(items))
            if cursor != source.cursor:
                source.save(cursor)  # drain only moves forward from the cursor read under this lock
            items.extend(got)
            if len(items) >= budget:
                break
    return items


def trailer(ctx: object) -> list[dict[str, object]] | None:
    """The ``notifications.pending`` list for a successful tool result, or None. Never raises."""
    spool: Spool | None = getattr(ctx, "spool", None)
    try:
        who = ctx.who()  # type: ignore[attr-defined]
        if spool is None or not who.is_agent:
            return None
        # Bounded: a process stopped inside a pass must not hang every tool call of the session.
        return [asdict(i) for i in pending(spool, who, wait=LOCK_WAIT)] or None
    except Exception as e:
        if spool is not None:
            spool.log(f"notify: trailer failed, reported as nothing pending: {type(e).__name__}: {e}")
        return None


# ---------------------------------------------------------------------- deliveries (inbox_wait)


def deliveries(spool: Spool, sid: str) -> list[tuple[str, str]]:
    """(name, path sub) of everything in the session's maildir, in name order. new/ and cur/ both:
    a running loop claims a delivery within milliseconds of its landing."""
    out: list[tuple[str, str]] = []
    for sub in ("new", "claimed", "cur"):
        out.extend((base_name(entry), sub + "/" + entry) for entry in spool.listing(sid, sub))
    out.sort()
    return out


def _read_delivery(spool: Spool, sid: str, name: str, rel: str) -> bytes | None:
    """A delivery's head, read where the listing saw it or where a conduit has since moved it: a
    running loop claims (new/ to claimed/ to cur/) within milliseconds of the link that woke us."""
    for where in (rel, f"claimed/{name}", f"cur/{name}{SEEN}"):
        try:
            return spool.read("sessions", sid, *where.split("/"), limit=HEAD_BYTES)
        except FileNotFoundError:
            continue
        except OSError:
            return None
    return None


def take_deliveries(
    spool: Spool, who: Identity, budget: int = LIMIT, keep: Callable[[], bool] | None = None
) -> list[Item]:
    """Deliveries the trailer has not shown, as attention items; the attention cursor moves past them.

    ``keep`` is asked last, under the lock: when it says no (the caller was cancelled and nobody will
    see the answer), nothing is taken and the cursor stays."""
    with spool.lock(*_folder(who.id), "lock"):
        room_list = attention_rooms(spool, who)
        cursor = load_attention(spool, who, room_list)
        floor = time_key(name_time(cursor.scanned) - GRACE) if cursor.scanned else ""
        seen = set(cursor.seen)
        reader = Reader(spool, who.id)
        items: list[Item] = []
        for name, rel in deliveries(spool, who.id):
            if name <= floor or name in seen or len(items) >= budget:
                continue
            seen.add(name)  # a move between the three listings can show one delivery twice
            data = _read_delivery(spool, who.id, name, rel)
            if data is None:
                continue
            try:
                headers, body = envelope.parse_headers(data)
            except envelope.EnvelopeError:
                continue
            room = headers.get("Room", "")
            if reader.parent_is_mine(room, headers.get("Re")):
                kind = "reply"
            elif room.startswith("d-"):
                kind = "direct"
            elif room.startswith("p-"):
                kind = "project"
            elif room.startswith("@"):
                kind = "channel:" + room[1:]
            else:
                kind = "open"
            items.append(reader.item("attention", kind, name, headers, body.decode("utf-8", "replace")))
        if items and keep is not None and not keep():
            return []
        if items:
            names = [i.id for i in items]
            after = max(cursor.after, names[-1])
            scanned = max(cursor.scanned, names[-1])
            low = time_key(name_time(scanned) - GRACE)
            new_seen = sorted(n for n in set(cursor.seen) | set(names) if n > low)
            # The stamps stay: records in the watched rooms still get their own look by the trailer.
            _write_json(
                spool, asdict(Cursor(after, scanned, new_seen, cursor.stamps)), *_folder(who.id), "attention.json"
            )
        return items


# ---------------------------------------------------------------------- subscriptions


def parse_kinds(raw: tuple[str, ...] | list[str]) -> list[str]:
    kinds: list[str] = []
    for entry in raw:
        for kind in (k.strip() for k in entry.split(",")):
            if not kind:
                continue
            if kind.startswith("channel:"):
                kind = "channel:" + rooms.channel_name(kind.split(":", 1)[1])
            elif kind not in ("open", "peer_started", "peer_ended"):
                raise UsageError(f"unknown kind {kind!r}; valid kinds: {', '.join(KINDS)}")
            if kind not in kinds:
                kinds.append(kind)
    if not kinds:
        raise UsageError(f"give at least one kind: {', '.join(KINDS)}")
    return kinds


def subscribe(spool: Spool, who: Identity, kinds: list[str], project: str | None) -> Subscription:
    import secrets  # here, not at the top: it loads hmac, and hmac OpenSSL (~4 MB in every sensor loop)

    folder = _folder(who.id)
    with spool.lock(*folder, "lock"):
        if len(load_subscriptions(spool, who.id)) >= SUB_CAP:
            raise UsageError(f"this session already has {SUB_CAP} subscriptions; unsubscribe one first")
        now = time.time()
        cursor = seed_cursor(spool, subscription_rooms(kinds), now)
        while True:
            sub = Subscription("s" + secrets.token_hex(4), kinds, project, now, cursor)
            if not spool.exists(*folder, f"sub-{sub.id}.json"):
                break
        save_subscription(spool, who.id, sub)
    return sub


def unsubscribe(spool: Spool, sid: str, sub_id: str) -> bool:
    if not (sub_id.isascii() and sub_id.isalnum()):
        return False
    with spool.lock(*_folder(sid), "lock"):
        return spool.remove(*_folder(sid), f"sub-{sub_id}.json")
