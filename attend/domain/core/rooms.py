"""Room names and the address grammar.

Rooms: ``open`` (everyone), ``@<channel>``, ``p-<project key>`` (every session of a project),
``d-<session>`` (direct), ``h-<user>`` (a human's own). The room a record lives in says who receives it.
"""

from __future__ import annotations

from attend.errors import UsageError
from attend.layout import ALNUM, made_safe, user_key

OPEN = "open"
RESERVED = frozenset({"open", "broadcast"})
_CHANNEL_CHARS = ALNUM + "_.-"


def is_channel_name(name: str) -> bool:
    """``[A-Za-z0-9][A-Za-z0-9_.-]{0,63}``, checked by character: a send to a channel checks its name,
    and a pattern would bring ``re`` into the send (~3 ms of a start)."""
    return 0 < len(name) <= 64 and name[0] in ALNUM and all(c in _CHANNEL_CHARS for c in name)


def channel_name(raw: str, *, allow_open: bool = False) -> str:
    """Validate a channel name (an optional leading '#' is dropped). Names are case-insensitive and
    kept in lower case, so #Deploy and #deploy are one channel on every filesystem."""
    name = (raw[1:] if raw.startswith("#") else raw).lower()
    if allow_open and name == OPEN:
        return name
    if not is_channel_name(name):
        raise UsageError(
            f"invalid channel name {raw!r}: use 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"
        )
    if name in RESERVED:
        raise UsageError(f"#{name} is reserved; pick another channel name")
    return name


def channel_room(name: str) -> str:
    return "@" + name


def project_key(origin: str) -> str:
    """A folder-safe key for a project path: a readable slug plus a hash of the exact path."""
    slug = made_safe(origin, ALNUM, runs=True).strip("-")[-60:].strip("-") or "root"
    try:  # CPython's own SHA-1: hashlib would load OpenSSL, ~4 MB in every sensor loop
        from _sha1 import sha1  # type: ignore[import-not-found]
    except ImportError:
        from hashlib import sha1

    digest = sha1(origin.encode("utf-8", "surrogateescape")).hexdigest()[:8]
    return f"{slug}-{digest}"


def project_room(origin: str) -> str:
    return "p-" + project_key(origin)


def direct_room(sid: str) -> str:
    return "d-" + sid


def human_room(human_id: str) -> str:
    """A human's own room (``h-<user>``): where replies to what a human sent privately, or to a project
    it may not be in, land, and what is sent to the human by name. Its records are linked into the
    human's own mailbox (humans/<user>/); no session is fanned out to it."""
    return "h-" + user_key(human_id)


def scope(room: str) -> str:
    """The label a reader sees for a room: #open, #name, project or direct."""
    if room == OPEN:
        return "#open"
    if room.startswith("@"):
        return "#" + room[1:]
    if room.startswith("p-"):
        return "project"
    if room.startswith(("d-", "h-")):
        return "direct"
    return room


def priority(room: str) -> str:
    """Fixed priority for a Monitor line: addressed mail is high, a channel medium, #open low."""
    if room == OPEN:
        return "low"
    if room.startswith("@"):
        return "medium"
    return "high"
