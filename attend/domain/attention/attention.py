"""Attention: what of the pending mail a conduit puts in front of a model, in what order, and how much.

Every byte a conduit shows costs the receiving session money and context, so the drain, the Monitor
loop and the idle waiter share three rules (docs/architecture/conduits.md, "Attention"):

- **Party first.** Pending mail is grouped by thread (its root: the oldest id it names, else its own).
  Threads the session takes part in (mail addressed to it or its project, replies to what it sent)
  come first; channel and ``#open`` traffic after.
- **A governor per receiving session**, as the original's message lane: per sender, the first
  ``BURST`` lines a minute go through as they come; after that a line at most every ``COOLDOWN``
  seconds, and never more than ``LIMIT`` a ``WINDOW``. A sender beyond that is *folding*: its pending
  messages show as one digest line. Nothing is lost: a digest claims and marks seen exactly the
  messages it counts, and ``inbox`` lists them all. A fold is noted in the sender's own folder, so its
  ``send`` can tell it to slow down (backpressure).
- **Mutes.** A muted peer, channel or project still reaches the maildir and ``inbox``; the conduits
  mark its messages seen without showing them, so it never wakes the session.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field

from attend import safejson
from attend.domain.core import rooms
from attend.domain.core.envelope import Signal
from attend.errors import AttendError
from attend.layout import FOLDED_BY, is_session_id
from attend.spool import Spool

BURST = 5  # lines per sender per window that go through without a cooldown
COOLDOWN = 3.0  # seconds between a folding sender's lines
LIMIT = 30  # lines per sender per window, at most
WINDOW = 60.0
LIMIT_KEPT = 1000  # line times kept per sender: more than any limit a config may set needs
GOVERNOR = "governor"  # sessions/<sid>/governor: per sender, the times of its recent lines
FOLD_FRESH = WINDOW  # a fold older than this no longer counts against the sender
MUTES = "mutes"  # sessions/<sid>/mutes: {"peer:<id>" | "room:<room>" | "project:<path>": {until, label}}

Party = Callable[[Signal], bool]


# ---------------------------------------------------------------------- threads


def thread_of(sig: Signal) -> str:
    """The id of the thread's root: the oldest id the message names above itself, else its own."""
    return sig.ancestors[0] if sig.ancestors else sig.re or sig.id


@dataclass
class Thread:
    root: str
    party: bool
    signals: list[Signal] = field(default_factory=list)

    @property
    def senders(self) -> list[str]:
        return list(dict.fromkeys(s.sender for s in self.signals))


def threads(signals: Iterable[Signal], party: Party) -> list[Thread]:
    """The signals grouped by thread, in send order within each; threads the session takes part in
    first, each group ordered by its oldest pending message."""
    by_root: dict[str, Thread] = {}
    for sig in sorted(signals, key=lambda s: s.id):
        t = by_root.setdefault(thread_of(sig), Thread(thread_of(sig), False))
        t.signals.append(sig)
        t.party = t.party or party(sig)
    ordered = list(by_root.values())
    return [t for t in ordered if t.party] + [t for t in ordered if not t.party]


def party_of(spool: Spool, me: str, origin: str) -> Party:
    """Whether a message is in a conversation the session ``me`` takes part in: addressed to it or its
    project, or below a message it sent (its parent or an ancestor; one read per id, cached)."""
    from attend.domain.attention.trailer import Reader  # the reply check the trailer already makes

    reader = Reader(spool, me)
    addressed = {rooms.direct_room(me), rooms.project_room(origin)}

    def party(sig: Signal) -> bool:
        if sig.room in addressed:
            return True
        return any(reader.parent_is_mine(sig.room, above) for above in (sig.re, *sig.ancestors) if above)

    return party


# ---------------------------------------------------------------------- the governor


@dataclass(frozen=True)
class Rules:
    burst: int = BURST
    cooldown: float = COOLDOWN
    limit: int = LIMIT

    @classmethod
    def of(cls, cfg: object) -> Rules:
        """From a ``config.Config`` (its ``governor.*`` keys)."""
        get = cfg.get  # type: ignore[attr-defined]
        return cls(
            int(get("governor.sender.burst")),
            float(get("governor.sender.cooldown")),
            int(get("governor.sender.max_per_minute")),
        )


@dataclass
class Governor:
    """One receiving session's per-sender line times. Loaded and saved under the show lock."""

    spool: Spool
    sid: str
    lines: dict[str, list[float]]
    now: float
    rules: Rules = field(default_factory=Rules)

    @classmethod
    def load(cls, spool: Spool, sid: str, rules: Rules | None = None, now: float | None = None) -> Governor:
        """The session's governor; ``rules`` from the loop's config, else those it last saved (the
        drain reads no config: yaml stays off its import path), else the defaults."""
        now = time.time() if now is None else now
        lines: dict[str, list[float]] = {}
        try:
            raw = safejson.loads(spool.read_text("sessions", sid, GOVERNOR) or "{}")
        except (OSError, ValueError, AttendError):
            raw = {}  # a lost or torn governor forgets a minute of history; nothing else depends on it
        raw = raw if isinstance(raw, dict) else {}
        times = raw.get("lines")
        for sender, at in (times if isinstance(times, dict) else {}).items():
            if isinstance(sender, str) and isinstance(at, list):
                kept = [float(t) for t in at if isinstance(t, int | float) and now - WINDOW < t <= now + 1]
                if kept:
                    lines[sender] = kept[-LIMIT_KEPT:]
        if rules is None:
            saved = raw.get("rules")
            try:
                rules = Rules(**saved) if isinstance(saved, dict) else Rules()
            except TypeError:
                rules = Rules()
        return cls(spool, sid, lines, now, rules)

    def recent(self, sender: str) -> list[float]:
        return [t for t in self.lines.get(sender, []) if self.now - t < WINDOW]

    def folding(self, sender: str) -> bool:
        """Past its burst: its messages fold into one line until it calms down."""
        return len(self.recent(sender)) >= self.rules.burst

    def next_at(self, sender: str) -> float:
        """The earliest time the sender may have another line (``now`` when it may now)."""
        recent = self.recent(sender)
        at = self.now
        if len(recent) >= self.rules.burst:
            at = max(at, recent[-1] + self.rules.cooldown)
        if len(recent) >= self.rules.limit:
            at = max(at, recent[-self.rules.limit] + WINDOW)
        return at

    def allows(self, sender: str) -> bool:
        return self.next_at(sender) <= self.now

    def record(self, sender: str) -> None:
        self.lines.setdefault(sender, []).append(self.now)

    def save(self) -> None:
        lines = {s: t[-self.rules.limit :] for s in self.lines if (t := self.recent(s))}
        data = {"rules": asdict(self.rules), "lines": lines}
        # In place: read only under the show lock, as written (a torn file forgets a minute, see load).
        self.spool.rewrite_state(json.dumps(data).encode(), "sessions", self.sid, GOVERNOR)

    def note_fold(self, sender: str) -> None:
        """Tell a session sender it is being folded here (its send warns it); best effort."""
        if sender == self.sid or not is_session_id(sender) or not self.spool.exists("sessions", sender):
            return
        with contextlib.suppress(OSError, AttendError):
            self.spool.touch("sessions", sender, FOLDED_BY, self.sid)


def folded_by(spool: Spool, sid: str, now: float | None = None) -> int:
    """How many sessions folded this sender's messages within the last minute."""
    now = time.time() if now is None else now
    try:
        names = spool.names("sessions", sid, FOLDED_BY)
    except (OSError, AttendError):
        return 0
    fresh = (spool.mtime("sessions", sid, FOLDED_BY, n) for n in names)
    return sum(1 for m in fresh if m is not None and now - m < FOLD_FRESH)


def backpressure(spool: Spool, sid: str, recipients: int) -> str | None:
    """The sender's warning when most of the sessions it reaches fold its messages."""
    n = folded_by(spool, sid)
    if n and n * 2 >= max(recipients, 1):
        return f"your messages are being folded by {n} session(s); slow down"
    return None


# ---------------------------------------------------------------------- mutes


@dataclass(frozen=True)
class Mute:
    key: str  # "peer:<id>", "room:<room>" or "project:<path>"
    until: float | None  # epoch seconds; None: until unmuted
    label: str = ""  # as the caller named it (a display name, #channel, a path)


def mutes(spool: Spool, sid: str, now: float | None = None) -> list[Mute]:
    """The mutes in force (expired ones are dropped as they are read)."""
    now = time.time() if now is None else now
    try:
        raw = safejson.loads(spool.read_text("sessions", sid, MUTES) or "{}")
    except (OSError, ValueError, AttendError):
        return []
    if not isinstance(raw, dict):
        return []
    out = []
    for key, entry in raw.items():
        if not isinstance(key, str) or not isinstance(entry, dict):
            continue
        until, label = entry.get("until"), entry.get("label")
        if until is None or (isinstance(until, int | float) and until > now):
            out.append(Mute(key, None if until is None else float(until), label if isinstance(label, str) else key))
    return sorted(out, key=lambda m: m.key)


def save_mutes(spool: Spool, sid: str, items: list[Mute]) -> None:
    data = {m.key: {"until": m.until, "label": m.label} for m in items}
    spool.write_state(json.dumps(data, sort_keys=True).encode(), "sessions", sid, MUTES)


def muted(items: list[Mute]) -> Callable[[Signal], bool]:
    keys = {m.key for m in items}

    def test(sig: Signal) -> bool:
        return bool(keys) and bool(
            {f"peer:{sig.from_id}", f"room:{sig.room}", f"project:{sig.origin.rstrip('/') or '/'}"} & keys
        )

    return test


# ---------------------------------------------------------------------- one Monitor pass


@dataclass
class Line:
    """One line a conduit may show: one message, or a folding sender's pending messages."""

    signals: list[Signal]
    fold: bool
    party: bool

    @property
    def sender(self) -> str:
        return self.signals[0].from_id


@dataclass
class Plan:
    lines: list[Line]  # party lines first, then by their oldest message
    silent: list[str]  # muted: marked seen, never shown
    wake_at: float | None  # when a sender the governor holds may have its next line
    burst: bool = False  # too much at once for a line each: one digest line for all the lines' messages


def plan(
    signals: list[Signal], party: Party, governor: Governor, mute: Callable[[Signal], bool], burst: bool = False
) -> Plan:
    """What one Monitor pass may show of ``signals`` (pending, in send order): per sender, its oldest
    message while it is within its burst, all it has pending as one fold line once past it (after the
    cooldown); a sender still cooling down is held, its messages left pending. In a ``burst`` (more
    pending than a line each), every sender the governor allows gives all it has to one digest."""
    silent = [s.id for s in signals if mute(s)]
    by_sender: dict[str, list[Signal]] = {}
    for sig in signals:
        if sig.id not in silent:
            by_sender.setdefault(sig.from_id, []).append(sig)
    lines: list[Line] = []
    wake: float | None = None
    for sender, sigs in by_sender.items():
        if not governor.allows(sender):
            at = governor.next_at(sender)
            wake = at if wake is None else min(wake, at)
        elif burst or (governor.folding(sender) and len(sigs) > 1):
            lines.append(Line(sigs, len(sigs) > 1, any(map(party, sigs))))
        else:
            lines.append(Line(sigs[:1], False, party(sigs[0])))
    lines.sort(key=lambda ln: (not ln.party, ln.signals[0].id))
    return Plan(lines, silent, wake, burst)
