"""The address grammar of ``to``: ``*``, ``#name``, a project path, or comma-separated session ids,
names (``proj-8d``, ``Hana-beta``, or a unique prefix) or humans' user names, resolved at send time.

A part that is a session id wins, then a human's user name exactly (a human who has a mailbox, or the
user running the command), then a session's name exactly (the client's name in its live record, else
the last registered; ``Persona-ordinal`` for one without), then an alias exactly (the
``Persona-ordinal`` of a session that has a client name, or the ``name-ordinal`` earlier versions
showed), then a unique prefix of either. ``user:NAME`` is always the human NAME, and only a human.
A name that fits several sessions is refused with each of them and its state. A live session that
has not enrolled is addressed all the same (its direct room keeps the message for its enrollment),
and the sender is told what it takes to reach it.

Names cannot be shadowed: a bare name that is a human's and also a session's name, alias, persona
or client name is refused, naming both explicit forms. An agent is never "the human running the
command", so it cannot bring a human mailbox into being by addressing one.
"""

from __future__ import annotations

import os

from attend import identity
from attend.domain.core import rooms
from attend.domain.sessions import humans, liveness, sessions
from attend.errors import NotFoundError, UsageError
from attend.identity import Identity
from attend.layout import HOST_RE, RELAY, RELAY_ON, RELAY_PEERS, host, is_session_id
from attend.record import Record
from attend.spool import Spool

TYPE_CHECKING = False
if TYPE_CHECKING:
    from attend.domain.messages import remote  # imported where a relay's mirror is read: a plain send needs none


class Address(Record):
    rooms: list[str]
    to: str  # the To header
    to_name: str = ""  # the recipients as attend names them (a session by its name, not its id)
    warnings: tuple[str, ...] = ()  # a recipient that hears nothing yet, and what it takes
    humans: tuple[str, ...] = ()  # the humans a name resolved to (send says so)


class Candidate(Record):
    """A session a name may address: registered, or live on this machine."""

    sid: str
    name: str
    aliases: tuple[str, ...]
    record: identity.SessionRecord | None  # its live record, if it has one
    # The alias its own name makes (``Name-ordinal``): it wins over a ``Persona-ordinal`` alike, since
    # a persona is drawn from a project path and may be another session's name.
    own: tuple[str, ...] = ()
    # The client's earlier names for it (a rename, a restart): each still addresses it, exactly, after
    # every session's current name and alias (stable names).
    earlier: tuple[str, ...] = ()

    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


def scope_to(to: str | None, channel: str | None, broadcast: bool) -> str:
    """Fold the three scope parameters into one ``to``; two scopes at once is an error."""
    given = [s for s in (to is not None, channel is not None, broadcast) if s]
    if len(given) > 1:
        raise UsageError("choose one scope: to, channel or broadcast, not several")
    if broadcast:
        return "*"
    if channel is not None:
        return "#" + (channel[1:] if channel.startswith("#") else channel)
    return to if to is not None else "*"


def resolve(
    spool: Spool, to: str, sender: Identity, sessions_dir: os.PathLike[str] | str, user: str | None = None
) -> Address:
    """``user`` is the human running the command (``identity.human_id``): addressable by name even
    before it has a mailbox, when the sender is that human (an agent's environment names no one)."""
    if sender.is_agent:
        user = None
    to = to.strip()
    if to in ("*", "#open", "open"):
        return Address([rooms.OPEN], "*", "#open")
    if to.startswith("#"):
        return _channel(spool, to, sender, sessions_dir)
    if "/" in to or to.startswith(("~", ".")):
        return _project(to, sender, sessions_dir)
    return _sessions(spool, to, sessions_dir, user)


def _channel(spool: Spool, to: str, sender: Identity, sessions_dir: os.PathLike[str] | str) -> Address:
    name = rooms.channel_name(to)
    live = live_channels(spool, sender.id, sessions_dir)
    mirror = _mirror(spool)
    live += sorted({c for p in (mirror.peers if mirror else []) for c in p.channels if c not in live})  # elsewhere
    if name not in live:
        listed = ", ".join("#" + c for c in live) or "none"
        from attend.domain.messages import channels

        state = "no such channel" if not channels.exists(spool, name) else "no member but you is here"
        raise NotFoundError(
            f"cannot send to #{name}: {state} (channels with members to hear it: {listed}); or send to #open"
        )
    return Address([rooms.channel_room(name)], "#" + name, "#" + name)


def live_channels(spool: Spool, exclude: str, sessions_dir: os.PathLike[str] | str) -> list[str]:
    from attend.domain.messages import channels  # only a channel send reads membership

    out = []
    for name in channels.names(spool):
        if any(m != exclude and _hears(spool, name, m, sessions_dir) for m in channels.members(spool, name)):
            out.append(name)
    return out


def _hears(spool: Spool, channel: str, member: str, sessions_dir: os.PathLike[str] | str) -> bool:
    """A live session, or a human member (who reads the channel with inbox or tail; a human has no
    session record to judge liveness by, and stays a member until it leaves)."""
    from attend.domain.messages import channels

    if channels.member_kind(spool, channel, member) == "human":
        return True
    return liveness.is_live(spool, member, sessions_dir)


def live_projects(sessions_dir: os.PathLike[str] | str) -> dict[str, list[identity.SessionRecord]]:
    projects: dict[str, list[identity.SessionRecord]] = {}
    for record in identity.live_records(sessions_dir):
        if record.cwd:
            projects.setdefault(identity.normalise_origin(record.cwd), []).append(record)
    return projects


def _project(to: str, sender: Identity, sessions_dir: os.PathLike[str] | str) -> Address:
    path = identity.normalise_origin(os.path.realpath(os.path.expanduser(to)))
    live = live_projects(sessions_dir)
    if not any(r.session_id != sender.id for r in live.get(path, [])):
        others = sorted(p for p, recs in live.items() if any(r.session_id != sender.id for r in recs))
        if not others:
            raise NotFoundError(f"no live session at {path}, and no other live session on this machine")
        near = _nearest(path, others)
        hint = f"; did you mean {near}?" if near else ""
        raise NotFoundError(f"no live session at {path}; live projects: {', '.join(others)}{hint}")
    return Address([rooms.project_room(path)], path, path)


def _nearest(path: str, candidates: list[str]) -> str | None:
    def shared_tail(a: str, b: str) -> int:
        n = 0
        for x, y in zip(reversed(a.split("/")), reversed(b.split("/")), strict=False):
            if x != y:
                break
            n += 1
        return n

    best = max(candidates, key=lambda c: (shared_tail(path, c), -len(c)))
    if shared_tail(path, best):
        return best
    import difflib

    close = difflib.get_close_matches(path, candidates, n=1)
    return close[0] if close else None


HUMAN_PREFIX = "user:"  # the explicit form of a human's name


def _sessions(spool: Spool, to: str, sessions_dir: os.PathLike[str] | str, user: str | None) -> Address:
    wanted = [part.strip() for part in to.split(",") if part.strip()]
    if not wanted:
        raise UsageError(f"empty address {to!r}; use *, #channel, a project path, or session ids or names")
    known = candidates(spool, sessions_dir)
    people = addressable_humans(spool, user)
    mirror = _mirror(spool)  # other hosts' sessions and humans, when a relay serves this spool
    targets: list[str] = []
    shown: list[str] = []
    room_list: list[str] = []
    warnings: list[str] = []
    reached: list[str] = []
    for want in wanted:
        if mirror is not None:
            elsewhere = _across_hosts(spool, want, mirror, known, people, warnings)
            if elsewhere is not None:
                target, room, label = elsewhere
                if room not in room_list:
                    targets.append(target)
                    shown.append(label)  # its name@host, as peers shows it (the To header keeps the id)
                    room_list.append(room)
                continue
        else:
            _no_relay(want)
        want = want.removesuffix("@" + host())
        if want.startswith(HUMAN_PREFIX):
            human: str | None = want[len(HUMAN_PREFIX) :]
            if human not in people:
                listed = ", ".join(people[:10]) or "none yet"
                raise NotFoundError(f"no human named {human!r} has a mailbox (humans: {listed})")
        else:
            human = _one_human(want, people, spool)
            if human is not None and (clash := session_names_like(spool, want, sessions_dir)):
                raise UsageError(
                    f"{want!r} names a human and also a session ({clash}); say {HUMAN_PREFIX}{want} for the "
                    "human, or the session's id (attend peers --json)"
                )
        if human is not None:
            target, name, room = human, human, rooms.human_room(human)
        else:
            found = _one_session(spool, want, known, sessions_dir, people)
            if note := earlier_note(want, found, known):
                warnings.append(note)
            target = sessions.moved_to(spool, found.sid)
            name, room = found.name, rooms.direct_room(target)
            if found.record is not None and not sessions.is_enrolled(spool, target):
                warnings.append(unenrolled(found))
        if room not in room_list:
            targets.append(target)
            shown.append(name)
            room_list.append(room)
            if human is not None:
                reached.append(human)
    return Address(room_list, ",".join(targets), ",".join(shown), tuple(warnings), tuple(reached))


def unenrolled(c: Candidate) -> str:
    """What the sender of a message to a live session that has not enrolled is told: one line."""
    return (
        f"{c.name} is a live Claude session that has not joined attend, so it hears nothing yet; its "
        f"direct room keeps this until it does: in that session, run attend join <channel> (or arm attend "
        f"run under Monitor)"
    )


def session_names_like(spool: Spool, name: str, sessions_dir: os.PathLike[str] | str) -> str | None:
    """The first session whose name, alias, persona or client name is ``name`` (case aside), as its
    name; None when no session is called that."""
    lowered = name.lower()
    for _key, sid, entry in sessions.all_registrations(spool):
        persona = str(entry.get("persona") or "")
        shown = sessions.display(persona, entry, sessions.stored_name(entry)) if persona else sid
        if lowered in (shown.lower(), persona.lower(), sessions.alias(persona, entry).lower()):
            return shown
    for record in identity.live_records(sessions_dir):
        if record.name and record.name.lower() == lowered:
            return record.name
    return None


def _mirror(spool: Spool) -> remote.Mirror | None:
    """The relay's mirror of other hosts, read (and its module imported) only where a relay wrote one
    and still serves this spool: after ``attend relay --off`` nothing would carry a send there, however
    recent the mirror's entries."""
    try:
        if not spool.exists(RELAY, RELAY_PEERS) or not spool.exists(RELAY, RELAY_ON):
            return None
    except OSError:
        return None  # a planted folder on the way: no mirror, as reading it would say
    from attend.domain.messages import remote

    remote.adopt(spool)  # names with @host are compared with the spool's host, whatever the environment
    return remote.read(spool)


def refuse_unrelayed(spool: Spool, room_list: list[str]) -> None:
    """Refuse a room of another host's session or human (a reply to a relayed record) where no relay
    serves this spool, as ``name@host`` is refused."""
    if spool.exists(RELAY, RELAY_ON):
        return
    for room in room_list:
        if room.startswith(("d-", "h-")):
            _no_relay(room[2:])


def _no_relay(want: str) -> None:
    """Refuse ``name@host`` for another host where no relay serves this spool: the send would land in a
    local room that nothing carries."""
    _bare, at, where = want.rpartition("@")
    if at and HOST_RE.fullmatch(where) and where != host():
        raise NotFoundError(
            f"{want!r} is on host {where}, and no relay serves this spool (attend relay --off, or never run "
            "here): run attend relay to reach other hosts"
        )


def _across_hosts(
    spool: Spool,
    want: str,
    mirror: remote.Mirror,
    known: list[Candidate],
    people: list[str],
    warnings: list[str],
) -> tuple[str, str, str] | None:
    """A part that names a session or human of another host: (To label, room, its name@host). None:
    resolve it here. ``name@host`` picks the host. A bare name that fits a session of this host
    addresses it, however other hosts name theirs (another host's presence cannot take a local name),
    and the sender is told the ``name@host`` form of the other; a bare name on two other hosts, or a
    human's on this host and another, is refused with the ``name@host`` forms that tell them apart (a
    human's name on this host wins when config says same-named humans are one person)."""
    me = host()
    bare, at, where = want.rpartition("@")
    if at and HOST_RE.fullmatch(where):
        if where == me:
            return None
        found = [p for p in mirror.peers if p.host == where and _names(p, bare)]
        if not found:
            raise NotFoundError(f"no session or human {bare!r} on host {where} (attend peers lists them)")
        if len(found) > 1:
            ids = ", ".join(f"{p.id}@{p.host}" for p in found)
            raise UsageError(f"{want!r} names several sessions ({ids}); give a session id with its @host")
        return found[0].id + "@" + where, found[0].room, _shown(found[0])
    found = [p for p in mirror.peers if _names(p, want)]
    if not found:
        return None
    here = []
    if _one_human(want, people, spool) is not None:
        if mirror.same_humans:
            return None  # one person: the mailbox here
        here.append(f"{want}@{me}")
    elif _is_local_session(spool, want, known):
        others = ", ".join(sorted({p.address if p.name != p.id else f"{p.id}@{p.host}" for p in found}))
        warnings.append(f"{want!r} is a session here; {others} on another host shares the name (say {others})")
        return None
    if len(found) == 1 and not here:
        return found[0].id + "@" + found[0].host, found[0].room, _shown(found[0])
    options = ", ".join(here + sorted({p.address if p.name != p.id else f"{p.id}@{p.host}" for p in found}))
    raise UsageError(f"{want!r} is on more than one host; say which: {options}")


def _shown(peer: remote.RemotePeer) -> str:
    """How a send names a peer of another host: ``name@host`` (its id when it has no name)."""
    return peer.address if peer.name else f"{peer.id}@{peer.host}"


def _names(peer: remote.RemotePeer, want: str) -> bool:
    return peer.id == want or peer.name.lower() == want.lower()


def _is_local_session(spool: Spool, want: str, known: list[Candidate]) -> bool:
    if is_session_id(want) and spool.exists("sessions", want):
        return True
    return any(n.lower() == want.lower() for c in known for n in c.names())


def addressable_humans(spool: Spool, user: str | None) -> list[str]:
    """Humans a message can be addressed to: each with a mailbox, and the user running the command."""
    people = humans.known(spool)
    me = humans.mailbox(user) if user else None
    if me is not None and me not in people:
        people.append(me)
    return sorted(people)


def _one_human(want: str, people: list[str], spool: Spool) -> str | None:
    """The human named exactly ``want``; a session folder of that name wins (ids are uuids in practice)."""
    if want not in people or spool.exists("sessions", want):
        return None
    return want


def candidates(spool: Spool, sessions_dir: os.PathLike[str] | str) -> list[Candidate]:
    """Every session a name may address: each registered one, by its name (the live record's client
    name where it has one, so a rename in the client shows at once) and its ``Persona-ordinal`` alias,
    and each live one not registered (it has not enrolled), by its client name or persona."""
    live = {r.session_id: r for r in identity.live_records(sessions_dir)}
    out: list[Candidate] = []
    for _key, sid, entry in sessions.all_registrations(spool):
        persona = entry.get("persona")
        if not persona or not entry.get("ordinal"):
            continue
        record = live.pop(sid, None)
        client = (record.name if record else None) or sessions.stored_name(entry)
        name = sessions.display(str(persona), entry, client)
        # Persona-ordinal, and the name-ordinal earlier versions showed for a session with a name.
        own = {sessions.alias(client, entry) if client else name} - {name}
        aliases = ({sessions.alias(str(persona), entry)} | own) - {name}
        out.append(Candidate(sid, name, tuple(sorted(aliases)), record, tuple(own), earlier_of(entry, name)))
    for sid, record in live.items():
        origin = identity.normalise_origin(record.cwd or "/")
        out.append(Candidate(sid, record.name or identity.nickname(origin), (), record))
    return out


def earlier_of(entry: dict[str, object], name: str) -> tuple[str, ...]:
    """A registered session's earlier names: those its registration keeps, and the name it recorded
    last when its live record now gives another (a rename not yet recorded)."""
    earlier = sessions.earlier_names(entry)
    stored = sessions.stored_name(entry)
    if stored and stored != name:
        earlier.append(stored)
    return tuple(n for n in dict.fromkeys(earlier) if n != name)


def earlier_note(want: str, found: Candidate, known: list[Candidate]) -> str | None:
    """The sender's one line when ``want`` was another session's earlier name and now names ``found``."""
    lowered = want.lower()
    before = [c for c in known if c.sid != found.sid and any(n.lower() == lowered for n in c.earlier)]
    if not before or found.name.lower() != lowered:
        return None
    return (
        f"{want!r} was the earlier name of session {before[0].name} ({before[0].sid}); it now names another "
        f"session, which this went to"
    )


def session_names(spool: Spool, sessions_dir: os.PathLike[str] | str) -> dict[str, str]:
    """Every addressable session's id -> its one name, as ``peers`` shows it."""
    return {c.sid: c.name for c in candidates(spool, sessions_dir)}


def named_to(spool: Spool, to: str, names: dict[str, str]) -> str:
    """A direct message's To header (session ids and humans' user names, comma-separated) with each
    session by its name in ``names`` (an id a /clear moved, by its current id's); a human, and an id
    no session answers to, as written."""

    def one(part: str) -> str:
        if not is_session_id(part):
            return part
        return names.get(part) or names.get(sessions.moved_to(spool, part)) or part

    return ",".join(one(p.strip()) for p in to.split(",") if p.strip())


def _state(spool: Spool, c: Candidate, sessions_dir: os.PathLike[str] | str) -> str:
    """How a candidate stands, for a refusal that lists several: live, parked, not joined, or gone."""
    enrolled = sessions.is_enrolled(spool, c.sid)
    if enrolled:
        return "live" if liveness.is_live(spool, c.sid, sessions_dir) else "parked: enrolled, not running"
    return "live, not joined" if c.record is not None else "gone: not enrolled, not running"


def _where(spool: Spool, c: Candidate) -> str:
    if c.record is not None and c.record.cwd:
        return identity.normalise_origin(c.record.cwd)
    enrollment = sessions.read_enrollment(spool, c.sid)
    return enrollment.origin if enrollment else "?"


def _other_account(name: str) -> bool:
    """Whether ``name`` is an account of this machine other than the caller's own (on the refusal path only)."""
    import pwd

    try:
        return pwd.getpwnam(name).pw_uid != os.getuid()
    except (KeyError, ValueError):
        return False


def _fits(name: str, want: str, exact: bool) -> bool:
    return name == want if exact else name.startswith(want)


def _one_session(
    spool: Spool, want: str, known: list[Candidate], sessions_dir: os.PathLike[str] | str, people: list[str]
) -> Candidate:
    if is_session_id(want) and (spool.exists("sessions", want) or any(c.sid == want for c in known)):
        sid = sessions.moved_to(spool, want)  # an id from before a /clear reaches the session now
        return next((c for c in known if c.sid == sid), Candidate(sid, sid, (), None))
    lowered = want.lower()
    matches, exact = [], False
    # Exactly, then as a prefix; each first among names, then the aliases names make, then personas'.
    # An earlier name (stable names) fits exactly only, after every current name and alias.
    for exact in (True, False):
        earlier = (lambda c: c.earlier) if exact else (lambda c: ())
        for tier in (lambda c: (c.name,), lambda c: c.own, lambda c: c.aliases, earlier):
            matches = [c for c in known if any(_fits(n.lower(), lowered, exact) for n in tier(c))]
            if matches:
                break
        if matches:
            break
    if len(matches) == 1:
        return matches[0]
    if matches:
        listed = "; ".join(
            f"{c.name} ({_state(spool, c, sessions_dir)}, {_where(spool, c)}, id {c.sid})"
            for c in sorted(matches, key=lambda c: (c.name, c.sid))
        )
        more = "give the session id" if exact else "give more of the name, or the session id"
        raise UsageError(f"{want!r} fits {len(matches)} sessions: {listed}; {more}")
    if _other_account(want):
        raise NotFoundError(
            f"{want!r} is another user account of this machine: each account's spool is its own, and attend "
            f"never writes into another's; write to a human of your spool (attend peers lists them)"
        )
    names = sorted(c.name for c in known)
    hint = f"; sessions: {', '.join(names[:10])}" if names else "; no sessions registered"
    hint += f"; humans: {', '.join(people[:10])}" if people else ""
    raise NotFoundError(f"no session or human named {want!r}{hint} (attend peers lists them)")
