"""Other hosts' sessions and humans, as the relay last heard of them (docs/architecture/relay.md).

The relay (``attend relay``) watches the shared presence bucket and mirrors it into
``relay/peers.json``; addressing, ``peers`` and reply read that file here, so none of them imports
the relay or talks to a server. An entry counts as live until ``ttl`` seconds after the relay last
heard of it (its own clock, so hosts' clocks may disagree): a host whose relay stopped simply fades.
No mirror (no relay here): nothing remote, at the cost of one failed open.
"""

from __future__ import annotations

import json
import time

from attend import safejson
from attend.layout import HOST_RE, RELAY, RELAY_PEERS, is_session_id, is_user_name
from attend.record import Record
from attend.spool import Spool

MIRROR_LIMIT = 1 << 20  # bytes of peers.json read at most


class RemotePeer(Record):
    host: str
    kind: str  # "agent" or "human"
    id: str  # the session id, or the human's user name, on its host
    name: str  # the display name (a human's: its user name)
    project: str
    status: str
    channels: list[str]  # channel names, without '#'
    seen: float  # when this relay last heard of it (its own clock)
    active: float = 0.0  # a human's last send or read, as its host published it (0: not published)

    @property
    def address(self) -> str:
        """How to reach it from here whatever else shares its name: ``<name>@<host>``."""
        return f"{self.name}@{self.host}"

    @property
    def room(self) -> str:
        """The local room a message to it is recorded in (never fanned out here; the relay carries it)."""
        return ("h-" if self.kind == "human" else "d-") + f"{self.id}@{self.host}"


class Mirror(Record):
    host: str  # this host's name, as the relay publishes under it
    same_humans: bool  # a user name on two hosts is one person (config relay.same_humans)
    ttl: float
    peers: list[RemotePeer]


def read(spool: Spool, now: float | None = None) -> Mirror | None:
    """The live entries of the mirror; None when no relay has written one."""
    try:
        doc = safejson.loads(spool.read(RELAY, RELAY_PEERS, limit=MIRROR_LIMIT))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    now = time.time() if now is None else now
    ttl = float(doc.get("ttl", 30))
    out = []
    for entry in doc.get("peers", []):
        peer = _entry(entry)
        if peer is not None and now - peer.seen < ttl:
            out.append(peer)
    out.sort(key=lambda p: (p.host, p.kind, p.name))
    return Mirror(str(doc.get("host", "")), bool(doc.get("same_humans", False)), ttl, out)


def _entry(entry: object) -> RemotePeer | None:
    """One mirrored entry, checked: whatever another host published is input, never trusted."""
    if not isinstance(entry, dict):
        return None
    host, kind, sid = entry.get("host"), entry.get("kind"), entry.get("id")
    if not (isinstance(host, str) and HOST_RE.fullmatch(host)) or kind not in ("agent", "human"):
        return None
    if not isinstance(sid, str) or not (is_user_name(sid) if kind == "human" else is_session_id(sid)):
        return None
    name = _text(entry.get("name"), 64) or sid
    channels = [c for c in entry.get("channels", []) if isinstance(c, str) and 0 < len(c) <= 64][:64]
    seen = entry.get("seen")
    return RemotePeer(
        host,
        kind,
        sid,
        name,
        _text(entry.get("project"), 256),
        _text(entry.get("status"), 32),
        channels,
        float(seen) if isinstance(seen, int | float) and seen == seen else 0.0,
        _when(entry.get("active_at")) if kind == "human" else 0.0,
    )


def _when(value: object) -> float:
    """A time another host published (seconds since the epoch): finite and positive, else 0 (unknown)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0.0
    return float(value) if 0 < value < 1e11 else 0.0


def _text(value: object, limit: int) -> str:
    if not isinstance(value, str):
        return ""
    return "".join(ch for ch in value[:limit] if ch.isprintable())


def peers(spool: Spool) -> list[RemotePeer]:
    mirror = read(spool)
    return mirror.peers if mirror else []


def write(spool: Spool, host: str, same_humans: bool, ttl: float, entries: list[dict[str, object]]) -> None:
    """The relay's side: replace the mirror atomically."""
    doc = {"host": host, "same_humans": same_humans, "ttl": ttl, "peers": entries}
    spool.write_state(json.dumps(doc, sort_keys=True).encode(), RELAY, RELAY_PEERS)
