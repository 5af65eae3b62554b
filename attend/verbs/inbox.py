"""inbox: list the messages the caller receives, newest page first, or read one by id; or what the
caller sent. Read-only, but for the human's own unread mail, which a plain listing shows first and
marks read."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field

from attend.domain.core import envelope, rooms
from attend.domain.messages import receipts
from attend.domain.sessions import humans, sessions
from attend.domain.sessions.context import Context
from attend.errors import NotFoundError, UsageError
from attend.identity import Identity
from attend.layout import NAME_RE, iso
from attend.spool import Spool
from attend.verbs import FRONTEND
from attend.verbs import inbox_filters as filters

DESCRIPTION = (
    "List the messages you receive, newest first, or read one by id, or list what you sent. "
    "A human's unread mail comes first, then is marked read."
)
PARAMS = {
    "id": "Read this one message in full.",
    "limit": "Messages per page (1-200).",
    "page": "Page number, 1 = newest.",
    "before": "Only messages older than this id.",
    "room": "Only list these rooms (#channel, open, or a room name such as p-… or d-…); any room may be named.",
    "all": "List every room in the spool.",
    "status": "With an id: the receipt, per recipient session: delivered, claimed or seen.",
    "sender": "Only messages from this sender: a session or human id, or a display-name prefix.",
    "grep": "Only messages whose body matches this regular expression (case-insensitive; a plain word works).",
    "since": (
        "Only messages newer than this: a duration (30s, 10m, 2h, 3d, 1w) or a date/time, local unless it "
        "names a zone, as the CLI shows times (2025-01-31 09:30:00 CET, 2025-01-31T09:30)."
    ),
    "sent": "List what you sent instead.",
}
EXAMPLES = (  # the end of `attend inbox --help` (CLI only)
    ("attend inbox", "the newest page of what you receive (a human: its unread mail first, then marked read)"),
    ("attend inbox --from Hana --since 2h", "filtered by sender and age"),
    ("attend inbox <id>", "one message in full"),
    ("attend inbox <id> --status", "who has it: delivered, claimed or seen"),
)


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
    sent: bool = False
    # The human's reader (the CLI) shows its unread mail and marks it read, and notes it active; the MCP
    # server passes False: a model-driven server never consumes a human's mail.
    mark_read: bool = field(default=True, metadata=FRONTEND)


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
    client: str | None = None  # the sender's agent client (claude, codex, gemini); None for a human
    to_name: str = ""  # a direct message's recipients as attend names them (``to`` holds the ids)
    # With --sent: where it stands for each session that has it (delivered, claimed, seen, held, declined).
    recipients: list[receipts.Delivery] = field(default_factory=list)


@dataclass
class Inbox:
    messages: list[Message]
    page: int
    limit: int
    rooms: list[str]
    older: bool  # more messages exist past this page
    warnings: list[str] = field(default_factory=list)
    receipt: receipts.Receipt | None = None  # with status and an id
    unread: list[Message] = field(default_factory=list)  # the human's own unread mail, oldest first, now read
    sent: bool = False  # messages lists what the caller sent


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
        client=sig.client,
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
        from attend.domain.core import ids  # a unique prefix of an id, as git takes a commit's

        msg_id = ids.resolve(spool, msg_id)
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
    if req.sent and (req.id is not None or req.status or req.sender is not None):
        raise UsageError("--sent lists what you sent; drop the message id, --status and --from")
    who = ctx.who()
    room_list = caller_rooms(ctx.spool, who, req.room, req.all or (req.sent and not req.room))
    if req.status and req.id is None:
        raise UsageError("--status needs a message id: attend inbox <id> --status")
    if req.id is not None:
        msg = read_one(ctx.spool, room_list, req.id)
        receipt = receipts.receipt(ctx.spool, msg.room, msg.id, msg.from_id) if req.status else None
        if req.mark_read:
            _note_reader(ctx.spool, who)
        return Inbox(named(ctx, [msg]), 1, 1, room_list, False, receipt=receipt)
    match = filters.build(req.sender, req.grep, req.since)
    floor = filters.floor(match) if match is not None else ""
    accepts = match.accepts if match is not None else None
    if req.mark_read:
        _note_reader(ctx.spool, who)  # only once the request is known good: bad input writes nothing
    if req.sent:
        messages, older, warnings = page(
            ctx.spool, room_list, who.id, req.limit, req.page, before, accepts, floor, mine=True
        )
        for m in messages:  # later changes: a held one accepted or declined, a parked one shown
            m.recipients = receipts.receipt(ctx.spool, m.room, m.id, m.from_id).recipients
        return Inbox(named(ctx, messages), req.page, req.limit, room_list, older, warnings, sent=True)
    unread: list[Message] = []
    warnings = []
    if (
        req.mark_read
        and not who.is_agent
        and match is None
        and req.page == 1
        and before is None
        and not req.room
        and not req.all
    ):
        unread, warnings = _unread(ctx.spool, who.id)
    if unread:
        # Shown above as unread: not again in the listing below it.
        shown = {m.id for m in unread}
        inner = accepts

        def accepts(sig: envelope.Signal) -> bool:
            return sig.id not in shown and (inner is None or inner(sig))

    messages, older, more = page(ctx.spool, room_list, who.id, req.limit, req.page, before, accepts, floor)
    named(ctx, [*messages, *unread])
    return Inbox(messages, req.page, req.limit, room_list, older, warnings + more, unread=unread)


def named(ctx: Context, messages: list[Message]) -> list[Message]:
    """Each direct message's recipients by name (``to_name``), as ``peers`` names the sessions."""
    direct = [m for m in messages if m.scope == "direct"]
    if direct:
        from attend.domain.messages import addressing  # only where a direct message is listed

        names = addressing.session_names(ctx.spool, ctx.sessions_dir)
        for m in direct:
            m.to_name = addressing.named_to(ctx.spool, m.to, names)
    return messages


def _note_reader(spool: Spool, who: Identity) -> None:
    """A human who reads has used the bus: peers lists it, and it can be addressed by name."""
    if not who.is_agent:
        humans.note_active(spool, who.id)


def _unread(spool: Spool, human_id: str) -> tuple[list[Message], list[str]]:
    mail, warnings = humans.read_unread(spool, human_id)
    return [to_message(sig, sig.room) for _, sig in mail], warnings


def page(
    spool: Spool,
    room_list: list[str],
    me: str,
    limit: int,
    page_no: int,
    before: str | None,
    accepts: Callable[[envelope.Signal], bool] | None = None,
    floor: str = "",
    mine: bool = False,
) -> tuple[list[Message], bool, list[str]]:
    """Newest-first page of other senders' messages (names in [floor, before) that ``accepts`` takes),
    or with ``mine`` of the caller's own. A record linked into several rooms is listed once.

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
    listed_names: set[str] = set()
    window = want
    while len(rows) < want and done < total:
        # The newest `window` names of each room, then of all: plain-string heaps, no tuple per record.
        top = heapq.nlargest(window, ((n, room) for room, names in listed for n in heapq.nlargest(window, names)))
        for name, room in top[done:]:
            done += 1
            if name.startswith(".") or name in listed_names:
                continue
            try:
                sig = envelope.parse(spool.read_record(room, name))
            except FileNotFoundError:
                continue
            except (OSError, envelope.EnvelopeError) as e:
                warnings.append(f"skipped {room}/{name}: {e}")
                continue
            if (sig.from_id == me) != mine or (accepts is not None and not accepts(sig)):
                continue
            listed_names.add(name)
            rows.append(to_message(sig, room))
            if len(rows) >= want:
                break
        window *= 4
    return rows[skip : skip + limit], len(rows) > skip + limit, warnings
