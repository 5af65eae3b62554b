"""chat: the human's seat at the table. ``run`` opens the seat (the spool checked, the caller a human,
the rooms listed) before any screen is drawn; the functions below are what the chat app
(attend/chat/) reads through while it runs. Nothing here imports the TUI framework.

Reading is not consuming: nothing here claims a session's delivery. The one thing chat marks is the
human's own mailbox, and only the messages that were on screen (``mark_read``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.domain.core import envelope, rooms
from attend.domain.messages import channels
from attend.domain.sessions import humans, sessions
from attend.domain.sessions.context import Context
from attend.errors import UsageError
from attend.layout import CLAIMED, HUMANS, NAME_RE, NEW, PRESENCE_ROOM
from attend.spool import Spool
from attend.verbs.inbox import Message, room_arg, to_message

DESCRIPTION = (
    "Open the human's live seat at the table: a full-screen terminal app with the rooms (#open, your "
    "mailbox, channels, projects, direct conversations with sessions and humans) and their unread "
    "counts, the conversation, the live peers, and a compose line, which has the keys when it opens: "
    "type, Enter sends; @name and #channel complete and address the line. Commands take Ctrl and are "
    "in the footer (Ctrl+R reply, Ctrl+T fold, Ctrl+O open a long message, Ctrl+F search); F1 shows every key, Ctrl+Q "
    "quits. Reading marks only your own mailbox read, as far as it was on screen."
)
PARAMS = {
    "room": "The room to open on, as the rooms pane names it (#open, #channel, @you, @name, a project's "
    "name) or a room name (default #open)."
}
EXAMPLES = (  # the end of `attend chat --help` (CLI only)
    ("attend chat", "open on #open"),
    ("attend chat --room '#deploy'", "open on a channel"),
    ("NO_COLOR=1 attend chat", "without colour"),
)

HISTORY = 200  # newest records of a room loaded when it is shown
SCAN = 50  # newest records of a direct room read to see whether the human wrote there


@dataclass(frozen=True)
class ChatRequest:
    room: str | None = None


@dataclass
class Room:
    room: str  # the spool room (for a direct conversation, the session's direct room d-<sid>)
    label: str  # as the rooms pane shows it: #open, @you, #deploy, api (a project), @Hana-beta, @alice
    kind: str  # open | mailbox | channel | project | direct
    to: str | None  # what a plain line typed here is addressed to (send's --to); None in the mailbox
    unread: int = 0
    detail: str = ""  # what the title bar adds: a project's path


@dataclass
class Seat:
    user: str  # the human, as its mailbox is named
    rooms: list[Room]
    room: str  # the room the screen opens on
    warnings: list[str] = field(default_factory=list)


def run(ctx: Context, req: ChatRequest) -> Seat:
    """Refuses before the screen opens: a refused spool (ctx.spool raises), a Claude session (its
    mail is a conduit's to claim), an unknown room."""
    spool = ctx.spool
    user = human_seat(ctx, "attend chat")
    listed = rooms_of(spool, user)
    start = rooms.OPEN
    if req.room is not None:
        by_label = {r.label: r.room for r in listed}  # what the rooms pane shows, and the refusal lists
        start = by_label[req.room] if req.room in by_label else room_arg(req.room)
        if start not in {r.room for r in listed}:
            raise UsageError(f"no room {req.room!r} here; the rooms are {', '.join(r.label for r in listed)}")
    humans.note_active(spool, user)  # chat uses the bus: peers lists the human, and it can be addressed
    return Seat(user, listed, start)


def human_seat(ctx: Context, command: str) -> str:
    """The human's mailbox name, for a seat (``command``: attend chat, attend web); refused to a
    session (its mail is a conduit's to claim) and to a user name that cannot name a mailbox."""
    who = ctx.who()
    if who.is_agent:
        raise UsageError(
            f"{command} is the human's seat; a Claude session talks with send, reply and inbox (or the MCP tools)"
        )
    user = humans.mailbox(who.id)
    if user is None:
        raise UsageError(f"the user name {who.id!r} cannot name a mailbox; set USER to a plain name")
    return user


# ---------------------------------------------------------------------- the rooms pane


def rooms_of(spool: Spool, user: str) -> list[Room]:
    """#open, the mailbox, the channels, the project rooms, the direct conversations, in that order."""
    mine = rooms.human_room(user)
    out = [
        Room(rooms.OPEN, "#open", "open", "*"),
        Room(mine, "@" + user, "mailbox", None, len(mailbox_unread(spool, user))),
    ]
    present = set(spool.rooms())
    names = set(channels.names(spool)) | {r[1:] for r in present if r.startswith("@")}
    out += [Room(rooms.channel_room(n), "#" + n, "channel", "#" + n) for n in sorted(names)]
    projects = [
        (room, path)
        for room in sorted(r for r in present if r.startswith("p-"))
        if (path := _project_path(spool, room))
    ]
    labels = project_labels([path for _, path in projects])
    out += [Room(room, labels[path], "project", path, detail=path) for room, path in projects]
    known = sessions.registered_names(spool)
    sids, people = _direct_peers(spool, user, present)
    for sid in sorted(sids, key=lambda s: known.get(s, s)):
        out.append(Room(rooms.direct_room(sid), "@" + known.get(sid, sid[:8]), "direct", sid))
    out += [Room(rooms.human_room(other), "@" + other, "direct", other) for other in sorted(people)]
    return out


def project_labels(paths: list[str]) -> dict[str, str]:
    """Each project path's name in the rooms pane: its folder's name, with as many parent folders as
    it takes to tell two projects of the same name apart."""
    parts = {p: [x for x in p.split("/") if x] or ["/"] for p in paths}
    out: dict[str, str] = {}
    for path, segs in parts.items():
        depth = 1
        while depth < len(segs) and any(o != path and parts[o][-depth:] == segs[-depth:] for o in parts):
            depth += 1
        out[path] = "/".join(segs[-depth:])
    return out


def _headers(spool: Spool, room: str, name: str) -> dict[str, str] | None:
    try:
        headers, _ = envelope.parse_headers(spool.read_record(room, name, 4096))
    except (OSError, envelope.EnvelopeError):
        return None
    return headers


def _project_path(spool: Spool, room: str) -> str | None:
    """The project path a project room is addressed by: the address of its newest readable record
    (attend's own Attend-To; a version 1 record kept it in To)."""
    for name in reversed(spool.room_names(room)[-5:]):
        headers = _headers(spool, room, name)
        if headers is None:
            continue
        to = envelope.decode_value(headers.get("Attend-To", headers.get("To", "")), "surrogateescape")
        if to.startswith("/"):
            return to
    return None


def _direct_peers(spool: Spool, user: str, present: set[str]) -> tuple[set[str], set[str]]:
    """(sessions, other humans) the human is in a direct conversation with: it wrote to their direct
    room (a session's d-<sid>, a human's h-<user>), or they wrote to its mailbox."""
    sids: set[str] = set()
    people: set[str] = set()
    mine = rooms.human_room(user)
    for room in present:
        if room.startswith(("d-", "h-")) and room != mine:
            for name in spool.room_names(room)[-SCAN:]:
                headers = _headers(spool, room, name)
                if headers is not None and headers.get("From-Id") == user:
                    other = room[2:]
                    (sids if room.startswith("d-") else people).add(other)
                    break
    for name in spool.room_names(mine)[-HISTORY:]:
        headers = _headers(spool, mine, name)
        sender = headers.get("From-Id") if headers is not None else None
        if headers is None or not sender:
            continue
        if headers.get("From-Kind") == "agent":
            sids.add(sender)
        elif (person := humans.mailbox(sender)) is not None and person != user:
            people.add(person)
    return sids, people


def rooms_for(msg: Message, user: str) -> list[str]:
    """The pane rooms a record shows in: its own room, and for a message to the human's mailbox, the
    direct conversation with its sender too (a session's d-<sid>, another human's h-<user>)."""
    out = [msg.room]
    if msg.room == rooms.human_room(user):
        if msg.from_kind == "agent":
            out.append(rooms.direct_room(msg.from_id))
        elif (other := humans.mailbox(msg.from_id)) is not None and other != user:
            out.append(rooms.human_room(other))
    return out


def panes_for(msg: Message, user: str) -> list[str]:
    """The pane rooms a record is shown in (``rooms_for``), a direct conversation only when the record
    is between the human and that peer (a session's d-<sid> holds others' mail to it too)."""
    mine = rooms.human_room(user)
    return [
        room
        for room in rooms_for(msg, user)
        if not room.startswith(("d-", "h-")) or room == mine or peer_of(msg) in (user, room[2:])
    ]


# ---------------------------------------------------------------------- the conversation pane


def read(spool: Spool, room: str, name: str) -> Message | None:
    """One record of a room, or None when it is unreadable, gone or not a message."""
    if not NAME_RE.fullmatch(name):
        return None
    try:
        return to_message(envelope.parse(spool.read_record(room, name)), room)
    except (OSError, envelope.EnvelopeError):
        return None


def messages(spool: Spool, room: Room, user: str, limit: int = HISTORY) -> list[Message]:
    """The room's newest ``limit`` messages, oldest first. A direct conversation is what the human
    wrote to the session (or the other human) and what they wrote to the human."""
    if room.kind == "direct":
        other = room.room[2:]  # d-<sid> or h-<user>
        mine = [m for m in _newest(spool, room.room, limit) if m.from_id == user]
        theirs = [m for m in _newest(spool, rooms.human_room(user), limit) if peer_of(m) == other]
        merged = {m.id: m for m in mine + theirs}
        return [merged[k] for k in sorted(merged)][-limit:]
    return _newest(spool, room.room, limit)


def peer_of(msg: Message) -> str:
    """Who a message is from, as a direct room names them: a session's id, a human's user name."""
    if msg.from_kind == "agent":
        return msg.from_id
    return humans.mailbox(msg.from_id) or msg.from_id


def _newest(spool: Spool, room: str, limit: int) -> list[Message]:
    out = []
    for name in spool.room_names(room)[-limit:]:
        msg = read(spool, room, name)
        if msg is not None:
            out.append(msg)
    return out


def find(spool: Spool, msg_id: str) -> Message | None:
    """A message by id in any room (the parent of a reply shown elsewhere)."""
    from attend.verbs.reply import find_record

    try:
        found = find_record(spool, msg_id)
    except OSError:
        return None
    return None if found is None else to_message(found[1], found[0])


def watched_rooms(spool: Spool) -> list[str]:
    """Every room the app follows live: all but the system rooms."""
    return [r for r in spool.rooms() if r != PRESENCE_ROOM and not r.startswith("sys-")]


# ---------------------------------------------------------------------- the human's mailbox


def mailbox_unread(spool: Spool, user: str) -> list[str]:
    """The human's unread mail: new, and what a reader that died mid-read left claimed."""
    return sorted({*spool.listing(user, NEW, HUMANS), *spool.listing(user, CLAIMED, HUMANS)})


def mark_read(spool: Spool, user: str, shown: set[str]) -> int:
    """Mark read the unread mail among ``shown`` (what was on screen), nothing else; how many."""
    if not shown:
        return 0
    with spool.show_lock(user, top=HUMANS):  # the same lock `inbox` holds: each message is marked once
        fresh = [n for n in spool.listing(user, NEW, HUMANS) if n in shown]
        if fresh:
            spool.claim_all(user, fresh, HUMANS)
        done = [n for n in spool.listing(user, CLAIMED, HUMANS) if n in shown]
        spool.mark_seen(user, done, HUMANS)
    return len(done)
