"""Session state: enrollment, registration, liveness, heartbeat, and the one /clear move routine.

- Enrolled (``run``, ``join``): the session receives; fan-out and the drain serve it. The record
  ``sessions/<sid>/enrolled`` is written first; then the cold-start rule links what it now owes.
- Registration: persona + per-project ordinal (alpha, beta, …), allocated once under the registry
  lock, idempotently, and the client's own name for the session when it gives one. Display only,
  never a key.
- Name: one per session, wherever it is shown or addressed: the client's name (``proj-8d``), else
  ``Persona-ordinal`` (``Kai-alpha``), which stays an accepted alias of a session that has a name.
- Live: session record present, pid alive, ``procStart`` matching; the heartbeat is secondary.
- ``/clear`` gives the same Claude process a new id; ``move_session`` carries everything over
  and leaves a ``moved-to`` pointer that late senders follow.
"""

from __future__ import annotations

# bisect is imported where it is used: the send path never needs it.
import contextlib
import os
import time
from collections.abc import Iterator, Mapping

from attend import identity as ident
from attend import safejson
from attend.domain.core import outcomes, rooms
from attend.hosts import NAMES
from attend.identity import Identity
from attend.layout import (
    CARRIED_FILES,
    CARRIED_FOLDERS,
    LINK_BOUND,
    MOVED_FROM,
    REPAIR,
    base_name,
    cutoff_name,
    is_session_id,
    name_time,
    small_int,
)
from attend.record import Record
from attend.spool import Spool

GREEK = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "omicron",
    "pi",
    "rho",
    "sigma",
    "tau",
    "upsilon",
    "phi",
    "chi",
    "psi",
    "omega",
]
REGISTRY_GC_SECONDS = 7 * 86400  # a slot idle this long is given to the next newcomer
FRESH_WINDOW = 120.0  # cold start: #open and channel messages up to this old are delivered
ADDRESSED_MAX = 50  # cold start: newest addressed messages delivered
SHOW_WAIT = 2.0  # seconds a /clear move waits for a conduit of the old id to finish showing


class Enrollment(Record):
    sid: str
    ways: tuple[str, ...]
    origin: str
    claude_pid: int | None
    proc_start: str | None
    name: str | None
    enrolled_at: float
    # The pid namespace the session's Claude runs in, recorded only by a process that found that
    # Claude among its ancestors: the evidence the sandbox rule compares against (sessions.md).
    pid_ns: str | None = None
    client: str | None = None  # the agent client the session runs in (claude, codex, gemini)

    @property
    def project(self) -> str:
        return rooms.project_key(self.origin)

    @classmethod
    def of(cls, who: Identity, ways: tuple[str, ...], enrolled_at: float, pid_ns: str | None = None) -> Enrollment:
        """``pid_ns``: the one already recorded, kept unless ``who`` came through its ancestry."""
        ns = who.pid_ns if who.resolved_by == "ancestry" and who.pid_ns else pid_ns
        return cls(who.id, ways, who.origin, who.claude_pid, who.proc_start, who.name, enrolled_at, ns, who.host)

    def document(self) -> bytes:
        """The enrollment document, ``sessions/<sid>/enrolled``: the one place its fields are written."""
        record = {
            "ways": list(self.ways),
            "origin": self.origin,
            "claude_pid": self.claude_pid,
            "proc_start": self.proc_start,
            "name": self.name,
            "enrolled_at": self.enrolled_at,
            "pid_ns": self.pid_ns,
            "client": self.client,
        }
        return safejson.dumps(record, indent=1).encode()


# ---------------------------------------------------------------------- reading state


def read_enrollment(spool: Spool, sid: str) -> Enrollment | None:
    text = spool.read_text("sessions", sid, "enrolled")
    if text is None:
        return None
    try:
        raw = safejson.loads(text)
        return Enrollment(
            sid=sid,
            ways=tuple(raw["ways"]),
            origin=raw["origin"],
            claude_pid=raw.get("claude_pid"),
            proc_start=raw.get("proc_start"),
            name=raw.get("name"),
            enrolled_at=float(raw.get("enrolled_at", 0)),
            pid_ns=raw.get("pid_ns") if isinstance(raw.get("pid_ns"), str) else None,
            client=raw.get("client") if raw.get("client") in NAMES else None,  # a host attend serves
        )
    except (ValueError, KeyError, TypeError, OverflowError):
        spool.log(f"enrollment record of {sid} is malformed; treating the session as not enrolled")
        return None


def write_enrollment(spool: Spool, enrollment: Enrollment) -> None:
    spool.write_state(enrollment.document(), "sessions", enrollment.sid, "enrolled", durable=True)


def run_is_live(spool: Spool, sid: str) -> bool:
    """Whether an ``attend run`` holds this session's duplicate-run lock (probed, not taken)."""
    return spool.is_held("sessions", sid, "run.lock")


def is_enrolled(spool: Spool, sid: str) -> bool:
    """Enrolled and not opted out. An opt-out under a live loop takes effect when the loop ends."""
    return _receives(spool, sid, *spool.present(("sessions", sid), ("enrolled", "optout")))


def _receives(spool: Spool, sid: str, enrolled: bool, optout: bool) -> bool:
    return enrolled and not (optout and not run_is_live(spool, sid))


def enrolled_sessions(spool: Spool) -> list[str]:
    out = []
    for sid, have in spool.survey("sessions", ("enrolled", "optout")).items():
        if isinstance(have, OSError):
            spool.log(f"session {sid} skipped: {have}")
        elif _receives(spool, sid, *have):
            out.append(sid)
    return out


def _receiving(spool: Spool, sids: list[str]) -> list[str]:
    """The enrolled ones among ``sids``; one planted in the spool is skipped, with a line in the log."""
    out = []
    for sid in sids:
        try:
            if is_enrolled(spool, sid):
                out.append(sid)
        except OSError as e:
            spool.log(f"session {sid} skipped: {e}")
    return out


def moved_to(spool: Spool, sid: str) -> str:
    """Follow ``moved-to`` pointers left by /clear moves to the session's current id."""
    return spool.moved_to(sid)


# ---------------------------------------------------------------------- registration


def _registry_lock(spool: Spool, key: str) -> contextlib.AbstractContextManager[bool]:
    # A plain flock on the same file portalocker would lock (it calls flock on Linux), without
    # portalocker's import (~0.1 s here, paid by every join and first enrollment).
    return spool.lock("registry", f"{key}.lock")


def read_registry(spool: Spool, key: str) -> dict[str, dict[str, object]]:
    text = spool.read_text("registry", f"{key}.json")
    if not text:
        return {}
    try:
        raw = safejson.loads(text)
    except ValueError:
        return {}
    return {k: v for k, v in raw.items() if isinstance(v, dict)} if isinstance(raw, dict) else {}


def register(spool: Spool, who: Identity, now: float | None = None) -> str:
    """Allocate (once) the session's ordinal in its project; returns it. Idempotent."""
    now = time.time() if now is None else now
    key = rooms.project_key(who.origin)
    with _registry_lock(spool, key):
        entries = read_registry(spool, key)
        mine = entries.get(who.id)
        if mine is None:
            taken = {
                str(e.get("ordinal"))
                for sid, e in entries.items()
                if now - float(str(e.get("last_seen", 0))) < REGISTRY_GC_SECONDS or is_enrolled(spool, sid)
            }
            entries = {sid: e for sid, e in entries.items() if str(e.get("ordinal")) in taken or sid == who.id}
            ordinal = next((g for g in GREEK if g not in taken), None)
            n = len(GREEK) + 1
            while ordinal is None:
                ordinal = str(n) if str(n) not in taken else None
                n += 1
            mine = {"ordinal": ordinal, "registered_at": now}
        mine["last_seen"] = now
        mine["persona"] = ident.persona(who)
        if who.name:  # the client's own name, kept for when its record is gone (a parked session)
            mine["name"] = who.name
        entries[who.id] = mine
        spool.write_state(safejson.dumps(entries, indent=1, sort_keys=True).encode(), "registry", f"{key}.json")
        return str(mine["ordinal"])


def registration(spool: Spool, sid: str, origin: str) -> dict[str, object] | None:
    return read_registry(spool, rooms.project_key(origin)).get(sid)


def ordinal_of(entry: Mapping[str, object] | None) -> str | None:
    return str(entry["ordinal"]) if entry and entry.get("ordinal") else None


def display(persona: str, entry: Mapping[str, object] | None, name: str | None = None) -> str:
    """The one name of a session, wherever it is shown or matched: the client's own ``name`` for it
    when it gives one, else ``Persona-ordinal`` for a registered session, the persona alone otherwise."""
    if name:
        return name
    return alias(persona, entry)


def alias(persona: str, entry: Mapping[str, object] | None) -> str:
    """``Persona-ordinal`` (the persona alone before registration): the name of a session whose client
    gives it none, and an alias that still addresses one that has a name."""
    ordinal = ordinal_of(entry)
    return f"{persona}-{ordinal}" if ordinal else persona


def client_name(who: Identity, entry: Mapping[str, object] | None) -> str | None:
    """The client's name for the session: its record's, else the one last registered (the sandbox
    rule resolves a session without its record)."""
    return who.name or stored_name(entry)


def stored_name(entry: Mapping[str, object] | None) -> str | None:
    """The client's name for a session as its registration last recorded it."""
    stored = entry.get("name") if entry else None
    return stored if isinstance(stored, str) and stored else None


def display_name(spool: Spool, who: Identity) -> str:
    """The caller's one name. A session without a client name is registered on first sight, so its
    ``Persona-ordinal`` is the same before its first enrollment and after."""
    if not who.is_agent:
        return ident.persona(who)
    return display(ident.persona(who), *name_parts(spool, who))


def name_parts(spool: Spool, who: Identity) -> tuple[Mapping[str, object] | None, str | None]:
    """(registration, client name) of an agent; a nameless one is registered here if it was not."""
    entry = registration(spool, who.id, who.origin)
    name = client_name(who, entry)
    if name is None and ordinal_of(entry) is None:
        entry = {"ordinal": register(spool, who)}
    elif who.name and entry is not None and entry.get("name") != who.name:
        _rename(spool, who)  # renamed in the client: a parked session keeps the new name
        entry = registration(spool, who.id, who.origin) or entry  # with its earlier names
    return entry, name


EARLIER = "earlier"  # a registration's earlier client names, oldest first: each still addresses the session
EARLIER_KEPT = 32  # earlier names kept per session at most (the oldest go first)


def _rename(spool: Spool, who: Identity) -> None:
    """The client renamed the session (its record says so): the new name is its name, and the one it
    had joins its earlier names, which keep addressing it (docs/architecture/sessions.md, "Stable names")."""
    key = rooms.project_key(who.origin)
    with _registry_lock(spool, key):
        entries = read_registry(spool, key)
        if who.id in entries:
            entry = entries[who.id]
            old = stored_name(entry)
            kept = [n for n in earlier_names(entry) if n not in (old, who.name)]
            if old and old != who.name:
                kept.append(old)
            entry[EARLIER] = kept[-EARLIER_KEPT:]
            entry["name"] = who.name
            spool.write_state(safejson.dumps(entries, indent=1, sort_keys=True).encode(), "registry", f"{key}.json")


def earlier_names(entry: Mapping[str, object] | None) -> list[str]:
    """The client's earlier names for a session, oldest first, as its registration recorded them."""
    raw = entry.get(EARLIER) if entry else None
    if not isinstance(raw, list):
        return []
    return [n for n in raw if isinstance(n, str) and 0 < len(n) <= 128 and n.isprintable()][-EARLIER_KEPT:]


def current_names(spool: Spool, sessions_dir: str | os.PathLike[str]) -> dict[str, str]:
    """``registered_names``, with the name in each live session's record where it has one: a rename in
    the client shows at once."""
    names = registered_names(spool)
    for record in ident.live_records(sessions_dir):
        if record.name and record.session_id in names:
            names[record.session_id] = record.name
    return names


def registered_names(spool: Spool) -> dict[str, str]:
    """Every registered session's id mapped to its name, as the registry last recorded it."""
    return {
        sid: display(str(entry["persona"]), entry, stored_name(entry))
        for _key, sid, entry in all_registrations(spool)
        if entry.get("persona") and entry.get("ordinal")
    }


def all_registrations(spool: Spool) -> Iterator[tuple[str, str, dict[str, object]]]:
    """(project key, session id, entry) for every registration on the machine."""
    for name in spool.names("registry"):
        if name.endswith(".json"):
            key = name[:-5]
            for sid, entry in read_registry(spool, key).items():
                yield key, sid, entry


# ---------------------------------------------------------------------- enrollment


class Enrolled(Record):
    sid: str
    ways: tuple[str, ...]
    newly: bool  # the session was not receiving before this call
    ordinal: str
    delivered: int  # deliveries the cold-start rule linked
    withheld: int  # older messages not linked ("N earlier messages not shown")


def enroll(spool: Spool, who: Identity, way: str, now: float | None = None) -> Enrolled:
    """Enroll ``who`` by ``way`` ("run" or "join"): record first, then apply the cold-start rule."""
    now = time.time() if now is None else now
    sid = who.id
    # After a /clear, the old id's state first becomes this one's: otherwise the old id would stay
    # enrolled beside it, collecting deliveries nobody drains, under a pid that never dies.
    follow_clear(spool, who)
    spool.make_maildir(sid)
    with spool.session_lock(sid):
        current = read_enrollment(spool, sid)
        was_receiving = current is not None and is_enrolled(spool, sid)
        ways = tuple(sorted({*(current.ways if current else ()), way}))
        enrolled_at = current.enrolled_at if current and was_receiving else now
        write_enrollment(spool, Enrollment.of(who, ways, enrolled_at, current.pid_ns if current else None))
        spool.remove("sessions", sid, "optout")
    spool.create_exclusive(b"", "projects", rooms.project_key(who.origin), sid)
    if who.claude_pid is not None and who.proc_start is not None:
        spool.write_state(sid.encode(), "by-claude", f"{who.claude_pid}-{who.proc_start}")
    elif who.host is not None and who.resolved_by == "ancestry":
        # No process stands for this session (a Codex thread): enrolling proves it live, as a turn end does.
        touch_heartbeat(spool, sid)
    ordinal = register(spool, who, now)
    delivered = withheld = 0
    if not was_receiving:
        delivered, withheld = catch_up(spool, sid, receive_rooms(spool, sid), now)
    return Enrolled(sid, ways, not was_receiving, ordinal, delivered, withheld)


def withdraw(spool: Spool, sid: str, way: str) -> bool:
    """Drop one way of enrollment; returns whether the session still receives."""
    with spool.session_lock(sid):
        current = read_enrollment(spool, sid)
        if current is None:
            return False
        ways = tuple(w for w in current.ways if w != way)
        if not ways:
            spool.remove("sessions", sid, "enrolled")
            spool.remove("projects", rooms.project_key(current.origin), sid)
            return False
        write_enrollment(spool, current._replace(ways=ways))
        return True


def opt_out(spool: Spool, sid: str) -> None:
    """``scene private``: stop receiving; under a live loop this takes effect when the loop ends."""
    withdraw(spool, sid, "join")
    if run_is_live(spool, sid):
        spool.write_state(b"", "sessions", sid, "optout")
    else:
        enrollment = read_enrollment(spool, sid)  # read before removing: it names the project index
        spool.remove("sessions", sid, "enrolled")
        if enrollment:
            spool.remove("projects", enrollment.project, sid)


# ---------------------------------------------------------------------- who receives what


def channels_of(spool: Spool, sid: str) -> list[str]:
    """Channels the session is a member of (one member file per session per channel)."""
    return [n for n in spool.names("channels") if spool.exists("channels", n, "members", sid)]


def receive_rooms(spool: Spool, sid: str) -> list[str]:
    """The rooms a session receives: #open, its project, its direct room, its channels."""
    enrollment = read_enrollment(spool, sid)
    out = [rooms.OPEN, rooms.direct_room(sid)]
    if enrollment:
        out.append("p-" + enrollment.project)
    out.extend(rooms.channel_room(c) for c in channels_of(spool, sid))
    return out


def predecessors(spool: Spool, sid: str) -> list[str]:
    """The ids this session had before its /clears (``moved-from``), oldest first."""
    text = spool.read_text("sessions", sid, MOVED_FROM) or ""
    return [line for line in text.split() if is_session_id(line) and line != sid]


def repair_rooms(spool: Spool, sid: str) -> list[str]:
    """The rooms repair covers: those the session receives, and the direct rooms of the ids it had
    before a /clear. Senders still address the old id (a reply to an old message, a stale name);
    one killed before its fan-out leaves the record in ``d-<old>``, which only this session owes."""
    out = receive_rooms(spool, sid)
    out.extend(rooms.direct_room(old) for old in predecessors(spool, sid))
    return list(dict.fromkeys(out))


def recipients(spool: Spool, room: str) -> list[str]:
    """Enrolled sessions that receive a room, read at call time."""
    if room == rooms.OPEN:
        return enrolled_sessions(spool)
    if room.startswith("d-"):
        sid = moved_to(spool, room[2:])
        return [sid] if is_enrolled(spool, sid) else []
    if room.startswith("p-"):
        sids = spool.names("projects", room[2:])
    elif room.startswith("@"):
        sids = spool.names("channels", room[1:], "members")
    else:
        return []
    return _receiving(spool, sids)


def catch_up(spool: Spool, sid: str, room_list: list[str], now: float) -> tuple[int, int]:
    """The cold-start rule: link addressed mail (newest 50) and fresh room messages; count the rest.

    Records the newest name older than the link bound as each room's repair cursor, and links every
    younger one, so the repair pass never links what this rule held back nor passes a late record.
    Returns (linked, withheld); a non-zero withheld leaves a one-time notice.
    """
    import bisect

    from attend.domain.core.envelope import EnvelopeError, parse_headers

    linked = withheld = 0
    cursors = read_cursors(spool, sid)
    # Only what is kept is read: the rest is counted from the listing, so a room's 20,000 records of
    # history cost one listing, not 20,000 opens (2 s of a loop's start). A session's own records
    # among the withheld are counted too; a maildir holding nothing owns none of the names.
    holds = any(spool.listing(sid, sub) for sub in ("new", "claimed", "cur"))
    for room in room_list:
        settled = cutoff_name(time.time() - LINK_BOUND)  # as repair: names below it are all listed
        names = spool.room_names(room)
        if not names:
            # Empty now: whatever lands later is owed, so repair starts from the room's first record.
            cursors.setdefault(room, "")
            continue
        addressed = room.startswith(("p-", "d-"))
        keep = set(names[-ADDRESSED_MAX:]) if addressed else {n for n in names if now - name_time(n) <= FRESH_WINDOW}
        keep.update(n for n in names if n >= settled)  # repair looks at these again: never withhold them
        for name in names:
            if name not in keep:
                withheld += not (holds and spool.has_delivery(sid, name))
                continue
            if spool.has_delivery(sid, name):
                continue
            try:
                headers, _ = parse_headers(spool.read_record(room, name, 4096))
            except (OSError, EnvelopeError):
                continue
            if headers.get("From-Id") == sid:
                continue  # never deliver a session its own message
            linked += outcomes.link_owed(spool, sid, room, name, headers)  # as its inbound rule says
        # Up to the newest settled name only: a record still being linked under an earlier name is owed.
        below = names[: bisect.bisect_left(names, settled)]
        cursors[room] = max(below[-1] if below else "", cursors.get(room, ""))
    write_cursors(spool, sid, cursors)
    if withheld:
        add_notice(spool, sid, withheld)
    return linked, withheld


# ---------------------------------------------------------------------- small per-session records


def read_cursors(spool: Spool, sid: str) -> dict[str, str]:
    text = spool.read_text("sessions", sid, "repair.json")
    try:
        raw = safejson.loads(text) if text else {}
    except ValueError:
        raw = {}
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def write_cursors(spool: Spool, sid: str, cursors: dict[str, str]) -> None:
    spool.write_state(safejson.dumps(cursors, sort_keys=True).encode(), "sessions", sid, "repair.json")


def add_notice(spool: Spool, sid: str, withheld: int) -> None:
    """Remember "N earlier messages not shown" for the next conduit to announce, once."""
    text = spool.read_text("sessions", sid, "notice")
    count = small_int(text)
    spool.write_state(str(count + withheld).encode(), "sessions", sid, "notice")


def take_notice(spool: Spool, sid: str) -> str | None:
    text = spool.read_text("sessions", sid, "notice")
    if text is None:
        return None
    spool.remove("sessions", sid, "notice")
    n = small_int(text)
    if n <= 0:
        return None
    return f"{n} earlier message{'s' if n != 1 else ''} not shown; attend inbox"


def last_inbound(spool: Spool, sid: str) -> str | None:
    """The newest message from another session a conduit showed here: the last line of
    ``last-inbound``, a file of lines its writers append to (an earlier version wrote one bare name)."""
    text = spool.read_text("sessions", sid, "last-inbound")
    if not text:
        return None
    lines = text.split("\n")
    last = (lines[-2] if len(lines) > 1 else lines[0]).strip()
    return last or None


def set_last_inbound(spool: Spool, sid: str, name: str) -> None:
    """Recorded before the line that shows it goes out, by a hundred loops at once for a broadcast:
    an append, no new file (see Spool.append_state)."""
    current = last_inbound(spool, sid)
    if current is None or base_name(name) > current:
        spool.append_state(base_name(name).encode() + b"\n", "sessions", sid, "last-inbound")


def touch_heartbeat(spool: Spool, sid: str) -> None:
    spool.touch("sessions", sid, "heartbeat")


# ---------------------------------------------------------------------- /clear


def previous_id(spool: Spool, who: Identity) -> str | None:
    """The enrolled id this same Claude process had before a /clear, if any."""
    if who.claude_pid is None or who.proc_start is None:
        return None
    text = spool.read_text("by-claude", f"{who.claude_pid}-{who.proc_start}")
    old = text.strip() if text else None
    if old and old != who.id and is_session_id(old) and spool.exists("sessions", old, "enrolled"):
        return old
    return None


def move_session(spool: Spool, old: str, new: Identity) -> None:
    """Carry everything under sessions/<old>/ to the new id. Idempotent; leaves a moved-to pointer.

    The loop, the drain and the MCP server may all notice the same /clear, so the whole move runs
    under the old id's delivery lock: one mover at a time, and no linker of the old id in between.
    A sender that read the recipient set before the move and links after it finds the old new/
    gone (removed last, under the lock) and follows ``moved-to`` (Spool.link_delivery).
    """
    sid = new.id
    if old == sid:
        return
    spool.make_maildir(sid)
    # Show lock first, as the conduits take them: no conduit of the old id is mid-show while its
    # claims move (else one could show a moved message again). A stuck holder only delays the move.
    with spool.show_lock(old, timeout=SHOW_WAIT), spool.session_lock(old):
        src_enrollment = read_enrollment(spool, old)
        with spool.session_lock(sid):  # no linker of the new id sees a name in neither place
            for sub in ("new", "claimed", "cur", "held", "declined"):
                for entry in spool.listing(old, sub):
                    spool.move_entry(("sessions", old, sub, entry), ("sessions", sid, sub, entry))
        _carry_repair_duty(spool, old, sid)
        for name in CARRIED_FILES:
            data = spool.read_text("sessions", old, name)
            if data is not None and not spool.exists("sessions", sid, name):
                spool.write_state(data.encode(), "sessions", sid, name)
            spool.remove("sessions", old, name)
        for folder in CARRIED_FOLDERS:  # the trailer's cursors, the MCP presence markers
            spool.move_all(("sessions", old, folder), ("sessions", sid, folder))
        for channel in channels_of(spool, old):
            data = spool.read_text("channels", channel, "members", old) or ""
            spool.write_state(data.encode(), "channels", channel, "members", sid)
            spool.remove("channels", channel, "members", old)
        if src_enrollment is not None:
            _carry_enrollment(spool, src_enrollment, new)
        # The pointer before the old record goes: a crash in between leaves the old id still
        # enrolled, so the next caller runs the move again, and a late sender always finds one or the other.
        spool.write_state(sid.encode(), "sessions", old, "moved-to")
        spool.remove("sessions", old, "enrolled")
        spool.remove_dir("sessions", old, "new")
    if new.claude_pid is not None and new.proc_start is not None:
        spool.write_state(sid.encode(), "by-claude", f"{new.claude_pid}-{new.proc_start}")


def _carry_repair_duty(spool: Spool, old: str, sid: str) -> None:
    """The new id takes over repair of the old id's rooms: ``d-<old>`` (and those of the ids before
    it) joins its repair rooms, and each old cursor the new id lacks is kept, so a record the old id
    was owed, whose sender died before fan-out, is linked by the new id's next repair pass. The old
    cursors go only once merged, so a move rerun after a crash merges them again."""
    chain = [*predecessors(spool, sid), *predecessors(spool, old), old]
    spool.write_state("\n".join(dict.fromkeys(chain)).encode() + b"\n", "sessions", sid, MOVED_FROM)
    cursors = {**read_cursors(spool, old), **read_cursors(spool, sid)}
    # The new id's own direct room is owed from its first record: the id is new, and after its own
    # /clear this cursor is what carries repair of that room on.
    cursors.setdefault(rooms.direct_room(sid), "")
    write_cursors(spool, sid, cursors)
    spool.remove("sessions", old, REPAIR)


def _carry_enrollment(spool: Spool, src: Enrollment, new: Identity) -> None:
    """The old registration and enrollment become the new id's, merged with any it already has."""
    sid, key = new.id, src.project
    with _registry_lock(spool, key):
        entries = read_registry(spool, key)
        if src.sid in entries and sid not in entries:
            entries[sid] = entries.pop(src.sid)
            spool.write_state(safejson.dumps(entries, indent=1, sort_keys=True).encode(), "registry", f"{key}.json")
    current = read_enrollment(spool, sid)
    ways = tuple(sorted({*src.ways, *(current.ways if current else ())}))
    enrolled_at = min(src.enrolled_at, current.enrolled_at) if current else src.enrolled_at
    write_enrollment(spool, Enrollment.of(new, ways, enrolled_at, (current.pid_ns if current else None) or src.pid_ns))
    spool.create_exclusive(b"", "projects", rooms.project_key(new.origin), sid)
    spool.remove("projects", key, src.sid)


def follow_clear(spool: Spool, who: Identity) -> str | None:
    """If this process had another enrolled id before a /clear, move its state; returns the old id."""
    old = previous_id(spool, who)
    if old is not None:
        move_session(spool, old, who)
    return old
