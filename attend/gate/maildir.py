"""Maildir records and folders: a room's records (publish, durable syncs, listings), and a session's or a
human's maildir (the links of a send's fan-out, the listings and claims of the conduits, seen, held).

Invariants kept here:
- a signal is written whole in a ``tmp/`` with O_EXCL, fsynced, then ``link()``ed into ``new/``
  (link fails on an existing name: nothing is overwritten); no reader looks in ``tmp/``;
- a send is durable once its room record and the room's ``new/`` are fsynced; recipient links are
  fast links that the repair pass restores after a crash;
- a name present anywhere in a session's maildir is never linked into it again; linkers and
  claimers of one session serialise on its delivery lock;
- a conduit claims with one rename new/ -> claimed/, and after showing renames into cur/ with ``:2,S``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import time

from attend import layout as L
from attend.errors import SpoolError
from attend.gate.locks import Locks
from attend.gate.opening import _DIR, _READ, RefusedEntry, _Handle, _listdir, _write_new, _writes

TYPE_CHECKING = False  # not typing's: its import would cost the drain's fast path a millisecond
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

SYNC_THREADS = 8  # fsyncs in flight at once in Spool.sync_files

# A test seam for crash windows: a process started with ATTEND_PAUSE_AT=<point>[,<point>…] stops
# itself (SIGSTOP) the first time it reaches each listed point, so a test can resume it (SIGCONT)
# or kill it at exactly that step. Read once; costs one set lookup.
_PAUSE_AT = {p for p in os.environ.get("ATTEND_PAUSE_AT", "").split(",") if p}


def pause_point(point: str) -> None:
    if point in _PAUSE_AT:
        import signal

        _PAUSE_AT.discard(point)
        os.kill(os.getpid(), signal.SIGSTOP)


class LateName(SpoolError):
    """A record that could not be linked within ``layout.LINK_BOUND`` of its name's time: nothing of
    it is left in the spool, and the sender publishes it again under a fresh name."""


class Maildir(Locks):
    """Rooms and maildirs (a part of ``Spool``, attend/spool.py)."""

    # ------------------------------------------------------------------ rooms

    @_writes
    def publish(
        self,
        rooms: list[str],
        data: bytes,
        name: str | None = None,
        *,
        bounded: bool = False,
        outbox: bool = False,
        sync: bool = True,
    ) -> str:
        """Deliver one signal into each room's new/ under one unique name; durable on return.

        ``bounded`` (every send): each link must return within ``LINK_BOUND`` of the name's time, as
        the clock read after it proves; otherwise every link of it is withdrawn and LateName raised,
        so no record stays below a repair cursor. Unbounded is for records planted with old names.
        ``outbox``: the record is also linked into the relay's ``relay/outbox/new/``, durable with the
        rest (the relay publishes it to other hosts). ``sync=False`` (the relay's arrivals) leaves the
        file and folder syncs to one ``sync_records`` call for a whole batch: durable only after it."""
        name = name or L.unique_name()
        deadline = L.name_time(name) + L.LINK_BOUND if bounded else float("inf")
        with contextlib.ExitStack() as stack:
            tmp = stack.enter_context(_Handle(self._room_dir(rooms[0], L.TMP)))
            news = [stack.enter_context(_Handle(self._room_dir(room, L.NEW))) for room in rooms]
            if outbox:
                news.append(stack.enter_context(_Handle(self._open_dir((L.RELAY, L.OUTBOX, L.NEW), create=True))))
            _write_new(tmp, name, data, sync=sync)
            linked: list[int] = []
            try:
                pause_point("tmp-written")
                for new in news:
                    if time.time() > deadline:  # too late already: do not link at all
                        raise LateName(f"{name} not linked within {L.LINK_BOUND:g}s of its time")
                    os.link(name, name, src_dir_fd=tmp, dst_dir_fd=new, follow_symlinks=False)
                    linked.append(new)
                    if time.time() > deadline:  # the link may have landed after a repair passed its name
                        raise LateName(f"{name} linked later than {L.LINK_BOUND:g}s after its time")
                for new in (linked[-1:] if len(linked) > 1 and self._one_commit() else linked) if sync else []:
                    os.fsync(new)
            except BaseException:
                for new in linked:
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=new)
                raise
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=tmp)
        pause_point("room-record")
        return name

    def sync_records(self, room: str, names: list[str]) -> None:
        """Make records published with ``sync=False`` durable: each file, then the room's new/ once. On a
        journaling filesystem the first sync commits the batch and the rest find nothing to write."""
        self.sync_files((L.ROOMS, room, L.NEW), names)

    def sync_files(self, parts: tuple[str, ...], names: list[str]) -> None:
        """Make files written without a sync (records, state files) durable: each file, then the folder
        once. The files' fsyncs go SYNC_THREADS at a time: on a disk without a journal each is its own
        trip to the device, and several in flight take little longer than one (64 files: about 0.3 s
        one by one, 20 ms eight at a time, on this machine's disk)."""
        with self._at(parts) as d:

            def one(name: str) -> None:
                fd = os.open(name, _READ, dir_fd=d)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)

            if len(names) < 2:
                for name in names:
                    one(name)
            else:
                from concurrent.futures import ThreadPoolExecutor  # only a batch of several starts threads

                with ThreadPoolExecutor(min(SYNC_THREADS, len(names))) as pool:
                    list(pool.map(one, names))  # the first failure is raised, once every fsync has ended
            os.fsync(d)

    def _one_commit(self) -> bool:
        """Whether one folder fsync makes every earlier link of this process durable: true on a
        filesystem whose metadata journal commits in order (ext4: one running transaction holds them
        all; xfs: forcing the log to the last link's LSN forces every earlier one). There, a send to
        50 rooms pays one journal commit and one disk flush, not 50. Elsewhere each folder is synced."""
        if self._ordered is None:
            self._ordered = _journal_orders_metadata(os.fstat(self._top_fd(L.ROOMS, True)).st_dev)
        return self._ordered

    def make_room(self, room: str) -> None:
        """A room as a whole maildir (tmp/, new/, cur/), so a mail reader opens it; attend itself uses
        only tmp/ and new/, and tolerates a room of an older spool that lacks cur/."""
        with self._at((L.ROOMS, room), create=True) as d:
            for sub in L.ROOM_MAILDIR:
                os.close(self._openat(d, sub, (L.ROOMS, room, sub), True))

    def _room_dir(self, room: str, sub: str) -> int:
        """A handle on a room's tmp/ or new/, making the room first when it is new: no extra call
        per send once the room exists."""
        try:
            return self._open_dir((L.ROOMS, room, sub))
        except FileNotFoundError:
            self.make_room(room)
            return self._open_dir((L.ROOMS, room, sub))

    def room_names(self, room: str) -> list[str]:
        """Unique names in a room, oldest first. Names only: never a stat per file."""
        return self.names(L.ROOMS, room, L.NEW)

    def room_entries(self, room: str) -> list[str]:
        """A room's new/ as listed, unsorted: for callers that want only the newest few."""
        return self.entries(L.ROOMS, room, L.NEW)

    def rooms(self) -> list[str]:
        return self.names(L.ROOMS)

    def room_stamps(self) -> dict[str, int]:
        """Each room's ``new/`` mtime (ns), by one listing and two stats per room relative to the rooms/
        handle (the search index's catch-up asks this at every query); 0 for a room whose ``new/`` is
        absent. A room that is not a folder (a planted link) is left out: never looked through."""
        try:
            top = self._top_fd(L.ROOMS, False)
        except FileNotFoundError:
            return {}
        out: dict[str, int] = {}
        for room in _listdir(top):
            if room.startswith("."):
                continue
            try:
                if not stat.S_ISDIR(os.stat(room, dir_fd=top, follow_symlinks=False).st_mode):
                    continue
                out[room] = os.stat(room + "/" + L.NEW, dir_fd=top, follow_symlinks=False).st_mtime_ns
            except FileNotFoundError:
                out[room] = 0
        return out

    def read_record(self, room: str, name: str, limit: int = 1 << 20) -> bytes:
        return self.read(L.ROOMS, room, L.NEW, name, limit=limit)

    def room_path(self, room: str, name: str) -> Path:
        """Where a record lives, for display."""
        return self.root / L.ROOMS / room / L.NEW / name

    @_writes
    def make_maildir(self, sid: str, top: str = L.SESSIONS) -> None:
        """A session's maildir, or with ``top=HUMANS`` a human's (the same folders)."""
        with self._at((top, sid), create=True) as d:
            for sub in L.MAILDIR:
                os.close(self._openat(d, sub, (top, sid, sub), True))

    def delivery_path(self, sid: str, sub: str, entry: str) -> Path:
        """Where a delivery lives, for display."""
        return self.root / L.SESSIONS / sid / sub / entry

    def delivery_state(self, sid: str, name: str, top: str = L.SESSIONS) -> str | None:
        """Where a name stands in a session's (or a human's) maildir: "seen", "claimed", "delivered", "held"
        (its inbound rule keeps it from the conduits), "declined", or None."""
        try:
            with self._at((top, sid)) as d:
                for sub, entry, state in (
                    (L.CUR, name + L.SEEN, "seen"),
                    (L.CLAIMED, name, "claimed"),
                    (L.NEW, name, "delivered"),
                    (L.HELD, name, "held"),
                    (L.DECLINED, name, "declined"),
                ):
                    if _holds(d, sub, entry):
                        return state
        except (FileNotFoundError, RefusedEntry):
            pass
        return None

    def has_delivery(self, sid: str, name: str, top: str = L.SESSIONS) -> bool:
        return self.delivery_state(sid, name, top) is not None

    @_writes
    def link_to_human(self, room: str, name: str, user: str) -> bool:
        """Link a room record into a human's mailbox (made on first use), unless the name is already
        anywhere in it: the same rule, and the same lock, as a session's delivery."""
        self.make_maildir(user, L.HUMANS)
        with (
            self._at((L.ROOMS, room, L.NEW)) as src,
            self._at((L.HUMANS, user)) as box,
            self._at((L.HUMANS, user, L.NEW)) as new,
            self.session_lock(user, L.HUMANS),
        ):
            if _holds(box, L.CLAIMED, name) or _holds(box, L.CUR, name + L.SEEN):
                return False
            try:
                os.link(name, name, src_dir_fd=src, dst_dir_fd=new, follow_symlinks=False)
            except FileExistsError:
                return False
        return True

    def link_delivery(self, sid: str, room: str, name: str, held: bool = False) -> bool:
        """Link a room record into a session's new/ (``held``: held/), unless the name is already anywhere
        in its maildir."""
        for _sid, outcome in self.link_deliveries(room, name, [sid], held):
            if isinstance(outcome, BaseException):
                raise outcome
            return outcome
        return False

    def link_deliveries(
        self, room: str, name: str, sids: list[str], held: bool = False
    ) -> Iterator[tuple[str, bool | OSError]]:
        """Fan one room record out: per recipient, whether it was linked (False: it already had the name
        somewhere in its maildir), or the error that kept it from being linked, so one broken recipient
        never starves the others. The hot loop of every send: the room's folder is opened once, and
        each recipient costs its own folders, its delivery lock, four probes and the link. ``held``:
        into held/ (the recipients' inbound rule holds it), which no conduit lists."""
        src = self._open_dir((L.ROOMS, room, L.NEW))
        try:
            for sid in sids:
                try:
                    yield sid, self._link_into(src, sid, room, name, held)
                except OSError as e:
                    yield sid, e
        finally:
            os.close(src)

    @_writes
    def _link_into(self, src: int, sid: str, room: str, name: str, held: bool = False) -> bool:
        # Spelled out with plain os calls, not the helpers: this runs once per recipient of every send.
        # Every folder is still opened O_DIRECTORY|O_NOFOLLOW from its parent's handle.
        sessions = self._top_fd(L.SESSIONS, True)
        try:
            sdir = os.open(sid, _DIR, dir_fd=sessions)
        except FileNotFoundError:
            return self._link_moved(sid, room, name)
        except NotADirectoryError:
            raise self._refusal(sessions, sid, (L.SESSIONS, sid)) from None
        try:
            try:
                # Never created here: a session whose new/ is gone was moved by a /clear (see below).
                new = os.open(L.NEW, _DIR, dir_fd=sdir)
            except FileNotFoundError:
                return self._link_moved(sid, room, name)
            except NotADirectoryError:
                raise self._refusal(sdir, L.NEW, (L.SESSIONS, sid, L.NEW)) from None
            try:
                lock = self._lock_in(sdir, (L.SESSIONS, sid, L.DELIVERY_LOCK))
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX)  # released by the close below
                    # new/ is covered by link() failing on an existing name; check where a claim moved it,
                    # and where the inbound rule put it (held/, declined/: each absent until first used).
                    if (
                        _holds(sdir, L.CLAIMED, name)
                        or _holds(sdir, L.CUR, name + L.SEEN)
                        or _holds(sdir, L.HELD, name)
                        or _holds(sdir, L.DECLINED, name)
                        or (held and _holds(sdir, L.NEW, name))
                    ):
                        return False
                    dst = self._openat(sdir, L.HELD, (L.SESSIONS, sid, L.HELD), True) if held else new
                    try:
                        os.link(name, name, src_dir_fd=src, dst_dir_fd=dst, follow_symlinks=False)
                        return True
                    except FileExistsError:
                        return False
                    except FileNotFoundError:  # the record was swept, or the session moved while we waited
                        pass
                    finally:
                        if held:
                            os.close(dst)
                finally:
                    os.close(lock)
            finally:
                os.close(new)
        finally:
            os.close(sdir)
        return self._link_moved(sid, room, name, held)

    def _link_moved(self, sid: str, room: str, name: str, held: bool = False) -> bool:
        """A sender that read the recipient set before a /clear move links after it: the move removed
        the old id's new/ (under this lock) after writing ``moved-to``, so follow the pointer."""
        target = self.moved_to(sid)
        return target != sid and self.link_delivery(target, room, name, held)

    def moved_to(self, sid: str) -> str:
        """Follow ``moved-to`` pointers left by /clear moves to the session's current id."""
        for _ in range(8):  # a handful of /clears in a row; a cycle of pointers ends here too
            try:
                text = self.read_text(L.SESSIONS, sid, L.MOVED_TO)
            except RefusedEntry:
                text = None
            target = text.strip() if text else ""
            if not L.is_session_id(target):
                return sid
            sid = target
        return sid

    def listing(self, sid: str, sub: str, top: str = L.SESSIONS) -> list[str]:
        """Entries of a session's (or a human's) new/, claimed/ or cur/, sorted; listed again until stable."""
        try:
            d = self._open_dir((top, sid, sub))
        except FileNotFoundError:
            return []
        try:
            previous: list[str] | None = None
            for _ in range(5):  # a rename during readdir can hide an entry; a second look finds it
                current = sorted(n for n in os.listdir(d) if not n.startswith("."))
                if current == previous:
                    break
                previous = current
            return current
        finally:
            os.close(d)

    @_writes
    def claim_all(self, sid: str, names: list[str], top: str = L.SESSIONS) -> list[str]:
        """Claim deliveries (rename new/ -> claimed/) under one take of the delivery lock; returns the
        names this call won. Exactly one conduit wins each; anything not a plain file is set aside."""
        won: list[str] = []
        with (
            self._at((top, sid, L.NEW)) as new,
            self._at((top, sid, L.CLAIMED), create=True) as claimed,
            self._at((top, sid, L.CUR), create=True),  # nothing is claimed that could not be marked seen
            self.session_lock(sid, top),
        ):
            for name in names:
                try:
                    if not stat.S_ISREG(os.stat(name, dir_fd=new, follow_symlinks=False).st_mode):
                        self._set_aside(new, name)
                        continue
                    os.rename(name, name, src_dir_fd=new, dst_dir_fd=claimed)
                except FileNotFoundError:
                    continue  # another conduit won it
                won.append(name)
        if won:
            pause_point("claimed")
        return won

    @_writes
    def decide_held(self, sid: str, name: str, accept: bool) -> bool:
        """Move a held delivery on, under the delivery lock: accepted into new/ (where the conduits'
        claim shows it once, as any delivery), or declined into declined/. False when it no longer
        waits (another decision won: one rename, so each held delivery is decided once)."""
        with (
            self._at((L.SESSIONS, sid, L.HELD)) as held,
            self._at((L.SESSIONS, sid, L.NEW if accept else L.DECLINED), create=True) as dest,
            self.session_lock(sid),
        ):
            try:
                if not stat.S_ISREG(os.stat(name, dir_fd=held, follow_symlinks=False).st_mode):
                    self._set_aside(held, name)
                    return False
                os.rename(name, name, src_dir_fd=held, dst_dir_fd=dest)
            except FileNotFoundError:
                return False
            os.fsync(dest)
        return True

    @_writes
    def mark_seen(self, sid: str, names: list[str], top: str = L.SESSIONS) -> None:
        """Move shown deliveries claimed/ -> cur/ with the Seen flag; one directory fsync for the batch."""
        if not names:
            return
        with self._at((top, sid, L.CLAIMED)) as claimed, self._at((top, sid, L.CUR)) as cur:
            for name in names:
                with contextlib.suppress(FileNotFoundError):
                    os.rename(name, name + L.SEEN, src_dir_fd=claimed, dst_dir_fd=cur)
            os.fsync(cur)


def _journal_orders_metadata(dev: int) -> bool:
    """Whether device ``dev`` (a stat's st_dev) holds xfs, or ext3/ext4 with its journal (jbd2 lists
    it; an ext4 made without one syncs each folder alone), read from /proc; False where that cannot be
    told (another platform, an unusual mount)."""
    want = f"{os.major(dev)}:{os.minor(dev)}"
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split()
                if len(fields) < 3 or fields[2] != want or " - " not in line:
                    continue
                fstype, source = [*line.split(" - ", 1)[1].split(), ""][:2]
                if fstype == "xfs":
                    return True
                journal = f"/proc/fs/jbd2/{os.path.basename(os.path.realpath(source))}-8"
                return fstype in ("ext3", "ext4") and os.path.isdir(journal)
    except OSError:
        pass
    return False


def _holds(d: int, sub: str, entry: str) -> bool:
    """Whether the session folder ``d`` has ``entry`` in ``sub``; a sub absent, or planted in place of a
    folder, holds nothing (and is never looked through)."""
    try:
        f = os.open(sub, _DIR, dir_fd=d)
    except (FileNotFoundError, NotADirectoryError):
        return False
    try:
        return os.access(entry, os.F_OK, dir_fd=f, follow_symlinks=False)
    finally:
        os.close(f)
