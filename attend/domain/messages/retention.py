"""Retention: remove what the policy says is old, never what a live session has not yet seen.

What goes (docs/architecture/spool.md, "Bounded growth"; the policy: docs/architecture/channels.md):
- tmp files older than 36 hours, in rooms and sessions (readers never look in tmp/);
- the spool of a session that is no longer live, once its last activity is older than the grace
  period: its maildir and state, its channel memberships, its project index entry (registry slots
  are left to the registry's own GC);
- room records older than the age limit, or beyond the newest N of their room;
- a live session's seen entries (cur/) by the same age and its own count limit, and a human's
  (``humans/<user>/cur/``) by the same rule;
- an unpinned channel with no members once none of its history is younger than the age limit
  (a channel that never held a message included), the room of a channel that no longer exists,
  and old quarantined files.

Never removed: new/ or claimed/ of a live session or of a human (an unseen delivery). A room record's removal
leaves a delivery intact: the session's link keeps the file. Freed bytes count only files whose last
link goes (spool.remove_path).

Memory is flat in the number of records: each folder is streamed with scandir, names sort by time
so the age cutoff is a string compare (no stat), and the count limit keeps a heap of at most N
names: a name pushed out of it is older than N others, so it can go at once.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from attend import safejson
from attend.domain.core import rooms
from attend.domain.messages import channels
from attend.domain.sessions import sessions
from attend.domain.sessions.liveness import Liveness
from attend.domain.settings import config
from attend.domain.settings.config import Config
from attend.layout import (
    CUR,
    HUMANS,
    NAME_RE,
    PRESENCE,
    QUARANTINE,
    REAPING,
    RETAINED_TOPS,
    STALE_TMP_SECONDS,
    cutoff_name,
    is_user_name,
)
from attend.spool import Entry, Folder, RefusedEntry, Spool

ORPHAN_GRACE = 90.0  # seconds: a channel room with no channel is left alone this long (a join may be under way)
REMOVE_BATCH = 4096  # removals sorted by inode at a time (bounded memory)
ITEM_LIMIT = 1000  # items a report lists; the totals count everything


@dataclass(frozen=True)
class Policy:
    max_age: float  # seconds
    max_per_room: int
    max_seen_per_session: int
    session_grace: float  # seconds

    @classmethod
    def from_config(cls, cfg: Config) -> Policy:
        return cls(
            max_age=float(cfg.get("retention.max_age_days")) * 86400,
            max_per_room=int(cfg.get("retention.max_per_room")),
            max_seen_per_session=int(cfg.get("retention.max_seen_per_session")),
            session_grace=float(cfg.get("retention.session_grace_hours")) * 3600,
        )

    @classmethod
    def default(cls) -> Policy:
        return cls.from_config(config.defaults())

        return cls.from_config(config.defaults())


@dataclass
class Item:
    path: str
    bytes: int
    reason: str


@dataclass
class Tally:
    files: int = 0
    bytes: int = 0


@dataclass
class Report:
    dry_run: bool
    examined: int = 0
    files: int = 0
    bytes: int = 0  # real run: freed (last links only); dry run: the sizes of what would go
    by_reason: dict[str, Tally] = field(default_factory=dict)
    sessions: list[str] = field(default_factory=list)  # sessions whose spool went
    channels: list[str] = field(default_factory=list)  # channels removed: emptied by a reaped member, or idle
    items: list[Item] = field(default_factory=list)  # the first ITEM_LIMIT things removed (or to remove)
    complete: bool = True  # a bounded sweep stopped before the end of its round
    refused: list[str] = field(default_factory=list)  # planted entries left alone, one line each
    skipped: bool = False  # another cleanup held the lock, or a whole round ran within the pace


class Cleaner:
    """One cleanup pass over a spool; ``run_unit`` does one folder's worth so passes can be bounded."""

    def __init__(
        self,
        spool: Spool,
        policy: Policy,
        now: float,
        dry_run: bool,
        is_live: Callable[[str], bool],
        budget: int | None = None,
    ) -> None:
        self.spool = spool
        self.policy = policy
        self.now = now
        self.dry_run = dry_run
        self.is_live = is_live
        self.budget = budget
        self.report = Report(dry_run)
        self.age_cut = cutoff_name(now - policy.max_age)

    # -------------------------------------------------------------- bookkeeping

    def exhausted(self) -> bool:
        return self.budget is not None and self.report.examined >= self.budget

    def remove(self, folder: Folder, name: str, reason: str) -> None:
        self.count(folder, name, reason, folder.size(name) if self.dry_run else folder.remove(name))

    def remove_batch(self, folder: Folder, batch: list[tuple[int, str, str]]) -> None:
        """(inode, name, reason) triples, removed in inode order: records are created in time order,
        so this walks the inode table in order instead of in the directory's hash order."""
        batch.sort()
        if self.dry_run:
            for _ino, name, reason in batch:
                self.remove(folder, name, reason)
            return
        freed = folder.remove_many([name for _ino, name, _reason in batch])
        for (_ino, name, reason), size in zip(batch, freed, strict=True):
            self.count(folder, name, reason, size)

    def count(self, folder: Folder, name: str, reason: str, size: int | None) -> None:
        if size is None:
            return
        r = self.report
        r.files += 1
        r.bytes += size
        tally = r.by_reason.setdefault(reason, Tally())
        tally.files += 1
        tally.bytes += size
        if len(r.items) < ITEM_LIMIT:
            r.items.append(Item(folder.path(name), size, reason))

    def refuse(self, e: RefusedEntry) -> None:
        if str(e) not in self.report.refused:  # one planted entry, one line, however many units meet it
            self.report.refused.append(str(e))

    # -------------------------------------------------------------- units

    def units(self) -> list[str]:
        """Every unit of work, in the order a full run takes them: sessions before rooms, so a
        reaped session's links are gone before the room records they shared are weighed, and
        rooms before channels, so a channel is judged on the history its room has left. Channels
        are walked on their own: one that never held a message has no room to walk."""
        out = ["tmp", "quarantine"]
        out += [f"session:{s}" for s in self.spool.names("sessions")]
        out += [f"human:{u}" for u in self.spool.names(HUMANS) if is_user_name(u)]
        out += [f"room:{r}" for r in self.spool.rooms()]
        out += [f"channel:{c}" for c in channels.names(self.spool)]
        return out

    def run_unit(self, unit: str) -> None:
        kind, _, key = unit.partition(":")
        try:
            if kind == "tmp":
                self.tmp()
            elif kind == "quarantine":
                self.quarantine()
            elif kind == "session":
                self.session(key)
            elif kind == "human":
                # A human's mailbox is never reaped (a human does not end), but what it has read ages
                # out as a live session's does: its links alone kept every message to it for ever.
                self.trim((HUMANS, key, CUR), self.policy.max_seen_per_session, "seen-age", "seen-count")
            elif kind == "room":
                self.room(key)
            elif kind == "channel":
                self.idle_channel(key)
        except RefusedEntry as e:  # something planted in the spool: never followed, reported once a pass
            self.refuse(e)

    @contextlib.contextmanager
    def opened(self, *parts: str) -> Iterator[Folder | None]:
        """A verified folder of the spool, or None when it is absent or planted (a symlink, a file)."""
        try:
            folder = self.spool.folder(*parts)
        except FileNotFoundError:
            yield None
            return
        except RefusedEntry as e:
            self.refuse(e)
            yield None
            return
        with folder:
            yield folder

    # -------------------------------------------------------------- the work

    def tmp(self) -> None:
        cutoff = self.now - STALE_TMP_SECONDS
        for top in RETAINED_TOPS:
            for owner in self.spool.names(top):
                with self.opened(top, owner, "tmp") as folder:
                    if folder is None:
                        continue
                    for entry in folder.scan(mtimes=True):
                        if self.exhausted():
                            self.report.complete = False
                            return
                        self.report.examined += 1
                        if entry.mtime < cutoff and not entry.is_dir:
                            self.remove(folder, entry.name, "tmp")

    def quarantine(self) -> None:
        """Old files set aside, and old peer-event claims (each a few bytes, one per session start or end)."""
        cutoff = self.now - self.policy.max_age
        for top in (QUARANTINE, PRESENCE):
            with self.opened(top) as folder:
                if folder is None:
                    continue
                for entry in folder.scan(mtimes=True):
                    self.report.examined += 1
                    if entry.mtime < cutoff and not entry.is_dir:
                        self.remove(folder, entry.name, top)

    def trim(self, parts: tuple[str, ...], keep: int, age_reason: str, count_reason: str) -> None:
        """Remove names older than the age cutoff, and all but the newest ``keep``; streamed."""
        heap: list[tuple[str, int]] = []
        batch: list[tuple[int, str, str]] = []  # removals go in bounded batches (flat memory)
        with self.opened(*parts) as folder:
            if folder is None:
                return

            def flush() -> None:
                self.remove_batch(folder, batch)
                batch.clear()

            for entry in folder.scan():
                name = entry.name
                if not NAME_RE.match(name):
                    continue  # a tmp dotfile, or a foreign name: not ours to judge
                self.report.examined += 1
                if name < self.age_cut:
                    batch.append((entry.inode, name, age_reason))
                elif len(heap) < keep:
                    heapq.heappush(heap, (name, entry.inode))
                else:
                    old, ino = heapq.heappushpop(heap, (name, entry.inode))
                    batch.append((ino, old, count_reason))
                if len(batch) >= REMOVE_BATCH:
                    flush()
                if self.exhausted():
                    self.report.complete = False
                    break
            flush()

    def room(self, room: str) -> None:
        if room.startswith("@") and not channels.exists(self.spool, room[1:]):
            self.orphan_room(room)
            return
        self.trim(("rooms", room, "new"), self.policy.max_per_room, "room-age", "room-count")

    def idle_channel(self, name: str) -> None:
        """A channel left empty keeps its history (leave deletes none); once retention has taken the
        last of it, or when it never had any, the empty unpinned channel goes too."""
        self.report.examined += 1
        if not channels.exists(self.spool, name):
            return  # gone since the units were listed (dissolved, or emptied by a reaping)
        if any(n >= self.age_cut for n in self.spool.room_entries(rooms.channel_room(name))):
            return  # history younger than the age limit stays (a dry run has removed nothing yet)
        info = channels.info(self.spool, name)
        if info.pinned or info.members:
            return
        if self.dry_run or channels.remove_if_empty(self.spool, name):
            self.report.channels.append(name)

    def orphan_room(self, room: str) -> None:
        """The history of a channel that no longer exists (a crash between its two removals)."""
        newest = max(
            (t for t in (self.spool.mtime("rooms", room), self.spool.mtime("rooms", room, "new")) if t), default=0.0
        )
        if self.now - newest < ORPHAN_GRACE:
            return
        with self.spool.named_lock(f"channel.{room[1:]}"):
            if channels.exists(self.spool, room[1:]):
                return
            with self.opened("rooms", room) as folder:
                if folder is None or not self.remove_files(folder, "orphan-room"):
                    return
            if not self.dry_run:
                self.spool.remove_tree("rooms", room)

    def remove_files(self, folder: Folder, reason: str, keep: str = "") -> bool:
        """Remove every file below ``folder`` but ``keep`` (folders stay); False when the budget ran
        out first. Subfolders are opened from the folder's handle, so a symlink inside is removed
        itself, never descended into.

        Streamed, so memory stays flat however many files a folder holds: a real run takes at most
        REMOVE_BATCH names per listing and lists again (what it removed is gone); a dry run removes
        nothing, so it handles each entry as the listing yields it.
        """
        while True:
            batch: list[Entry] = []
            for entry in folder.scan():
                if entry.name == keep:
                    continue
                if self.dry_run:
                    if not self._remove_one(folder, entry, reason):
                        return False
                    continue
                batch.append(entry)
                if len(batch) >= REMOVE_BATCH:
                    break
            if self.dry_run:
                return True
            files = [e for e in batch if not e.is_dir]
            allowed = len(files) if self.budget is None else max(0, self.budget - self.report.examined)
            self.report.examined += min(allowed, len(files))
            self.remove_batch(folder, [(e.inode, e.name, reason) for e in files[:allowed]])
            if allowed < len(files):
                self.report.complete = False
                return False
            for entry in batch:
                if entry.is_dir and not self._remove_one(folder, entry, reason):
                    return False
            if len(batch) < REMOVE_BATCH:
                return True

    def _remove_one(self, folder: Folder, entry: Entry, reason: str) -> bool:
        if entry.is_dir:
            try:
                sub = folder.child(entry.name)
            except FileNotFoundError:
                return True
            with sub:
                return self.remove_files(sub, reason)
        if self.exhausted():
            self.report.complete = False
            return False
        self.report.examined += 1
        self.remove(folder, entry.name, reason)
        return True

    def last_activity(self, sid: str) -> float:
        """The newest sign of the session's own doing. Not new/: senders link into it, so an ended
        session still enrolled in #open would look active for as long as anyone talks."""
        times = [self.spool.mtime("sessions", sid)]
        for part in ("cur", "claimed", "heartbeat", "enrolled", "moved-to", "notify"):
            times.append(self.spool.mtime("sessions", sid, part))
        return max((t for t in times if t is not None), default=0.0)

    def session(self, sid: str) -> None:
        if self.is_live(sid):
            self.trim(("sessions", sid, "cur"), self.policy.max_seen_per_session, "seen-age", "seen-count")
        elif (
            self.spool.exists("sessions", sid, REAPING)
            or self.now - self.last_activity(sid) >= self.policy.session_grace
        ):
            self.reap(sid)
        # An ended session within its grace period is left whole: trimming its cur/ would touch
        # the folder's mtime, which counts as its activity, and so put the reaping off again.

    def reap(self, sid: str) -> None:
        """Remove a dead session's spool: its deliveries (seen or not: no live session is owed them),
        its state, its memberships and its project index entry."""
        spool = self.spool
        enrollment = sessions.read_enrollment(spool, sid)
        if not self.dry_run:
            # Removing files touches the folders' mtimes, which read as the session's activity: the
            # marker lets a reaping that a bounded sweep cut short go on at the next pass.
            spool.touch("sessions", sid, REAPING)
        with self.opened("sessions", sid) as folder:
            if folder is None or not self.remove_files(folder, "session", keep=REAPING):
                return
        self.report.sessions.append(sid)
        if self.dry_run:
            return
        spool.remove_tree("sessions", sid)
        for name in channels.names(spool):
            if channels.remove_member(spool, name, sid) and channels.remove_if_empty(spool, name):
                self.report.channels.append(name)
        if enrollment is not None:
            spool.remove("projects", enrollment.project, sid)
        else:
            for key in spool.names("projects"):
                spool.remove("projects", key, sid)

    def forget_pointers(self) -> None:
        """by-claude pointers naming a reaped session (one small file per Claude process)."""
        if self.dry_run or not self.report.sessions:
            return
        gone = set(self.report.sessions)
        for name in self.spool.names("by-claude"):
            try:
                text = self.spool.read_text("by-claude", name)
            except OSError:
                continue
            if text is not None and text.strip() in gone:
                self.spool.remove("by-claude", name)


def run(
    spool: Spool,
    policy: Policy,
    *,
    dry_run: bool = False,
    now: float | None = None,
    is_live: Callable[[str], bool] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Report:
    """A full cleanup (``attend cleanup``): every unit, waiting for any sweep in progress."""
    cleaner = Cleaner(spool, policy, time.time() if now is None else now, dry_run, is_live or Liveness(spool))
    with spool.named_lock("cleanup"):
        units = cleaner.units()
        for done, unit in enumerate(units, 1):
            cleaner.run_unit(unit)
            if progress:
                progress(done, len(units))
        cleaner.forget_pointers()
    return cleaner.report


def sweep(
    spool: Spool,
    budget: int | None = None,
    *,
    policy: Policy | None = None,
    now: float | None = None,
    is_live: Callable[[str], bool] | None = None,
    pace: float = 0.0,
) -> Report:
    """One bounded pass for the sensor loop: picks up after the unit the last pass reached, stops
    once ``budget`` entries were examined, and skips (returns at once) while another cleanup runs.
    With ``pace``, it also skips when any loop finished a whole round within the last ``pace``
    seconds: the loops of a machine share one sweep per interval, not one each.

    A room larger than the budget is trimmed only in part by a pass (what it examined); a full
    ``attend cleanup`` handles any size.
    """
    if budget is None:  # the one default: config's sensor.cleanup_budget
        budget = int(config.defaults().get("sensor.cleanup_budget"))
    cleaner = Cleaner(
        spool,
        policy or Policy.default(),
        time.time() if now is None else now,
        False,
        is_live or Liveness(spool),
        budget,
    )
    with spool.named_lock("cleanup", wait=False) as held:
        if not held:
            cleaner.report.skipped = True
            cleaner.report.complete = False
            return cleaner.report
        text = spool.read_text("state", "sweep.json")
        try:
            start_after = str(safejson.loads(text).get("after", "")) if text else ""
        except (ValueError, AttributeError):
            start_after = ""
        swept = spool.mtime("state", "sweep.json")
        if pace and text and not start_after and swept is not None and 0 <= cleaner.now - swept < pace:
            cleaner.report.skipped = True
            return cleaner.report
        units = sorted(cleaner.units())
        ordered = [u for u in units if u > start_after] + [u for u in units if u <= start_after]
        last = ""
        for unit in ordered:
            cleaner.run_unit(unit)
            last = unit
            if cleaner.exhausted():
                cleaner.report.complete = False
                break
        cleaner.forget_pointers()
        # An interrupted round restarts after the last unit it finished, so every unit gets its turn.
        spool.write_state(
            json.dumps({"after": last if not cleaner.report.complete else ""}).encode(), "state", "sweep.json"
        )
    return cleaner.report
