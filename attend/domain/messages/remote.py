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

from attend import layout, safejson
from attend.domain.core.rooms import is_channel_name
from attend.layout import ASIDE_LOG, HOST_RE, NOTICES, RELAY, RELAY_ON, RELAY_PEERS, is_session_id, is_user_name
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
    inbound: str = ""  # its inbound rule for messages from other hosts (accept, hold, refuse; "" unsaid)
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
    """The live entries of the mirror; None when no relay has written one (or what is there is not a
    mirror). The relay writes the file from what other hosts publish, and any process of this user can
    write it too: each field is checked here, and an entry with a bad one is dropped, never the caller."""
    try:
        doc = safejson.loads(spool.read(RELAY, RELAY_PEERS, limit=MIRROR_LIMIT))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    now = time.time() if now is None else now
    ttl = _number(doc.get("ttl"), 30.0, 0.0, 3600.0)
    entries = doc.get("peers")
    out = []
    for item in entries[:MAX_PEERS] if isinstance(entries, list) else []:
        peer = entry(item)
        if peer is not None and now - peer.seen < ttl:
            out.append(peer)
    out.sort(key=lambda p: (p.host, p.kind, p.name))
    host = doc.get("host")
    same = doc.get("same_humans")
    return Mirror(host if isinstance(host, str) and HOST_RE.fullmatch(host) else "", same is True, ttl, out)


def entry(value: object) -> RemotePeer | None:
    """One presence entry as another host published it (or as the mirror holds it), checked: whatever
    another host publishes is input, never trusted. A field that only describes it (name, project,
    status, channels, seen) is dropped when bad; a bad one that names it (host, kind, id) drops it."""
    if not isinstance(value, dict):
        return None
    host, kind, sid = value.get("host"), value.get("kind"), value.get("id")
    if not (isinstance(host, str) and HOST_RE.fullmatch(host)) or host == "all" or kind not in ("agent", "human"):
        return None
    if not isinstance(sid, str) or not (is_user_name(sid) if kind == "human" else is_session_id(sid)):
        return None
    name = "".join(c for c in _text(value.get("name"), 64) if c not in ",@").strip() or sid
    raw = value.get("channels")
    channels = [c for c in raw[:MAX_CHANNELS] if _channel(c)] if isinstance(raw, list) else []
    return RemotePeer(
        host,
        kind,
        sid,
        name,
        _text(value.get("project"), 256),
        _text(value.get("status"), 32),
        channels,
        _number(value.get("seen"), 0.0, 0.0, 1e11),
        inbound if (inbound := value.get("inbound")) in ("accept", "hold", "refuse") else "",
        _number(value.get("active_at"), 0.0, 0.0, 1e11) if kind == "human" else 0.0,
    )


MAX_PEERS = 4096  # entries read from the mirror at most
MAX_CHANNELS = 64  # channels kept of one entry


def _channel(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 64 and is_channel_name(value)


def _number(value: object, default: float, low: float, high: float) -> float:
    """A finite number within [low, high] (a bool is not one); else ``default``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    if isinstance(value, int) and not low <= value <= high:  # a 5,000-digit int never reaches float()
        return default
    number = float(value)
    return number if low <= number <= high else default


def _text(value: object, limit: int) -> str:
    if not isinstance(value, str):
        return ""
    return "".join(ch for ch in value[:limit] if ch.isprintable() and not 0xD800 <= ord(ch) <= 0xDFFF)


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
    ttl = _number(doc.get("ttl"), 30.0, 0.0, 3600.0)
    out: list[RemoteLease] = []
    for entry in doc["peers"]:
        if not isinstance(entry, dict) or entry.get("kind") != "leases":
            continue
        host, sid, seen = entry.get("host"), entry.get("id"), entry.get("seen")
        if not (isinstance(host, str) and HOST_RE.fullmatch(host)) or not (isinstance(sid, str) and is_session_id(sid)):
            continue
        if now - _number(seen, 0.0, 0.0, 1e11) >= ttl:
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
                    _number(since, 0.0, 0.0, 1e11),
                )
            )
    return out


# ---------------------------------------------------------------------- the spool's host name


def spool_host(spool: Spool) -> str | None:
    """The host name this spool's relay publishes under (``relay/enabled``), once a relay has run; None
    before, or after ``attend relay --off``."""
    try:
        doc = safejson.loads(spool.read(RELAY, RELAY_ON, limit=4096))
    except (OSError, ValueError):
        return None
    host = doc.get("host") if isinstance(doc, dict) else None
    return host if isinstance(host, str) and HOST_RE.fullmatch(host) and host != "all" else None


def adopt(spool: Spool) -> str:
    """The host name belongs to the spool once a relay has run: every process of it names its records
    under that name, whatever ``ATTEND_HOST`` (or the machine's node name) says here, so no record for
    another host is queued under a name its relay cannot publish. The name in use, returned."""
    host = spool_host(spool)
    if host is not None and host != layout.host():
        layout.adopt_host(host)
    return layout.host()


# ---------------------------------------------------------------------- what the relay set aside


def set_aside_note(spool: Spool, name: str, sender: str, why: str) -> None:
    """Record why the relay set ``name`` aside: a line of ``relay/aside.log`` (doctor, relay --check),
    and the sender's notice, which its next send says (``take_notice``)."""
    why = _text(why, 300)
    spool.append_state(f"{name} {sender or '-'} {why}\n".encode(), RELAY, ASIDE_LOG, limit=1 << 16)
    if is_session_id(sender) or is_user_name(sender):
        spool.write_state(f"{name} {why}".encode(), RELAY, NOTICES, sender)


def take_notice(spool: Spool, sender: str) -> str | None:
    """The sender's warning for the newest of its records the relay set aside since its last send, once
    (removed as it is read); None when there is none (one stat)."""
    if not (is_session_id(sender) or is_user_name(sender)) or not spool.exists(RELAY, NOTICES, sender):
        return None
    try:
        text = (spool.read_text(RELAY, NOTICES, sender) or "")[:400]
        spool.remove(RELAY, NOTICES, sender)
    except OSError:
        return None
    name, _, why = text.strip().partition(" ")
    return (
        f"your message {_text(name, 80)} did not reach other hosts: the relay set it aside ({_text(why, 300)}); "
        "attend doctor lists what was set aside"
    )


def aside_summary(spool: Spool) -> tuple[int, str]:
    """(records set aside, the newest line of relay/aside.log) for doctor and relay --check."""
    try:
        count = len(spool.names(RELAY, layout.OUTBOX, layout.ASIDE))
        log = spool.read(RELAY, ASIDE_LOG, limit=1 << 16).decode("utf-8", "replace")
    except OSError:
        return 0, ""
    lines = [line for line in log.splitlines() if line.strip()]
    return count, _text(lines[-1], 300) if lines else ""
