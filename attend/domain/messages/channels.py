"""Channel membership: one file per member under channels/<name>/members/, written and removed
atomically, so concurrent joins never erase each other (the original's last-writer-wins yaml did).

Layout: ``channels/<name>/meta.json`` (pinned, description) and ``channels/<name>/members/<id>``,
one small JSON file per member (``kind``, ``joined_at``). The member's id is the file name; the
content is informational, so a hand-edited body never changes who is a member.

Locking: joiners hold the channel's lock shared (they never conflict: each writes its own file);
whatever removes the whole channel, or rewrites meta.json, holds it exclusive. So a channel is never
removed under a join in progress, and two meta updates never lose one another.
"""

from __future__ import annotations

import time

from attend import safejson
from attend.domain.core import rooms
from attend.errors import NotFoundError, UsageError
from attend.layout import ALNUM
from attend.record import Record
from attend.spool import NoSpaceError, RefusedEntry, Spool

_MEMBER_CHARS = ALNUM + "_.-"


def is_member_name(name: str) -> bool:
    """A member file's name: a session id, or a human's user name (identity.human_id); an older spool
    may hold ``user@terminal``: ``[A-Za-z0-9][A-Za-z0-9_.-]{0,127}(@[A-Za-z0-9._-]{1,64})?``. Checked
    by character: a send to a channel lists its members, and a pattern would bring ``re`` (~3 ms)."""
    local, at, terminal = name.partition("@")
    if at and not (0 < len(terminal) <= 64 and all(c in _MEMBER_CHARS for c in terminal)):
        return False
    return 0 < len(local) <= 128 and local[0] in ALNUM and all(c in _MEMBER_CHARS for c in local)


DESCRIPTION_MAX = 200  # characters; a description is one line in a table


class ChannelInfo(Record):
    name: str
    members: tuple[str, ...]
    pinned: bool
    description: str
    warnings: tuple[str, ...] = ()


def _lock(name: str) -> str:
    return f"channel.{name}"


def parse_name(raw: str, verb: str) -> str:
    """A channel name from the caller (optional leading '#'); #open gets its own clear refusal."""
    bare = raw.strip()
    bare = bare[1:] if bare.startswith("#") else bare
    if bare == rooms.OPEN:
        raise UsageError(f"#open is the base channel: every session is always in it, so it cannot be {verb}")
    return rooms.channel_name(bare)


def exists(spool: Spool, name: str) -> bool:
    return spool.exists("channels", name, "members")


def require(spool: Spool, name: str, *, creatable: bool = True) -> None:
    """Refuse a channel that does not exist, listing those that do (and how to make one, where apt)."""
    if not exists(spool, name):
        known = names(spool)
        hint = f"; channels: {', '.join('#' + n for n in known)}" if known else "; there are no channels yet"
        make = f" (attend channels create {name} makes one)" if creatable else ""
        raise NotFoundError(f"#{name}: no such channel{hint}{make}")


def names(spool: Spool) -> list[str]:
    return [n for n in spool.names("channels") if rooms.is_channel_name(n) and n not in rooms.RESERVED]


def read_members(spool: Spool, name: str) -> tuple[list[str], list[str]]:
    """(valid member ids, warnings about entries skipped). Never raises on hand-edited nonsense."""
    out: list[str] = []
    warnings: list[str] = []
    try:
        folder = spool.folder("channels", name, "members")
    except FileNotFoundError:
        return [], []
    except RefusedEntry as e:
        return [], [f"#{name}: {e}"]
    with folder:
        for entry in folder.scan():
            if entry.name.startswith("."):
                continue  # a member file being published (tmp name)
            if not entry.is_file or not is_member_name(entry.name):
                warnings.append(f"#{name}: skipped {folder.path(entry.name)}: not a member file (remove it)")
                continue
            out.append(entry.name)
    return sorted(out), warnings


def members(spool: Spool, name: str) -> list[str]:
    return read_members(spool, name)[0]


def member_kind(spool: Spool, name: str, member: str) -> str:
    """``agent`` or ``human``, from the member file; a body edited into nonsense falls back to
    whether the id has a session folder."""
    text = spool.read_text("channels", name, "members", member)
    try:
        kind = safejson.loads(text).get("kind") if text else None
    except (ValueError, AttributeError):
        kind = None
    if kind in ("agent", "human"):
        return str(kind)
    return "agent" if spool.exists("sessions", member) else "human"


def read_meta(spool: Spool, name: str) -> tuple[dict[str, object], str | None]:
    """(meta, warning). An unreadable meta.json reads as pinned, so nothing deletes the channel by mistake."""
    text = spool.read_text("channels", name, "meta.json")
    if text is None:
        return {}, None
    try:
        raw = safejson.loads(text)
        if not isinstance(raw, dict):
            raise ValueError("not an object")
    except ValueError:
        path = spool.path("channels", name, "meta.json")
        return {"pinned": True}, f"#{name}: {path} is not valid JSON; treating the channel as pinned (fix or remove it)"
    return raw, None


def meta(spool: Spool, name: str) -> dict[str, object]:
    return read_meta(spool, name)[0]


def info(spool: Spool, name: str) -> ChannelInfo:
    m, warn = read_meta(spool, name)
    found, warnings = read_members(spool, name)
    desc = m.get("description")
    return ChannelInfo(
        name,
        tuple(found),
        m.get("pinned") is True,
        desc if isinstance(desc, str) else "",
        tuple(warnings + ([warn] if warn else [])),
    )


def check_description(text: str) -> str:
    text = text.strip()
    if not text.isprintable():
        raise UsageError("description must be a single line of printable text")
    if len(text) > DESCRIPTION_MAX:
        raise UsageError(f"description is {len(text)} characters; keep it under {DESCRIPTION_MAX}")
    return text


# ---------------------------------------------------------------------- writing


def _ensure(spool: Spool, name: str, pinned: bool = False, description: str = "") -> bool:
    """Create the channel's folders and meta.json when missing; True when this call created it."""
    spool.make_dir("channels", name, "members")
    if spool.exists("channels", name, "meta.json"):
        return False
    record = {"pinned": pinned, "description": description, "created_at": time.time()}
    try:
        return spool.create_linked(safejson.dumps(record).encode(), "channels", name, "meta.json")
    except NoSpaceError:
        # A full disk: take back the folders if still empty, so no channel without meta.json is left.
        if spool.remove_dir("channels", name, "members"):
            spool.remove_dir("channels", name)
        raise


def create(spool: Spool, name: str, description: str = "", pinned: bool = True) -> bool:
    """Create a channel (pinned by default: an empty created channel should not vanish); False if it exists."""
    with spool.named_lock(_lock(name), shared=True):
        if exists(spool, name):
            return False
        return _ensure(spool, name, pinned, description)


def add_member(spool: Spool, name: str, member: str, kind: str = "agent") -> bool:
    """Add one member file, creating the channel if needed; False when it was already there."""
    record = safejson.dumps({"kind": kind, "joined_at": time.time()}).encode()
    with spool.named_lock(_lock(name), shared=True):
        _ensure(spool, name)
        return spool.create_linked(record, "channels", name, "members", member)


def is_member(spool: Spool, name: str, member: str) -> bool:
    return spool.exists("channels", name, "members", member)


def remove_member(spool: Spool, name: str, member: str) -> bool:
    return spool.remove("channels", name, "members", member)


def update_meta(spool: Spool, name: str, **changes: object) -> dict[str, object]:
    """Change pinned/description under the exclusive lock (no lost update between two callers)."""
    with spool.named_lock(_lock(name)):
        require(spool, name)
        current, _ = read_meta(spool, name)
        current.update(changes)
        spool.write_state(safejson.dumps(current).encode(), "channels", name, "meta.json", durable=True)
        return current


def remove_if_empty(spool: Spool, name: str) -> bool:
    """Remove an unpinned channel with no members, with its history (rooms/@name)."""
    with spool.named_lock(_lock(name)):
        if not exists(spool, name):
            return False
        m, warn = read_meta(spool, name)
        if warn or m.get("pinned") is True:
            return False
        if spool.names("channels", name, "members"):
            return False
        _remove(spool, name)
        return True


def dissolve(spool: Spool, name: str) -> list[str]:
    """Remove a channel whatever its members; returns the members released."""
    require(spool, name)  # before the lock file is made: refusing a channel that is not there writes nothing
    with spool.named_lock(_lock(name)):
        require(spool, name)
        released = members(spool, name)
        _remove(spool, name)
        return released


def _remove(spool: Spool, name: str) -> None:
    spool.remove_tree("channels", name)
    spool.remove_tree("rooms", rooms.channel_room(name))
