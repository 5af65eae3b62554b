"""inbox: list the messages the caller receives, newest page first, or read one by id. Read-only."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field

from attend.domain import envelope, receipts, rooms, sessions
from attend.domain.context import Context
from attend.errors import NotFoundError, UsageError
from attend.identity import Identity
from attend.layout import NAME_RE, iso
from attend.spool import Spool
from attend.verbs import inbox_filters as filters

DESCRIPTION = (
    "List messages this session receives (#open, its project, its channels, direct), newest first, "
    "or read one by id. Read-only: it marks nothing seen."
)
PARAMS = {
    "id": "Read this one message in full.",
    "limit": "Messages per page (1-200).",
    "page": "Page number, 1 = newest.",
    "before": "Only messages older than this message id.",
    "room": "Only list these rooms (#channel, open, or a room name such as p-… or d-…); any room may be named.",
    "all": "List every room in the spool.",
    "status": "With an id: the receipt, per recipient session: delivered, claimed or seen.",
    "sender": "Only messages from this sender: a session or human id, or a display-name prefix.",
    "grep": "Only messages whose body matches this regular expression (case-insensitive; a plain word works).",
    "since": "Only messages newer than this: a duration (30s, 10m, 2h, 3d, 1w) or an ISO date/time (local time).",
}


@dataclass(frozen=True)
class InboxRequest:
    id: str | None = None
    limit: int = 25
    page: int = 1
    before: str | None = None
    room: tuple[str, ...] = ()
    all: bool = False
    status: bool = False
    sender: str | None = None
    grep: str | None = None
    since: str | None = None


@dataclass
class Message:
    id: str
    at: str  # ISO 8601, UTC
    sender: str
    from_kind: str
    from_id: str
    on_behalf_of: str | None
    to: str
    re: str | None
    room: str
    scope: str
    origin: str
    body: str


@dataclass
class Inbox:
    messages: list[Message]
    page: int
    limit: int
    rooms: list[str]
    older: bool  # more messages exist past this page
    warnings: list[str] = field(default_factory=list)
    receipt: receipts.Receipt | None = None  # with status and an id


def to_message(sig: envelope.Signal, room: str) -> Message:
    return Message(
        id=sig.id,
        at=iso(sig.at),
        sender=sig.sender,
        from_kind=sig.from_kind,
        from_id=sig.from_id,
        on_behalf_of=sig.on_behalf_of,
        to=sig.to,
        re=sig.re,
        room=room,
        scope=rooms.scope(room),
        origin=envelope.printable(sig.origin),  # JSON encoders (the MCP SDK's) refuse a lone surrogate
        body=sig.body,
    )


def caller_rooms(spool: Spool, who: Identity, extra: tuple[str, ...], everything: bool) -> list[str]:
    if everything:
        return spool.rooms()
    if extra:
        # Named rooms narrow the listing to exactly those rooms (the --room filter).
        return list(dict.fromkeys(room_arg(raw) for raw in extra))
    if who.is_agent and spool.exists("sessions", who.id, "enrolled"):
        base = sessions.receive_rooms(spool, who.id)
    elif who.is_agent:
        base = [rooms.OPEN, rooms.project_room(who.origin), rooms.direct_room(who.id)]
    else:
        # A human hears #open, the project of the working directory, and the channels it joined.
        base = [rooms.OPEN, rooms.project_room(who.origin), rooms.human_room(who.id)]
        base += [rooms.channel_room(c) for c in sessions.channels_of(spool, who.id)]
    return base


def room_arg(raw: str) -> str:
    if raw in ("open", "#open", "*"):
        return rooms.OPEN
    if raw.startswith("#"):
        return rooms.channel_room(rooms.channel_name(raw))
    if raw[:2] in ("p-", "d-") or raw.startswith("@"):
        if "/" in raw or raw.startswith("."):
            raise UsageError(f"invalid room {raw!r}")
        return raw
    return rooms.channel_room(rooms.channel_name(raw))


def read_one(spool: Spool, room_list: list[str], msg_id: str) -> Message:
    if not NAME_RE.fullmatch(msg_id):
        raise UsageError(f"{msg_id!r} is not a message id (attend inbox shows ids)")
    for room in room_list + [r for r in spool.rooms() if r not in room_list]:
        try:
            data = spool.read_record(room, msg_id)
        except FileNotFoundError:
            continue
        try:
            return to_message(envelope.parse(data), room)
        except envelope.EnvelopeError as e:
            raise NotFoundError(f"message {msg_id} exists but cannot be read: {e}") from e
    raise NotFoundError(f"no message with id {msg_id}; it may have been cleaned up (attend inbox lists what is here)")


def run(ctx: Context, req: InboxRequest) -> Inbox:
    if not 1 <= req.limit <= 200:
        raise UsageError("limit must be between 1 and 200")
    if req.page < 1:
        raise UsageError("page must be 1 or more")
    before = req.before
    if before is not None and not NAME_RE.fullmatch(before):
        raise UsageError(f"--before {before!r} is not a message id")
    who = ctx.who()
    room_list = caller_rooms(ctx.spool, who, req.room, req.all)
    if req.status and req.id is None:
        raise UsageError("--status needs a message id: attend inbox <id> --status")
    if req.id is not None:
        msg = read_one(ctx.spool, room_list, req.id)
        receipt = receipts.receipt(ctx.spool, msg.room, msg.id, msg.from_id) if req.status else None
        return Inbox([msg], 1, 1, room_list, False, receipt=receipt)
    match = filters.build(req.sender, req.grep, req.since)
    if match is not None:
        floor = filters.floor(match)
        messages, older, warnings = page(
            ctx.spool, room_list, who.id, req.limit, req.page, before, match.accepts, floor
        )
        return Inbox(messages, req.page, req.limit, room_list, older, warnings)
    messages, older, warnings = page(ctx.spool, room_list, who.id, req.limit, req.page, before)
    return Inbox(messages, req.page, req.limit, room_list, older, warnings)


def page(
    spool: Spool,
    room_list: list[str],
    me: str,
    limit: int,
    page_no: int,
    before: str | None,
    accepts: Callable[[envelope.Signal], bool] | None = None,
    floor: str = "",
) -> tuple[list[Message], bool, list[str]]:
    """Newest-first page of other senders' messages (names in [floor, before) that ``accepts`` takes).

    Lists names only and reads records newest first until the page is full: it takes the newest
    ``window`` names with a heap (no full sort of a large room) and widens the window only when
    own or filtered-out messages used part of it.
    """
    listed: list[tuple[str, list[str]]] = []
    for room in room_list:
        names = spool.room_entries(room)  # unsorted: usually only the newest few are wanted
        if before is not None or floor:
            names = [n for n in names if floor <= n and (before is None or n < before)]
        listed.append((room, names))
    total = sum(len(names) for _, names in listed)
    skip = (page_no - 1) * limit
    want = skip + limit + 1
    rows: list[Message] = []
    warnings: list[str] = []
    done = 0
    window = want
    while len(rows) < want and done < total:
        # The newest `window` names of each room, then of all: plain-string heaps, no tuple per record.
        top = heapq.nlargest(window, ((n, room) for room, names in listed for n in heapq.nlargest(window, names)))
        for name, room in top[done:]:
            done += 1
            if name.startswith("."):
                continue
            try:
                sig = envelope.parse(spool.read_record(room, name))
            except FileNotFoundError:
                continue
            except (OSError, envelope.EnvelopeError) as e:
                warnings.append(f"skipped {room}/{name}: {e}")
                continue
            if sig.from_id == me or (accepts is not None and not accepts(sig)):
                continue
            rows.append(to_message(sig, room))
            if len(rows) >= want:
                break
        window *= 4
    return rows[skip : skip + limit], len(rows) > skip + limit, warnings
