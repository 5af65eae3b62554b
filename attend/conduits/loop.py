"""The sensor loop, ``attend run``: launched by the agent under Claude Code's Monitor tool, it prints
one stdout line per event, which wakes an idle session.

Order matters at start-up: the duplicate-run lock first (a second loop changes nothing), then
enrollment (which applies the cold-start rule), then repair, banner, the cold-start note, and
anything a killed conduit left in ``claimed/``.

Each delivery is claimed by rename (new/ -> claimed/), printed and flushed, then renamed into cur/
as seen, all under the session's show lock, so the loop and the drain never both show a message
and whoever holds the lock may show what a dead conduit abandoned in ``claimed/``. The loop sleeps
in an inotify read until an event or its next timer, never in a busy poll. Idle, it wakes once per
``TICK``: every periodic timer falls on one grid, its Claude process's end comes as an event (a pidfd),
and the machine's re-check of every session record is made by one loop a minute, not by each.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType

from attend import identity
from attend.conduits import monitor
from attend.conduits.sensors import host as sensor_host
from attend.conduits.watch import ARRIVALS, CHANGES, WAKE, Watcher
from attend.domain.attention import attention
from attend.domain.core import rooms
from attend.domain.core.envelope import Signal
from attend.domain.messages import delivery, inbound, presence
from attend.domain.sessions import liveness, mcp_markers, sessions
from attend.domain.sessions.context import Context
from attend.errors import AttendError, IdentityError, NotASessionError
from attend.identity import Identity
from attend.layout import LINK_BOUND
from attend.spool import Spool

TYPE_CHECKING = False  # typing only for mypy: ~0.6 MB in each of a hundred idle loops
if TYPE_CHECKING:
    from typing import IO, Any

PACE = 0.2  # seconds between message lines: Claude Code suppresses a flood of Monitor events
HOUSEKEEPING = 5.0  # how soon pending mail that could not be shown is looked at again
SHOW_WAIT = 0.5  # seconds the loop waits for the show lock; a holder stuck longer is left until a later look
# An idle loop wakes only for its timers, and they share one wake per TICK (a grid from the loop's
# start): a hundred loops on a box must cost next to nothing. Repair is incremental (a stat per
# unchanged room), and comes sooner, off the grid, while a room has records the cursor has not yet
# passed (younger than the link bound) or mail came in.
TICK = 30.0
REPAIR_EVERY = 30.0
REPAIR_SOON = 5.0  # the longest a pass waits while a room has records its cursor has not passed
HEARTBEAT_EVERY = 30.0  # the heartbeat is fresh for 90 s
LIVENESS_EVERY = 60.0  # a peer pid that died without removing its record is noticed this late
REVIVE_SETTLE = 1.0  # seconds between noticing the spool was deleted and making it again
# The loop's own Claude process: a pidfd wakes the loop when it ends, so an orphaned loop (its Claude
# killed, no record removal to wake it) stops at once. Without pidfds it is looked at this often.
CLAUDE_EVERY = HEARTBEAT_EVERY
SLACK = 2.0  # a timer due this soon runs with the one due now: one wake, not several
ROOM = "room:"  # the watcher's tag of a room repair covers: room:<room>
BANNER = "banner"  # per session: the fingerprint of the last banner printed
REPLY_HINT = "reply-hint"  # per session: present once the reply hint has been shown


class _Stop(Exception):
    """SIGTERM or SIGINT arrived while the loop slept."""


class RunLock:
    """The duplicate-run lock: an exclusive, non-blocking flock on ``sessions/<sid>/run.lock``
    (``sessions.run_is_live`` probes the same file), held for the life of the loop. Never unlinked:
    that would split holders."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    @classmethod
    def take(cls, spool: Spool, sid: str) -> RunLock | None:
        fd = spool.hold("sessions", sid, "run.lock")
        return None if fd is None else cls(fd)

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@dataclass
class Sensor:
    ctx: Context
    write: Callable[[str], None]
    warn: Callable[[str], None]
    who: Identity
    lock: RunLock
    watcher: Watcher = field(default_factory=Watcher)
    stopping: bool = False
    waiting: bool = False
    last_line: float = 0.0
    retry_at: float = 0.0  # pending mail that could not be shown is not a reason to wake before this
    failing: dict[str, str] = field(default_factory=dict)  # step -> the cause last reported
    refused: set[str] = field(default_factory=set)  # planted entries the sweep last left alone
    due: dict[str, float] = field(default_factory=dict)
    peers: presence.PeerWatch | None = None
    reviving: bool = False  # the spool was deleted and is not yet made again (see _revive)
    relock: bool = False  # the run lock held is on a deleted file
    senses: sensor_host.Host | None = None  # the other sensors (attend/conduits/sensors): context, keepwarm, scripts
    memo: delivery.RepairMemo = field(default_factory=delivery.RepairMemo)
    rules: attention.Rules = field(default_factory=attention.Rules)
    base: float = field(default_factory=time.monotonic)  # the origin of the timers' grid
    claude_fd: int | None = None  # a pidfd of the Claude process served: readable once it ends
    more: bool | None = None  # what the last delivery left pending in new/ (None: not known, list it)
    room_tags: set[str] = field(default_factory=set)  # the rooms watched for repair, as watcher tags

    @property
    def spool(self) -> Spool:
        return self.ctx.spool

    @property
    def sid(self) -> str:
        return self.who.id

    # ---------------------------------------------------------------- start-up

    def start(self) -> None:
        inbound.note_default(self.spool, self.sid, self.who.origin, self.ctx.env)  # before the cold start links
        sessions.enroll(self.spool, self.who, "run")
        sessions.touch_heartbeat(self.spool, self.sid)
        self._watch_own()
        self.peers = presence.PeerWatch(self.spool, self.ctx.sessions_dir)
        self.peers.baseline()
        self._watch_presence()
        list(presence.read_new(self.spool, self.sid))  # first run: start the cursor at now
        self._safe(self._repair, "repair")
        self._banner()
        note = sessions.take_notice(self.spool, self.sid)
        if note:
            self.write(monitor.note_line(note))
        if self.watcher.fallback_reason:
            self.warn(f"attend: {self.watcher.fallback_reason}")
        self._load_config()
        now = time.monotonic()
        self.base = now
        self.due = {
            "repair": self._repair_due(),
            "heartbeat": self._on_grid(now + HEARTBEAT_EVERY),
            "liveness": self._on_grid(now + LIVENESS_EVERY),
            "claude": self._watch_claude(),
            "revive": float("inf"),
            "cleanup": now if self.cleanup_every else float("inf"),
        }
        self._start_senses()
        if not self._safe(lambda: self.deliver(recover=True), "delivery"):
            self._back_off()

    def _watch_own(self) -> None:
        self.spool.make_maildir(self.sid)
        self.watcher.add("new", self.spool.path("sessions", self.sid, "new"), ARRIVALS)

    def _watch_presence(self) -> None:
        self.spool.make_room(presence.ROOM)
        self.watcher.add("presence", self.spool.path("rooms", presence.ROOM, "new"), ARRIVALS)
        # Claude Code's records (absent is fine), by name: a peer's start, end or status change costs
        # this loop one record read.
        self.watcher.add("records", self.ctx.sessions_dir, CHANGES, named=True)

    def _watch_claude(self) -> float:
        """Open a pidfd of the Claude process served; returns when to look at that process next: never
        on a timer when the pidfd will say, now when it has ended already, else on the grid."""
        pid = self.who.claude_pid
        if pid is None:
            return float("inf")
        try:
            self.claude_fd = os.pidfd_open(pid)
        except ProcessLookupError:
            return time.monotonic()
        except (OSError, AttributeError):  # no pidfds here (an old kernel, a sandbox)
            return self._on_grid(time.monotonic() + CLAUDE_EVERY)
        # Opened after identity read the pid: a process that ended in between, its pid reused, would
        # pin the wrong one. The start time says.
        return time.monotonic() if not liveness.claude_running(pid, self.who.proc_start) else float("inf")

    def _on_grid(self, at: float) -> float:
        """``at`` moved on to the loop's grid (a tick every TICK seconds from its start, less the slack)
        when it is a tick or more away: every idle timer then shares one wake."""
        if at - time.monotonic() < TICK - SLACK or at == float("inf"):
            return at
        ticks = -(-(at - SLACK - self.base) // TICK)
        return self.base + ticks * TICK

    def _banner(self) -> None:
        display = sessions.display_name(self.spool, self.who)
        labels = [rooms.scope(r) for r in sessions.receive_rooms(self.spool, self.sid)]
        mcp = mcp_markers.mcp_live(self.spool, self.sid)
        text = monitor.banner(display, monitor.project_name(self.who.origin), labels, mcp)
        if self.spool.read_text("sessions", self.sid, BANNER) == text:
            self.write(monitor.RESTARTED)
            return
        self.write(text)
        self.spool.write_state(text.encode(), "sessions", self.sid, BANNER)

    # ---------------------------------------------------------------- the loop

    def loop(self) -> None:
        while not self.stopping:
            tags = self._sleep()
            if self.stopping:
                return
            self._safe(self._revive, "recreating the spool")
            if self.stopping:
                return
            if WAKE in tags:
                self._claude_ended()
            if any(tag.startswith(ROOM) for tag in tags):
                # A record reached a room this session receives: if its link here does not follow
                # (its sender was killed mid-fan-out), the pass after the bound links it.
                self.due["repair"] = min(self.due["repair"], time.monotonic() + LINK_BOUND + SLACK)
                if tags <= self.room_tags:
                    continue  # nothing else to look at: the record's own link wakes the delivery
            if "records" in tags or not self.watcher.watching("records"):
                self._safe(self.follow_clear, "the /clear move")  # a /clear rewrites the record
            if "records" in tags:  # a peer's record published now comes back as a "presence" event
                self._safe(self._update_peers, "presence")
            if "new" in tags:  # mail came in: a sender's fan-out may have left others short; one
                # pass once its record is past the link bound examines it and settles the room
                self.due["repair"] = min(self.due["repair"], time.monotonic() + LINK_BOUND + SLACK)
            self.more = None
            if not self._safe(functools.partial(self.deliver, hinted="new" in tags), "delivery"):
                self._back_off()
            self.housekeeping()
            if "presence" in tags:
                self._safe(self._show_presence, "presence")

    def _sleep(self) -> set[str]:
        """Sleep in the inotify read until an event or the next housekeeping; while paced lines are
        pending, sleep out the pace instead (events during it only say what re-listing will find)."""
        now = time.monotonic()
        try:
            # What the delivery just left pending, as it listed it under the show lock; anything
            # since is an event, which ends the wait at once.
            pending = now >= self.retry_at and (
                self.more if self.more is not None else bool(self.spool.listing(self.sid, "new"))
            )
        except (OSError, AttendError):
            pending = False  # new/ unreadable (a planted symlink, say): the delivery step reports it, once
        pace_left = self.last_line + PACE - now
        self.waiting = True
        try:
            if self.stopping:
                return set()
            if pending and pace_left > 0:
                time.sleep(pace_left)
                return self.watcher.wait(0, wake=self.claude_fd)
            if pending:
                return self.watcher.wait(0, wake=self.claude_fd)
            timeout = min(self.due.values()) - now if self.due else HOUSEKEEPING
            if self.retry_at > now:  # the governor holds a sender, or mail could not be shown, until then
                timeout = min(timeout, self.retry_at - now)
            tags = self.watcher.wait(max(0.0, timeout), wake=self.claude_fd)
            if self.watcher.lost:
                # A watched folder was removed: whatever removes it (`rm -rf ~/.cache`, a /clear move)
                # is likely still at work. Writing now would race it, so let it finish first.
                self.watcher.lost.clear()
                time.sleep(REVIVE_SETTLE)
            return tags
        except _Stop:
            return set()
        finally:
            self.waiting = False

    def deliver(self, recover: bool = False, hinted: bool = False) -> bool:
        """Show what is pending: one line per pace slot (a message, or a folding sender's digest), or
        one digest line for a burst from many senders. False when it did not try (nothing pending,
        pacing, the governor holding every sender, another conduit mid-show): not a success that
        clears a reported failure. ``hinted``: an event said new/ changed, so it is listed only once,
        under the show lock."""
        now = time.monotonic()
        if not recover and (now - self.last_line < PACE or now < self.retry_at):
            return False  # the next wake shows it, or folds it into a digest
        if not recover and not hinted and not self.spool.listing(self.sid, "new"):
            self.more = False
            return False
        with self.spool.show_lock(self.sid, timeout=SHOW_WAIT) as held:
            if not held:
                # Another conduit is mid-show, or stopped there: it shows these. Waiting for it without
                # bound would hang the loop, deaf even to SIGTERM; look again later instead.
                self._back_off()
                return False
            abandoned = self.spool.listing(self.sid, "claimed") if recover else []
            pending = self.spool.listing(self.sid, "new")
            plan, take, governor = self._plan(pending, len(abandoned) + len(pending) > monitor.DIGEST_OVER)
            won = self._claim(take, pending) if take else []
            names = abandoned + won
            self.more = len(pending) > len(won)
            if not names:
                if take:
                    self._stuck()  # there was something to claim and none of it could be
                return not pending
            self.retry_at = 0.0
            shown = self._read(names)
            # Recorded before the line goes out: a model that reads the line and replies at once
            # threads to it (after the print, that reply could find the previous message, or none).
            # Muted mail is marked seen unshown: a reply with no id must not thread to it.
            self._record_inbound([s for name, s in shown if name not in plan.silent])
            self._show(shown, plan, set(abandoned), set(won))
            if plan.lines:
                # After the line, still under the show lock: it is a state file's replace (on ext4 a
                # writeback of the new file), which a hundred loops woken at once queue for. The line
                # is out: a save that fails forgets a minute of pacing (reported once), and must not
                # keep the batch from being marked seen, or it would be shown again.
                self._safe(governor.save, "governor")
            self.spool.mark_seen(self.sid, names)
        if shown:
            self.last_line = time.monotonic()
        return True

    def _plan(self, pending: list[str], burst: bool) -> tuple[attention.Plan, list[str], attention.Governor]:
        """What the governor lets this pass show of ``pending`` (docs/architecture/conduits.md,
        "Attention"), the names to claim for it (the lines' messages and the muted ones), and the
        governor, to save once the lines are out."""
        signals, unreadable = delivery.peek(self.spool, self.sid, pending)
        governor = attention.Governor.load(self.spool, self.sid, self.rules)
        party = attention.party_of(self.spool, self.sid, self.who.origin)
        mute = attention.muted(attention.mutes(self.spool, self.sid))
        plan = attention.plan(signals, party, governor, mute, burst)
        lines = plan.lines if burst else plan.lines[:1]
        for line in lines:
            governor.record(line.sender)
            if line.fold:
                governor.note_fold(line.sender)
        if plan.wake_at is not None and not lines:
            # Every sender pending is cooling down: nothing to wake for before the first may speak.
            self.retry_at = time.monotonic() + max(0.0, plan.wake_at - governor.now)
        plan.lines = lines
        take = [s.id for line in lines for s in line.signals] + plan.silent + unreadable
        return plan, sorted(set(take) & set(pending)), governor

    def _show(self, shown: list[tuple[str, Signal]], plan: attention.Plan, abandoned: set[str], won: set[str]) -> None:
        """The lines for what was claimed: a digest for a burst, else each line of the plan, then
        whatever a dead conduit abandoned (already counted by the governor when it was claimed)."""
        by_id = {name: sig for name, sig in shown}
        silent = set(plan.silent)
        if plan.burst:
            visible = [sig for name, sig in shown if name not in silent]
            party = {s.id for line in plan.lines if line.party for s in line.signals}
            if visible:
                self.write(monitor.digest_line(visible, party))
            return
        for line in plan.lines:
            sigs = [by_id[s.id] for s in line.signals if s.id in by_id and s.id in won]
            if line.fold and len(sigs) > 1:
                self.write(monitor.fold_line(sigs))
            elif sigs:
                self.write_message(sigs[0])
        for name, sig in shown:
            if name in abandoned and name not in silent:
                self.write_message(sig)

    def _claim(self, batch: list[str], pending: list[str]) -> list[str]:
        """Claim ``batch``: what this pass shows, no more (the rest stays pending for later lines)."""
        return self.spool.claim_all(self.sid, batch)

    def _stuck(self) -> None:
        """Entries sit in new/ and none could be claimed (claimed/ gone, say): remake the maildir and
        look again at the next housekeeping, rather than spin on a listing that never empties."""
        self._back_off()
        self.spool.make_maildir(self.sid)

    def _back_off(self) -> None:
        self.retry_at = time.monotonic() + HOUSEKEEPING

    def _read(self, names: list[str]) -> list[tuple[str, Signal]]:
        shown, warnings = delivery.read_claimed(self.spool, self.sid, names)
        for warning in warnings:
            self.warn(f"attend: {warning}")
        return shown

    def write_message(self, sig: Signal) -> None:
        hint = ""
        if not self.spool.exists("sessions", self.sid, REPLY_HINT):
            hint = monitor.reply_hint(mcp_markers.mcp_live(self.spool, self.sid))
            self.spool.create_exclusive(b"", "sessions", self.sid, REPLY_HINT)
        for line in monitor.message_lines(sig, hint):
            self.write(line)

    def _record_inbound(self, shown: list[Signal]) -> None:
        others = [s.id for s in shown if s.from_id != self.sid]
        if others:
            sessions.set_last_inbound(self.spool, self.sid, max(others))
            if (senses := self.senses) is not None:
                self._safe(lambda: senses.observe("message"), "sensors")
                self.due["sensors"] = min(self.due["sensors"], senses.next_due())  # a sensor may speak now

    # ---------------------------------------------------------------- presence

    def _scan_peers(self) -> None:
        if self.peers is not None:
            self.peers.scan()

    def _update_peers(self) -> None:
        """The records inotify named (all of them after an overflow): did a peer start or end?"""
        if self.peers is not None:
            names = self.watcher.take_names("records")
            if names is None:
                self.peers.scan()
            else:
                self.peers.update(names)

    def _check_peers(self) -> None:
        """The re-check for peers that died without removing their record: one loop of the machine
        makes it each LIVENESS_EVERY; any peer it finds gone reaches every loop as a presence record."""
        if self.peers is not None and presence.check_turn(self.spool, LIVENESS_EVERY - SLACK):
            self.peers.scan()

    def _show_presence(self) -> None:
        for ev in list(presence.read_new(self.spool, self.sid)):
            if ev.sid == self.sid:
                continue
            same = ev.origin == self.who.origin
            self.write(monitor.presence_line(ev.event, ev.display, ev.origin, same))

    # ---------------------------------------------------------------- housekeeping

    def housekeeping(self) -> None:
        now = time.monotonic()
        if now + SLACK < min(self.due.values()):
            return
        at = now + SLACK
        if at >= self.due["claude"]:
            self._orphaned()
            self.due["claude"] = self._on_grid(now + CLAUDE_EVERY) if self.claude_fd is None else float("inf")
        if at >= self.due["heartbeat"]:
            self._safe(lambda: sessions.touch_heartbeat(self.spool, self.sid), "the heartbeat")
            self._safe(self.follow_clear, "the /clear move")  # should the records watch have missed it
            self.due["heartbeat"] = self._on_grid(now + HEARTBEAT_EVERY)
        if at >= self.due["repair"]:
            self._safe(self._repair, "repair")
            self._safe(self._recover, "recovery")
            self.due["repair"] = self._repair_due()
        if at >= self.due["liveness"]:
            if not self.watcher.watching("records"):  # Claude Code's folder was absent, or removed
                self.watcher.add("records", self.ctx.sessions_dir, CHANGES, named=True)
                self._safe(self._scan_peers, "presence")
            else:
                self._safe(self._check_peers, "presence")
            if not self.watcher.watching("presence"):
                self._safe(self._show_presence, "presence")
            self.due["liveness"] = self._on_grid(now + LIVENESS_EVERY)
        if at >= self.due["cleanup"]:
            self._safe(self._sweep, "cleanup")
            self.due["cleanup"] = self._on_grid(now + self.cleanup_every)
        if self.senses is not None and now >= self.due["sensors"]:
            self._safe(self.senses.tick, "sensors")
            self.due["sensors"] = self.senses.next_due()

    def _claude_ended(self) -> None:
        """The pidfd says the Claude process ended. It stays readable, so it is closed either way:
        should the process somehow still be there, the grid's look takes over."""
        fd, self.claude_fd = self.claude_fd, None
        if fd is not None:
            os.close(fd)
        self._orphaned()
        if not self.stopping:
            self.due["claude"] = self._on_grid(time.monotonic() + CLAUDE_EVERY)

    def _orphaned(self) -> None:
        """The Claude process this loop serves has ended (killed, crashed): nobody is left to wake, so
        stop rather than run on under pid 1. Its pid and start time are the ones identity resolved."""
        pid = self.who.claude_pid
        if pid is None or liveness.claude_running(pid, self.who.proc_start):
            return
        line = f"attend run: the Claude process of session {self.sid} (pid {pid}) has ended; stopping"
        self.warn(line)
        self.spool.log(line)
        self.stopping = True

    def _revive(self) -> None:
        """The spool was deleted under the loop (``rm -rf ~/.cache``): make it again, take the run lock
        afresh, re-enroll, and say so in one line; then delivery goes on as before."""
        now = time.monotonic()
        if self.spool.replaced():
            if not self.reviving:  # let the deletion finish first: writing now would race `rm -rf`
                self.due["revive"] = now + REVIVE_SETTLE
            self.reviving = self.relock = True
        if not self.reviving or now < self.due["revive"]:
            return
        self.due["revive"] = now + HOUSEKEEPING  # a revival that fails part-way (a full disk) is tried again
        if self.relock:
            lock = RunLock.take(self.spool, self.sid)  # this first write makes the spool again
            if lock is None:  # a newer loop for this session started on the new spool: it serves it
                self.write(f"[attend] the spool was recreated and another attend now serves session {self.sid}")
                self.stopping = True
                return
            self.lock.release()
            self.lock, self.relock = lock, False
        sessions.enroll(self.spool, self.who, "run")
        sessions.touch_heartbeat(self.spool, self.sid)
        self._watch_own()
        self._watch_presence()
        self.reviving, self.due["revive"] = False, float("inf")
        self.write(
            f"[attend] the spool {self.spool.root} was deleted; recreated it and re-enrolled this session "
            "(channels joined before are gone: attend join to rejoin them)"
        )

    def _repair(self) -> None:
        rooms = sessions.repair_rooms(self.spool, self.sid)
        delivery.repair(self.spool, self.sid, memo=self.memo, arrivals=self._arrivals(rooms), rooms=rooms)

    def _arrivals(self, rooms: list[str]) -> delivery.Arrivals:
        """Watch each room repair covers, by name, and take what each watch saw since the last pass:
        a pass then examines what arrived, not a room's whole history. A room that cannot be
        watched (absent yet) is listed, as is one whose watch is new or overflowed (None)."""
        wanted = {ROOM + room for room in rooms}
        for tag in self.room_tags - wanted:  # a channel left
            self.watcher.remove(tag)
        arrivals: delivery.Arrivals = {}
        for room in rooms:
            tag = ROOM + room
            if not self.watcher.watching(tag) and not self.watcher.add(
                tag, self.spool.path("rooms", room, "new"), ARRIVALS, named=True
            ):
                continue
            arrivals[room] = self.watcher.take_names(tag)
        self.room_tags = {ROOM + room for room in arrivals}
        return arrivals

    def _repair_due(self) -> float:
        """When the next repair pass is due: soon while a room is not settled, else on the grid."""
        now = time.monotonic()
        if self.memo.settled:
            return self._on_grid(now + REPAIR_EVERY)
        return now + min(max(self.memo.retry_in, 0.5), REPAIR_SOON)

    def _recover(self) -> None:
        """A conduit killed between claim and show left entries in claimed/: show them now, not at
        the next restart or turn end, which for an idle session may be far off."""
        if self.spool.listing(self.sid, "claimed"):
            self.deliver(recover=True)

    def _load_config(self) -> None:
        from attend.domain.settings import config

        self.config = config.load(self.ctx.env, self.who.origin)
        for warning in self.config.warnings():
            self.warn(f"attend: {warning}")
        self.cleanup_every = float(self.config.get("sensor.cleanup_interval"))
        self.rules = attention.Rules.of(self.config)

    def _start_senses(self) -> None:
        """The one integration point of the sensor host: built from config, ticked by housekeeping
        whenever its next poll or held line is due, told when a message was shown."""

        def session() -> sensor_host.Session:
            return sensor_host.Session(self.spool, self.who, self.ctx.env, self.config)

        self.senses = sensor_host.for_loop(self.config, self.ctx.env, session, self.write, self.warn, self._on_grid)
        self.due["sensors"] = self.senses.next_due()

    def _sweep(self) -> None:
        """The bounded retention pass (the same policy as `attend cleanup`), so a spool stays bounded."""
        from attend.domain.messages import retention

        report = retention.sweep(
            self.spool,
            budget=int(self.config.get("sensor.cleanup_budget")),
            policy=retention.Policy.from_config(self.config),
            pace=self.cleanup_every,  # one sweep per interval for all the loops of the machine
        )
        if report.files:
            self.spool.log(f"cleanup: removed {report.files} file(s), {report.bytes} bytes")
        for line in sorted(set(report.refused) - self.refused):  # each planted entry named once
            self.warn(f"attend run: cleanup left alone: {line}")
            self.spool.log(f"cleanup left alone: {line}")
        self.refused = set(report.refused)

    def _safe(self, step: Callable[[], Any], what: str) -> bool:
        """A step that fails is logged, never fatal: the loop must go on. A failure that repeats is
        reported once, not at every wake. Returns whether the step succeeded."""
        try:
            tried = step()
        except BrokenPipeError:
            raise  # Monitor is gone: nobody is left to read, so the loop ends
        except (OSError, ValueError, AttendError) as e:
            # Once per cause, not per text: one fault can name a different file (a tmp name, the next
            # delivery) at every try, and must still be reported once until the step succeeds.
            cause = f"{type(e).__name__}:{getattr(e, 'errno', None)}"
            if self.failing.get(what) != cause:
                self.failing[what] = cause
                line = f"attend run: {what} failed: {e}"
                self.warn(line)
                self.spool.log(line)
            return False
        if tried is not False:  # a step that did not get to its work has not recovered either
            self.failing.pop(what, None)
        return True

    # ---------------------------------------------------------------- /clear

    def follow_clear(self) -> None:
        """A new session id for the same Claude process: carry everything over, then go on."""
        pid = self.who.claude_pid
        if pid is None:
            return
        record = identity.read_record(self.ctx.sessions_dir, pid)
        if record is None or record.session_id == self.sid or record.proc_start != self.who.proc_start:
            return
        try:
            new = self.ctx.who()
        except IdentityError:
            return
        if new.id == self.sid or new.claude_pid != pid:
            return
        old = self.sid
        lock = RunLock.take(self.spool, new.id)
        if lock is None:
            self.write(f"[attend] another attend is already running for session {new.id}")
            self.stopping = True
            return
        sessions.move_session(self.spool, old, new)
        self.memo = delivery.RepairMemo()  # the stamps vouch for the old id's deliveries
        self.lock.release()
        self.lock = lock
        self.who = new
        sessions.touch_heartbeat(self.spool, new.id)
        self._watch_own()
        self.write(f"[attend] session id changed ({old} → {new.id}): enrollment, ordinal and messages carried over")

    # ---------------------------------------------------------------- signals

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True
        if self.waiting:
            raise _Stop


def run(ctx: Context, write: Callable[[str], None], warn: Callable[[str], None]) -> int:
    """Run until killed. Returns the exit code: 0 for a clean stop or a duplicate loop."""
    who = ctx.who()
    if not who.is_agent:
        raise NotASessionError(
            "attend run serves a Claude Code session and found none in its ancestry; "
            "arm it from a session with the Monitor tool (command: attend run)"
        )
    lock = RunLock.take(ctx.spool, who.id)
    if lock is None:
        write(f"another attend is already running for session {who.id}")
        return 0
    sensor = Sensor(ctx, write, warn, who, lock)
    previous = {s: signal.signal(s, sensor.on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        sensor.start()
        sensor.loop()
    except _Stop:
        pass
    except BrokenPipeError:
        pass  # Monitor is gone; nobody is left to read
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        sensor.watcher.close()
        if sensor.claude_fd is not None:
            os.close(sensor.claude_fd)
        if sensor.senses is not None:
            sensor.senses.close()  # a script sensor still running is killed with the loop
        sensor.lock.release()
    return 0


def stdout_writer(stream: IO[str] | None = None) -> Callable[[str], None]:
    out = stream or sys.stdout

    def write(line: str) -> None:
        out.write(line + "\n")
        out.flush()

    return write
