"""Sending and repair: the record goes into its room first, then links fan out to recipients.

A send is durable once the room record and the room's new/ are fsynced (spool.publish). The fan-out
links that follow are fast; a sender killed midway leaves recipients short, and ``repair`` (run by
the sensor loop and `attend doctor`) links what each session should have and lacks. Its cursor
trails the clock by the link bound that publishing enforces (docs/architecture/spool.md, "The repair
bound"), so no record lands below it.
"""

from __future__ import annotations

# bisect is imported where it is used: the send path never needs it.
import time

from attend.domain.core import envelope, outcomes
from attend.domain.core.envelope import EnvelopeError, Signal
from attend.domain.sessions import humans, sessions
from attend.errors import SpoolError
from attend.layout import LINK_BOUND, RELAY, RELAY_ON, cutoff_name, name_time, unique_name
from attend.spool import LateName, Spool, pause_point

REPAIR_BUDGET = 2000  # records examined per room per pass, so a huge backlog never stalls a loop
QUIET_NS = 1_000_000_000  # a room's new/ unchanged this long before it is read: any later change moves its mtime
PUBLISH_TRIES = 3  # fresh names a send takes before it reports the spool too slow


Shown = list[tuple[str, Signal]]  # (name, parsed signal) of deliveries about to be shown


class Fanout:
    """Whom one send was linked to: sessions by id, humans by user name (each once); and, by the
    recipients' inbound rules, the sessions it was held for or refused by, and those of a direct room
    not enrolled yet (its room keeps it for them)."""

    __slots__ = ("held", "humans", "refused", "sessions", "waiting")

    def __init__(self) -> None:
        self.sessions: list[str] = []
        self.humans: list[str] = []
        self.held: list[str] = []
        self.refused: list[str] = []
        self.waiting: list[str] = []

    def __len__(self) -> int:
        return len(self.sessions) + len(self.humans)


class Plan:
    """Who receives one message in each room of this host, by their inbound rules, read before it is
    written: so a message that every recipient refuses is written nowhere."""

    __slots__ = ("rules", "states", "waiting")

    def __init__(self) -> None:
        self.rules: dict[str, dict[str, str]] = {}  # room -> {sid: accept | hold | refuse}
        self.waiting: dict[str, str] = {}  # direct room -> the session it addresses, not enrolled yet
        self.states: dict[str, outcomes.State] = {}  # sid -> what its outcome is decided by, read once

    def takers(self, room: str) -> bool:
        """Whether the room's copy is taken: by a session that accepts or holds it, by one not enrolled
        yet (the room keeps it for its enrollment), or by the room alone (no recipient: as every send
        to nobody is kept). Only every recipient refusing leaves it untaken."""
        decided = self.rules.get(room, {})
        return room in self.waiting or not decided or any(r != outcomes.REFUSE for r in decided.values())


def plan(spool: Spool, sig: Signal, room_list: list[str], states: dict[str, outcomes.State] | None = None) -> Plan:
    """Each local session room's recipients (the sender aside) with what its rule does with ``sig``;
    ``states``: the rule files already read (by an earlier plan of the same send), read again for none."""
    out = Plan()
    if states is not None:
        out.states = states
    klass = outcomes.sender_class(sig.from_kind, sig.from_id, sig.via)
    for room in room_list:
        if "@" in room[1:] or room.startswith("h-"):
            continue  # another host's (its relay decides there), or a human's (a human's mail is never held)
        sids = [sid for sid in sessions.recipients(spool, room) if sid != sig.from_id]
        for sid in sids:
            if sid not in out.states:
                out.states[sid] = outcomes.state(spool, sid)
        out.rules[room] = {sid: out.states[sid].rule()[klass] for sid in sids}
        if room.startswith("d-") and not sids:
            target = sessions.moved_to(spool, room[2:])
            if target != sig.from_id:
                out.waiting[room] = target
    return out


def crosses_hosts(spool: Spool, room_list: list[str]) -> bool:
    """Whether a record for these rooms also goes to the relay's outbox: a relay serves this spool
    (``relay/enabled``, one stat) and a room reaches other hosts (#open, a channel, or a session or
    human of another host, whose rooms carry ``@<host>``). Project rooms and presence stay local."""
    remote = any(room == "open" or room.startswith("@") or "@" in room for room in room_list)
    return remote and spool.exists(RELAY, RELAY_ON)


def publish(spool: Spool, sig: Signal, room_list: list[str]) -> Signal:
    """Name ``sig`` and publish it into each room within the link bound (layout.LINK_BOUND), taking a
    fresh name when a stall (a loaded disk, a stopped process) kept a link from landing in time."""
    outbox = crosses_hosts(spool, room_list)
    if outbox:  # named under the spool's host, whatever this process's environment says
        from attend.domain.messages import remote

        remote.adopt(spool)
    for _ in range(PUBLISH_TRIES):
        name = unique_name()
        named = sig.with_id(name, name_time(name))
        try:
            spool.publish(room_list, envelope.render(named), name, bounded=True, outbox=outbox)
            return named
        except LateName as e:
            spool.log(f"send: {e}; publishing again under a fresh name")
    raise SpoolError(
        f"the spool at {spool.root} is too slow: {PUBLISH_TRIES} tries to write a message each took over "
        f"{LINK_BOUND:g}s; nothing was sent"
    )


def send(spool: Spool, sig: Signal, room_list: list[str], rules: Plan | None = None) -> tuple[Signal, Fanout]:
    """Publish ``sig`` into each room, then link it into every enrolled recipient but the sender (as its
    inbound rule says), and into the mailbox of a human it is addressed to."""
    if sig.re and not sig.ancestors:
        sig = sig._replace(ancestors=thread_above(spool, sig.re, room_list))
    sig = publish(spool, sig, room_list)
    return sig, fan_out(spool, sig, room_list, rules)


def fan_out(spool: Spool, sig: Signal, room_list: list[str], rules: Plan | None = None) -> Fanout:
    """Link a published record into every enrolled recipient of its rooms but the sender, and into the
    mailbox of a human it is addressed to. A room of another host (``…@<host>``) has none here. Each
    session's inbound rule (``rules``, read now when not given) links it into new/, into held/, or
    not at all."""
    name = sig.id
    linked = Fanout()
    # The recipients are read again now that the record is durable, whatever a plan before it said
    # (record first, then fan-out): a session that enrolls meanwhile finds the record in its catch-up,
    # or is among these. Only the rule files already read are not read again.
    rules = plan(spool, sig, room_list, None if rules is None else rules.states)
    linked.waiting = list(rules.waiting.values())
    for room in room_list:
        if "@" in room[1:]:
            continue  # a session or human of another host: the relay carries it
        if room.startswith("h-"):
            try:
                linked.humans += humans.deliver(spool, room, name, sig.from_id)
            except OSError as e:  # durable already; the human's next read repairs it
                spool.log(f"send {name}: not linked into the mailbox of {room[2:]}: {e}")
            continue
        decided = rules.rules.get(room, {})
        linked.refused += [sid for sid, rule in decided.items() if rule == outcomes.REFUSE]
        for held in (False, True):
            want = outcomes.HOLD if held else outcomes.ACCEPT
            recipients = [sid for sid, rule in decided.items() if rule == want]
            for sid, outcome in spool.link_deliveries(room, name, recipients, held) if recipients else ():
                if isinstance(outcome, OSError):
                    # The record is durable already; one broken recipient (a planted symlink, a folder
                    # reaped mid-send) must not fail the send or starve the others.
                    spool.log(f"send {name}: not linked into {sid}: {outcome}")
                elif outcome:
                    (linked.held if held else linked.sessions).append(sid)
                    pause_point("fanout-partial")
    return linked


def thread_above(spool: Spool, parent: str, near: list[str]) -> tuple[str, ...]:
    """The ids above a reply's parent, oldest first: the parent's own References (a version 1 parent
    gives its Re), so a mail reader threads the reply even where the parent is missing, as in the
    replier's maildir. The rooms the reply goes to are tried first; a parent gone (retention) gives ()."""
    rooms = near + [r for r in spool.rooms() if r not in near]
    for room in rooms:
        try:
            headers, _ = envelope.parse_headers(spool.read_record(room, parent, 4096))
        except FileNotFoundError:
            continue
        except (OSError, EnvelopeError):
            return ()
        refs = [n for r in headers.get("References", "").split() if (n := envelope.name_of(r))]
        if not refs and headers.get("Re"):
            refs = [headers["Re"]]
        return tuple(refs)
    return ()


class RepairMemo:
    """What one process's repair passes remember between passes, so a pass costs in proportion to
    what changed:

    - ``stamps``: each room whose new/ was last read whole, every record in it examined and passed
      by the cursor, with that folder's mtime then. A room whose mtime is still that one is skipped.
    - ``held``: for a room whose arrivals the caller is told of (an inotify watch on its new/, in
      place before the pass that listed it), the names the cursor has not passed yet. The next pass
      examines those and the arrivals only, never the room's whole listing."""

    __slots__ = ("held", "retry_in", "settled", "stamps")

    def __init__(self) -> None:
        self.stamps: dict[str, int] = {}
        self.held: dict[str, set[str]] = {}
        self.settled = True  # after the last pass: every room was skipped or stamped
        self.retry_in = 0.0  # when not settled: seconds until a pass could stamp every room


Arrivals = dict[str, set[str] | None]  # room -> names linked into its new/ since the last pass (None: not known)


def repair(
    spool: Spool,
    sid: str,
    budget: int = REPAIR_BUDGET,
    memo: RepairMemo | None = None,
    arrivals: Arrivals | None = None,
    rooms: list[str] | None = None,
) -> int:
    """Link records newer than this session's per-room cursor that it should have and lacks.

    The cursor trails the clock by the link bound: a name older than ``LINK_BOUND`` when the room was
    listed was either in that listing or will never appear (Spool.publish withdraws a later link), so
    only such names are passed; younger ones are looked at again on the next pass.

    With a ``memo``, a room is skipped on one ``stat`` while its new/ has not changed since a pass
    read it whole and passed all of it. Its mtime is trusted only when it was already ``QUIET_NS``
    old at that reading: a link in the same clock tick as the listing would not move it, a later one
    must (the clock reading comes first, so such a link is stamped after it).

    With ``arrivals`` as well (the caller watches the rooms: what was linked into each since its last
    take, None where that is not known), a room listed once is never listed again: a pass examines
    the names it held back and the new arrivals. A broadcast into a room of 20,000 records then costs
    each loop the one record, not the 20,000. ``rooms``: the rooms to cover, if the caller has them."""
    cursors = sessions.read_cursors(spool, sid)
    linked = 0
    changed = False
    if memo is not None:
        memo.settled, memo.retry_in = True, 0.0
    for room in sessions.repair_rooms(spool, sid) if rooms is None else rooms:
        now_ns = time.time_ns()
        settled = cutoff_name(now_ns / 1e9 - LINK_BOUND)  # read before the listing it vouches for
        cursor = cursors.get(room)
        watched = memo is not None and arrivals is not None and room in arrivals
        arrived = arrivals.get(room) if watched and arrivals is not None else None
        if memo is not None and room in memo.held and arrived is not None and cursor is not None:
            held = memo.held[room]
            held |= arrived  # before any step that may raise: nothing told is forgotten
            names = sorted(n for n in held if n > cursor)
            examined = names[:budget]
            passed, count = _examine(spool, sid, room, examined, settled)
            linked += count
            if passed:
                cursors[room] = passed
                changed = True
            memo.held[room] = {n for n in names if n > (passed or cursor)}
            if memo.held[room]:
                memo.settled = False
                wait = 0.0 if len(names) > budget else name_time(max(memo.held[room])) + LINK_BOUND - now_ns / 1e9
                memo.retry_in = max(memo.retry_in, wait, QUIET_NS / 1e9)
            continue
        if memo is not None:
            memo.held.pop(room, None)
        stamp = spool.mtime_ns("rooms", room, "new") if memo is not None else None
        if memo is not None and stamp is not None and memo.stamps.get(room) == stamp and not watched:
            continue
        names = spool.room_names(room)
        if not names:
            if watched and memo is not None and cursor is not None:
                memo.held[room] = set()
            continue
        if cursor is None:
            # A room this session never caught up on: start from now rather than replay history, less
            # the bound, so a record still being linked under an earlier name is not passed over.
            cursors[room] = min(names[-1], settled)
            changed = True
            if memo is not None:
                if watched:
                    memo.held[room] = {n for n in names if n > cursors[room]}
                memo.settled = False
                memo.retry_in = max(memo.retry_in, name_time(names[-1]) + LINK_BOUND - now_ns / 1e9)
            continue
        import bisect

        start = bisect.bisect_right(names, cursor)
        if memo is not None:
            memo.stamps.pop(room, None)  # until the names below are examined (a step may raise)
        examined = names[start : start + budget]
        passed, count = _examine(spool, sid, room, examined, settled)
        linked += count
        if passed:
            cursors[room] = passed
            changed = True
        if memo is not None:
            whole = start + budget >= len(names) and names[-1] < settled
            if watched:
                # From here the watch tells what arrives: the next pass needs only what is held back.
                memo.held[room] = {n for n in names[start:] if n > (passed or cursor)}
            if stamp is not None and whole and stamp < now_ns - QUIET_NS:
                memo.stamps[room] = stamp
            elif not watched or memo.held[room]:
                memo.settled = False
                # The newest record passes the bound then, and the folder's mtime is a second old.
                wait = 0.0 if start + budget < len(names) else name_time(names[-1]) + LINK_BOUND - now_ns / 1e9
                memo.retry_in = max(memo.retry_in, wait, QUIET_NS / 1e9)
    if changed:
        sessions.write_cursors(spool, sid, cursors)
    return linked


def _examine(spool: Spool, sid: str, room: str, names: list[str], settled: str) -> tuple[str | None, int]:
    """Link each of ``names`` (sorted, all above the room's cursor) that the session lacks and should
    have; returns the newest of them old enough for the cursor to pass (None: none), and how many
    were linked."""
    passed, linked = None, 0
    for name in names:
        if name < settled:
            passed = name
        if spool.has_delivery(sid, name):
            continue
        try:
            headers, _ = envelope.parse_headers(spool.read_record(room, name, 4096))
        except (OSError, EnvelopeError):
            continue
        if headers.get("From-Id") == sid:
            continue
        linked += outcomes.link_owed(spool, sid, room, name, headers)
    return passed, linked


def read_claimed(
    spool: Spool, sid: str, names: list[str], limit: int = 1 << 20
) -> tuple[list[tuple[str, Signal]], list[str]]:
    """The claimed deliveries ``names``, parsed for showing, in order; and a warning for each one set
    aside into quarantine/ because it could not be read (never shown, never lost). One folder handle
    for the batch: a drain may show a thousand at a turn end."""
    shown: Shown = []
    warnings: list[str] = []
    if not names:
        return shown, warnings
    with spool.folder("sessions", sid, "claimed") as folder:
        for name in names:
            try:
                shown.append((name, envelope.parse(folder.read(name, limit))))
            except FileNotFoundError:
                continue
            except (OSError, EnvelopeError) as e:
                warnings.append(f"set aside unreadable delivery {name}: {e}")
                folder.set_aside(name)
    return shown, warnings


def peek(spool: Spool, sid: str, names: list[str], limit: int = 1 << 17) -> tuple[list[Signal], list[str]]:
    """The pending deliveries ``names`` in new/, parsed without claiming them (a conduit that must
    decide what to take first, under the show lock); and the names that could not be read, which
    the claim path then sets aside."""
    signals: list[Signal] = []
    bad: list[str] = []
    if not names:
        return signals, bad
    with spool.folder("sessions", sid, "new") as folder:
        for name in names:
            try:
                signals.append(envelope.parse(folder.read(name, limit)))
            except FileNotFoundError:
                continue
            except (OSError, EnvelopeError):
                bad.append(name)
    return signals, bad
