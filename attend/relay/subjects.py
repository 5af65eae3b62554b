"""Subjects, the stream, the consumers, the presence bucket and the permissions each host needs:
the names both sides agree on, declared once (docs/architecture/relay.md).

``attend.from.<src>.to.<dst>.<kind>``: ``<src>`` is the sending host, and the server lets only that
host's credentials publish under it, so the subject proves the sender. ``<dst>`` is a host name, or
``all`` for #open and channels; ``<kind>`` is ``open``, ``chan``, ``sess`` or ``human``. The room
(and so the session, human or channel) is in the record itself, which the receiver checks.
"""

from __future__ import annotations

from attend import layout
from attend.domain.core import rooms

STREAM = "ATTEND"
BUCKET = "attend-presence"
SUBJECTS = "attend.>"
MAX_AGE_DAYS = 7  # a host offline longer misses what expired (the receiver says so)
DUPLICATE_WINDOW = 30 * 60  # seconds: covers a relay restart; the receiver's index covers the rest
MAX_MSG = 128 * 1024  # a record is at most 64 KiB of body plus its headers
ACK_WAIT = 30  # seconds before an unacknowledged arrival is delivered again


def direct(host: str) -> str:
    return f"{host}-direct"


def bcast(host: str) -> str:
    return f"{host}-bcast"


def consumers(host: str) -> dict[str, str]:
    """Durable pull consumer -> its one filter. One filter each: a 2.9 server silently drops a list."""
    return {direct(host): f"attend.from.*.to.{host}.>", bcast(host): "attend.from.*.to.all.>"}


def subject_for(src: str, room: str) -> str | None:
    """Where a record of ``room`` is published; None for a room that stays on this host."""
    if room == rooms.OPEN:
        return f"attend.from.{src}.to.all.open"
    if room.startswith("@"):
        return f"attend.from.{src}.to.all.chan"
    if room.startswith(("d-", "h-")) and "@" in room:
        dst = room.rpartition("@")[2]
        if layout.HOST_RE.fullmatch(dst) and dst not in ("all", src):
            return f"attend.from.{src}.to.{dst}.{'sess' if room[0] == 'd' else 'human'}"
    return None


def parse(subject: str) -> tuple[str, str, str] | None:
    """(src, dst, kind) of a relay subject; None for anything else."""
    parts = subject.split(".")
    if len(parts) != 6 or parts[0] != "attend" or parts[1] != "from" or parts[3] != "to":
        return None
    src, dst, kind = parts[2], parts[4], parts[5]
    if not layout.HOST_RE.fullmatch(src) or src == "all" or kind not in ("open", "chan", "sess", "human"):
        return None
    return src, dst, kind


def local_room(room: str, dst: str, kind: str, me: str) -> str | None:
    """The room an arrival is recorded in here, when its room agrees with its subject; else None."""
    if kind == "open":
        return room if dst == "all" and room == rooms.OPEN else None
    if kind == "chan":
        name = room[1:]
        ok = dst == "all" and room.startswith("@") and rooms.is_channel_name(name) and name not in rooms.RESERVED
        return room if ok else None
    if dst != me or not room.endswith("@" + me):
        return None
    bare = room[: -len(me) - 1]
    if kind == "sess" and bare.startswith("d-") and layout.is_session_id(bare[2:]):
        return bare
    if kind == "human" and bare.startswith("h-") and layout.is_user_name(bare[2:]):
        return bare
    return None


def permissions(host: str) -> dict[str, dict[str, list[str]]]:
    """What the server must allow host ``host``, and nothing more: publish under its own subjects, pull
    and ack its own two consumers, put and delete only its own presence keys, read everyone's; receive
    only on its own inbox prefix (the client sets it)."""
    mine = [direct(host), bcast(host)]
    kv = f"KV_{BUCKET}"
    return {
        "publish": {
            "allow": [
                f"attend.from.{host}.>",
                *(f"$JS.API.CONSUMER.MSG.NEXT.{STREAM}.{c}" for c in mine),
                *(f"$JS.API.CONSUMER.INFO.{STREAM}.{c}" for c in mine),
                *(f"$JS.ACK.{STREAM}.{c}.>" for c in mine),
                f"$JS.API.STREAM.INFO.{STREAM}",
                "$JS.API.INFO",
                f"$KV.{BUCKET}.{host}.>",
                f"$JS.API.STREAM.INFO.{kv}",
                f"$JS.API.CONSUMER.CREATE.{kv}",
                f"$JS.API.CONSUMER.CREATE.{kv}.>",
                f"$JS.API.CONSUMER.INFO.{kv}.>",
                f"$JS.FC.{kv}.>",
            ]
        },
        "subscribe": {"allow": [f"_INBOX_{host}.>"]},
    }


def inbox_prefix(host: str) -> str:
    return f"_INBOX_{host}"


def server_accounts(hosts: list[str]) -> str:
    """The ``accounts`` block of a nats-server configuration for these hosts (one nkey user each, plus
    an admin who provisions), as docs/architecture/relay.md shows it; the tests run its permissions."""
    lines = ["accounts: {", "  ATTEND: {", "    jetstream: enabled", "    users: ["]
    lines.append("      { user: admin, password: $ATTEND_ADMIN_PASSWORD }  # provisions; never on a host")
    for host in hosts:
        perms = permissions(host)
        lines.append(f"      {{ nkey: <{host}'s public nkey, U...>  # {host}")
        lines.append("        permissions: {")
        for side in ("publish", "subscribe"):
            allowed = ", ".join(f'"{s}"' for s in perms[side]["allow"])
            lines.append(f"          {side}: {{ allow: [{allowed}] }}")
        lines.append("        } }")
    lines += ["    ]", "  }", "}"]
    return "\n".join(lines)
