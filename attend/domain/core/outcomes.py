"""Outcomes: what became of a message for each recipient, decided where it is written; and the inbound
rule that decides part of it (docs/architecture/outcomes.md).

The closed set, per recipient:

- ``delivered``: linked, and the recipient is live now;
- ``parked``: linked (or kept in its direct room until it enrolls), the recipient is not running; it waits;
- ``held``: the recipient's inbound rule holds it: linked into ``held/``, which no conduit lists,
  until the recipient (or the human) accepts or declines it;
- ``refused``: the recipient's inbound rule refuses this sender's class; not linked;
- ``muted``: linked, but the recipient mutes this sender, its channel or its project: it never shows;
- ``throttled``: linked, but the recipient's governor folds this sender's lines now: it shows in a
  digest once the sender slows.

The inbound rule is a session's own, per sender class: ``local`` (sessions of this host), ``humans``
(this host's humans) and ``hosts`` (anything relayed from another host). It is stored as
``sessions/<sid>/inbound``, one ``<class> <rule>`` a line; a class not named takes the project
overlay's default (``inbound-default``, written at enrollment), else ``accept``. A file that cannot be
read or parsed reads as ``hold`` for every class: never as ``accept``.

Here on the send path: the standard library only (no dataclasses, typing or re; docs/architecture/overview.md),
and one read per recipient of what it decides by.
"""

from __future__ import annotations

import time

from attend import safejson
from attend.errors import AttendError
from attend.layout import FOLDED_BY, INBOUND, INBOUND_DEFAULT, SESSIONS
from attend.spool import Spool

DELIVERED, PARKED, HELD, REFUSED, MUTED, THROTTLED = "delivered", "parked", "held", "refused", "muted", "throttled"
OUTCOMES = (DELIVERED, PARKED, HELD, REFUSED, MUTED, THROTTLED)
CLASSES = ("local", "humans", "hosts")  # who sent it: a session of this host, a human of it, another host
CLASS_LABELS = {"local": "this host's sessions", "humans": "this host's humans", "hosts": "other hosts"}
ACCEPT, HOLD, REFUSE = "accept", "hold", "refuse"
RULES = (ACCEPT, HOLD, REFUSE)
RULE_LIMIT = 4096  # bytes of a rule file read at most
FOLD_FRESH = 60.0  # seconds a fold counts against its sender (attention.FOLD_FRESH)
UNREVIEWED_AFTER = 86400.0  # a held message waiting longer than this is marked unreviewed (it stays)


def sender_class(from_kind: str, from_id: str, via: str | None = None) -> str:
    """The class of a message's sender for the inbound rule: relayed from another host, a human, or a
    session of this host."""
    if via or "@" in from_id:
        return "hosts"
    return "humans" if from_kind == "human" else "local"


def parse_rule(text: str) -> dict[str, str] | None:
    """``<class> <rule>`` lines (blank lines and ``#`` comments aside) as {class: rule}; None when any
    line is not one of them (the caller reads that as hold)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2 or parts[0] not in CLASSES or parts[1] not in RULES:
            return None
        out[parts[0]] = parts[1]
    return out


def render_rule(rule: dict[str, str]) -> bytes:
    return "".join(f"{c} {rule[c]}\n" for c in CLASSES if c in rule).encode()


MUTES = "mutes"  # sessions/<sid>/mutes (attention.MUTES): what the session mutes
MUTES_LIMIT = 1 << 16
UNREADABLE = None  # a file there that is not one this reads: the rule reads as hold
FILES = ((INBOUND, RULE_LIMIT), (INBOUND_DEFAULT, RULE_LIMIT), (MUTES, MUTES_LIMIT))  # what State holds, in order


class State:
    """What a send decides a recipient's outcome by, read through one handle on its folder: its own
    rule, its project's default, and its mutes (each ``b""`` when absent, None when unreadable)."""

    __slots__ = ("default", "mutes", "own")

    def __init__(self, own: bytes | None, default: bytes | None, mutes: bytes | None) -> None:
        self.own, self.default, self.mutes = own, default, mutes

    def rule(self) -> dict[str, str]:
        """The rule for every class: its own where it names one, else the project's default, else
        accept; an unreadable file of either reads as hold."""
        own = _parsed(self.own)
        if own is None:
            return dict.fromkeys(CLASSES, HOLD)
        if len(own) == len(CLASSES):
            return own
        default = _parsed(self.default)
        if default is None:
            default = dict.fromkeys(CLASSES, HOLD)
        return {c: own.get(c) or default.get(c) or ACCEPT for c in CLASSES}

    def mute_keys(self, now: float) -> set[str]:
        """The mutes in force, as keys (``peer:<id>``, ``room:<room>``, ``project:<path>``)."""
        if not self.mutes:
            return set()
        try:
            raw = safejson.loads(self.mutes)
        except ValueError:
            return set()
        if not isinstance(raw, dict):
            return set()
        out = set()
        for key, entry in raw.items():
            until = entry.get("until") if isinstance(entry, dict) else None
            if isinstance(key, str) and (until is None or (isinstance(until, int | float) and until > now)):
                out.add(key)
        return out


def _parsed(data: bytes | None) -> dict[str, str] | None:
    if data is None:
        return None
    try:
        return parse_rule(data.decode("utf-8"))
    except UnicodeDecodeError:
        return None


def state(spool: Spool, sid: str) -> State:
    """The session's rule files and mutes, read through one handle on its folder."""
    got: list[bytes | None] = [b"", b"", b""]
    try:
        with spool.folder(SESSIONS, sid) as folder:
            for i, (name, limit) in enumerate(
                ((INBOUND, RULE_LIMIT), (INBOUND_DEFAULT, RULE_LIMIT), (MUTES, MUTES_LIMIT))
            ):
                try:
                    got[i] = folder.read(name, limit)
                except FileNotFoundError:
                    continue
                except (OSError, AttendError):
                    got[i] = UNREADABLE
    except FileNotFoundError:
        pass
    except (OSError, AttendError):  # its folder planted over: nothing of it can be read
        got = [UNREADABLE, UNREADABLE, b""]
    return State(*got)


def rule_of(spool: Spool, sid: str) -> dict[str, str]:
    """The session's rule for every class (State.rule)."""
    return state(spool, sid).rule()


def decide(spool: Spool, sid: str, klass: str) -> str:
    """accept, hold or refuse: what the session's rule does with a message of sender class ``klass``."""
    return rule_of(spool, sid)[klass]


def own_rule(spool: Spool, sid: str) -> dict[str, str] | None:
    """The session's own rule file as written ({} absent, None unreadable)."""
    return _parsed(state(spool, sid).own)


def folding(spool: Spool, sender: str, now: float) -> set[str]:
    """The sessions whose governor folded ``sender``'s lines within the last minute (each fold is noted
    in the sender's own folder): what it sends them now is throttled."""
    try:
        names = spool.entries(SESSIONS, sender, FOLDED_BY)
    except (OSError, AttendError):
        return set()
    out = set()
    for name in names:
        at = spool.mtime(SESSIONS, sender, FOLDED_BY, name)
        if at is not None and now - at < FOLD_FRESH:
            out.add(name)
    return out


class Judge:
    """The outcomes of one message for the sessions of this host, read once per recipient."""

    __slots__ = ("folds", "from_id", "klass", "now", "origin")

    def __init__(self, spool: Spool, from_kind: str, from_id: str, origin: str, via: str | None = None) -> None:
        self.klass = sender_class(from_kind, from_id, via)
        self.from_id = from_id
        self.origin = origin
        self.now = time.time()
        self.folds: set[str] | None = None
        if self.klass == "local" and spool.exists(SESSIONS, from_id, FOLDED_BY):
            self.folds = folding(spool, from_id, self.now)

    def shown(self, sid: str, room: str, live: bool, read: State) -> str:
        """The outcome of a linked (accepted) delivery: muted, throttled, delivered or parked."""
        keys = read.mute_keys(self.now)
        muted = {f"peer:{self.from_id}", f"room:{room}", f"project:{self.origin.rstrip('/') or '/'}"}
        if keys and keys & muted:
            return MUTED
        if self.folds and sid in self.folds:
            return THROTTLED
        return DELIVERED if live else PARKED


def link_owed(spool: Spool, sid: str, room: str, name: str, headers: dict[str, str]) -> bool:
    """Link a record a session is owed (the repair pass, the cold-start rule) as its rule says: into
    new/, into held/, or not at all. Whether it was linked."""
    klass = sender_class(headers.get("From-Kind", ""), headers.get("From-Id", ""), headers.get("Relayed-From"))
    rule = decide(spool, sid, klass)
    if rule == REFUSE:
        return False
    return spool.link_delivery(sid, room, name, held=rule == HOLD)


NAMED_AT_MOST = 3  # names given per outcome in a summary; more are counted


def summary(rows: tuple[tuple[str, str, str, str], ...] | list[tuple[str, str, str, str]]) -> str:
    """One phrase for a send's recipients: counts by outcome in the set's order, each outcome but
    ``delivered`` naming its first few recipients: ``3 recipients: 1 delivered, 1 parked (Kim), 1 held (Uma)``."""
    noun = "recipient" if len(rows) == 1 else "recipients"
    if not rows:
        return f"0 {noun}"
    parts = []
    for outcome in OUTCOMES:
        names = [r[0] for r in rows if r[3] == outcome]
        if not names:
            continue
        part = f"{len(names)} {outcome}"
        if outcome != DELIVERED:
            more = len(names) - NAMED_AT_MOST
            part += f" ({', '.join(names[:NAMED_AT_MOST])}{f' +{more}' if more > 0 else ''})"
        parts.append(part)
    return f"{len(rows)} {noun}: {', '.join(parts)}"


def brief(rows: tuple[tuple[str, str, str, str], ...] | list[tuple[str, str, str, str]]) -> str:
    """The shortest honest form, for a model: each recipient's name and outcome when there are up to
    three (``Tao delivered, Uma held``), else the summary."""
    if 0 < len(rows) <= NAMED_AT_MOST:  # in the set's order, then by name: the same send reads the same
        order = sorted(rows, key=lambda r: (OUTCOMES.index(r[3]) if r[3] in OUTCOMES else len(OUTCOMES), r[0]))
        return ", ".join(f"{r[0]} {r[3]}" for r in order)
    return summary(rows)
