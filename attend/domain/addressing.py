"""The address grammar of ``to``: ``*``, ``#name``, a project path, or comma-separated session ids,
display names (``Hana-beta``, or a unique prefix) or humans' user names, resolved at send time.

A part that is a session id wins, then a human's user name exactly (a human who has a mailbox, or the
human running the command), then a display name exactly, then a unique display-name prefix.
``user:NAME`` is always the human NAME, and only a human.

Names cannot be shadowed: a bare name that is a human's and also a session's display name, persona
or client name is refused, naming both explicit forms. An agent is never "the human running the
command", so it cannot bring a human mailbox into being by addressing one.
"""

from __future__ import annotations

import os

from attend import identity
from attend.domain import humans, liveness, rooms, sessions
from attend.errors import NotFoundError, UsageError
from attend.identity import Identity
from attend.layout import HOST_RE, RELAY, RELAY_PEERS, host, is_session_id
from attend.record import Record
from attend.spool import Spool

TYPE_CHECKING = False
if TYPE_CHECKING:
    from attend.domain import remote  # imported where a relay's mirror is read: a plain send needs none


class Address(Record):
    rooms: list[str]
    to: str  # the To header
    humans: tuple[str, ...] = ()  # the humans a name resolved to (send says so)


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
        return Address([rooms.OPEN], "*")
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
        from attend.domain import channels

        state = "no such channel" if not channels.exists(spool, name) else "no member but you is here"
        raise NotFoundError(
            f"cannot send to #{name}: {state} (channels with members to hear it: {listed}); or send to #open"
        )
    return Address([rooms.channel_room(name)], "#" + name)


def live_channels(spool: Spool, exclude: str, sessions_dir: os.PathLike[str] | str) -> list[str]:
    from attend.domain import channels  # only a channel send reads membership

    out = []
    for name in channels.names(spool):
        if any(m != exclude and _hears(spool, name, m, sessions_dir) for m in channels.members(spool, name)):
            out.append(name)
    return out


def _hears(spool: Spool, channel: str, member: str, sessions_dir: os.PathLike[str] | str) -> bool:
    """A live session, or a human member (who reads the channel with inbox or tail; a human has no
    session record to judge liveness by, and stays a member until it leaves)."""
    from attend.domain import channels

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
    return Address([rooms.project_room(path)], path)


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
    names = display_names(spool)
    people = addressable_humans(spool, user)
    mirror = _mirror(spool)  # other hosts' sessions and humans, when a relay serves this spool
    targets: list[str] = []
    room_list: list[str] = []
    reached: list[str] = []
    for want in wanted:
        if mirror is not None:
            found = _across_hosts(spool, want, mirror, names, sessions_dir, people)
            if found is not None:
                target, room = found
                if room not in room_list:
                    targets.append(target)
                    room_list.append(room)
                continue
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
            target, room = human, rooms.human_room(human)
        else:
            target = _one_session(spool, want, names, sessions_dir, people)
            room = rooms.direct_room(target)
        if room not in room_list:
            targets.append(target)
            room_list.append(room)
            if human is not None:
                reached.append(human)
    return Address(room_list, ",".join(targets), tuple(reached))


def session_names_like(spool: Spool, name: str, sessions_dir: os.PathLike[str] | str) -> str | None:
    """The first session whose display name, persona or client name is ``name`` (case aside), as
    ``Persona-ordinal`` or the client's name; None when no session is called that."""
    lowered = name.lower()
    for _key, sid, entry in sessions.all_registrations(spool):
        persona = str(entry.get("persona") or "")
        shown = sessions.display(persona, entry) if persona else sid
        if lowered in (shown.lower(), persona.lower()):
            return shown
    for record in identity.live_records(sessions_dir):
        if record.name and record.name.lower() == lowered:
            return record.name
    return None


def _mirror(spool: Spool) -> remote.Mirror | None:
    """The relay's mirror of other hosts, read (and its module imported) only where a relay wrote one."""
    try:
        if not spool.exists(RELAY, RELAY_PEERS):
            return None
    except OSError:
        return None  # a planted folder on the way: no mirror, as reading it would say
    from attend.domain import remote

    return remote.read(spool)


def _across_hosts(
    spool: Spool,
    want: str,
    mirror: remote.Mirror,
    names: list[tuple[str, str]],
    sessions_dir: os.PathLike[str] | str,
    people: list[str],
) -> tuple[str, str] | None:
    """A part that names a session or human of another host: (To label, room). None: resolve it here.
    ``name@host`` picks the host; a bare name on this host and another, or on two others, is refused
    with the ``name@host`` forms that tell them apart (a human's name on this host wins when config
    says same-named humans are one person)."""
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
        return found[0].id + "@" + where, found[0].room
    found = [p for p in mirror.peers if _names(p, want)]
    if not found:
        return None
    here = []
    if _one_human(want, people, spool) is not None:
        if mirror.same_humans:
            return None  # one person: the mailbox here
        here.append(f"{want}@{me}")
    elif _is_local_session(spool, want, names, sessions_dir):
        here.append(f"{want}@{me}")
    if len(found) == 1 and not here:
        return found[0].id + "@" + found[0].host, found[0].room
    options = ", ".join(here + sorted({p.address if p.name != p.id else f"{p.id}@{p.host}" for p in found}))
    raise UsageError(f"{want!r} is on more than one host; say which: {options}")


def _names(peer: remote.RemotePeer, want: str) -> bool:
    return peer.id == want or peer.name.lower() == want.lower()


def _is_local_session(
    spool: Spool, want: str, names: list[tuple[str, str]], sessions_dir: os.PathLike[str] | str
) -> bool:
    if is_session_id(want) and spool.exists("sessions", want):
        return True
    return any(name.lower() == want.lower() for name, _ in names)


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


def _other_account(name: str) -> bool:
    """Whether ``name`` is an account of this machine other than the caller's own (on the refusal path only)."""
    import pwd

    try:
        return pwd.getpwnam(name).pw_uid != os.getuid()
    except (KeyError, ValueError):
        return False


def display_names(spool: Spool) -> list[tuple[str, str]]:
    """Every registered session's display name (``Persona-ordinal``) and id. Not a mapping: ordinals
    count per project, so one persona in two projects gives two sessions the same name."""
    return [(name, sid) for sid, name in sessions.registered_names(spool).items()]


def _one_session(
    spool: Spool, want: str, names: list[tuple[str, str]], sessions_dir: os.PathLike[str] | str, people: list[str]
) -> str:
    if is_session_id(want) and (
        spool.exists("sessions", want) or any(r.session_id == want for r in identity.live_records(sessions_dir))
    ):
        return sessions.moved_to(spool, want)
    lowered = want.lower()
    exact = [(name, sid) for name, sid in names if name.lower() == lowered]
    matches = exact or [(name, sid) for name, sid in names if name.lower().startswith(lowered)]
    if len({sid for _, sid in matches}) == 1:
        return sessions.moved_to(spool, matches[0][1])
    if matches:
        if exact:  # one name, several sessions: only an id tells them apart
            ids = ", ".join(sorted(sid for _, sid in exact))
            raise UsageError(f"{want!r} names several sessions ({ids}); give a session id (attend peers --json)")
        options = sorted(name for name, _ in matches)
        raise UsageError(f"{want!r} matches several sessions ({', '.join(options)}); give more of the name")
    if _other_account(want):
        raise NotFoundError(
            f"{want!r} is another user account of this machine: each account's spool is its own, and attend "
            f"never writes into another's; write to a human of your spool (attend peers lists them)"
        )
    known = sorted(name for name, _ in names)
    hint = f"; sessions: {', '.join(known[:10])}" if known else "; no sessions registered"
    hint += f"; humans: {', '.join(people[:10])}" if people else ""
    raise NotFoundError(f"no session or human named {want!r}{hint} (attend peers lists them)")
