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
    )


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


# ---------------------------------------------------------------------- leases on other hosts

MAX_REMOTE_LEASES = 64  # leases of one remote holder read at most


class RemoteLease(Record):
    """A lease another host's session holds (docs/architecture/leases.md, "Across hosts"): keyed by
    the repository (``url:<origin>`` or ``root:<first commit>``), never by that host's path."""

    host: str
    id: str  # the holder's session id on its host
    name: str
    client: str
    repo: str
    glob: str  # relative to the repository's root
    reason: str
    shared: bool
    since: float  # when it was leased (the holder's host's clock)

    @property
    def address(self) -> str:
        return f"{self.name}@{self.host}"


def leases(spool: Spool, now: float | None = None) -> list[RemoteLease]:
    """Other hosts' live leases, as the relay last heard of them; each field checked (another host's
    input, never trusted). Nothing without a relay."""
    try:
        doc = safejson.loads(spool.read(RELAY, RELAY_PEERS, limit=MIRROR_LIMIT))
    except (OSError, ValueError):
        return []
    if not isinstance(doc, dict) or not isinstance(doc.get("peers"), list):
        return []
    now = time.time() if now is None else now
    ttl = doc.get("ttl", 30)
    ttl = float(ttl) if isinstance(ttl, int | float) and ttl == ttl else 30.0
    out: list[RemoteLease] = []
    for entry in doc["peers"]:
        if not isinstance(entry, dict) or entry.get("kind") != "leases":
            continue
        host, sid, seen = entry.get("host"), entry.get("id"), entry.get("seen")
        if not (isinstance(host, str) and HOST_RE.fullmatch(host)) or not (isinstance(sid, str) and is_session_id(sid)):
            continue
        if not (isinstance(seen, int | float) and seen == seen and now - float(seen) < ttl):
            continue
        items = entry.get("leases")
        for item in items[:MAX_REMOTE_LEASES] if isinstance(items, list) else []:
            if not isinstance(item, dict):
                continue
            repo, glob, since = _text(item.get("repo"), 512), _text(item.get("glob"), 1024), item.get("since")
            if not repo.startswith(("url:", "root:")) or not glob or glob.startswith("/") or ".." in glob.split("/"):
                continue
            out.append(
                RemoteLease(
                    host,
                    sid,
                    _text(entry.get("name"), 64) or sid,
                    _text(entry.get("client"), 32),
                    repo,
                    glob,
                    _text(item.get("reason"), 200),
                    item.get("shared") is True,
                    float(since) if isinstance(since, int | float) and 0 <= since < 1e12 else 0.0,
                )
            )
    return out
