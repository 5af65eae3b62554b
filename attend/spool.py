"""The gate: the only code that opens, lists, creates, links, renames or removes anything under the
spool root. Everything else names spool files by their parts (``"sessions", sid, "new"``), as
declared in ``attend.layout``, and asks this module. See docs/architecture/spool.md.

It holds by construction, not by care:
- The root is opened once and checked on its handle (ours, not writable by others). Every folder
  below it is opened relative to its parent's handle with ``O_DIRECTORY | O_NOFOLLOW``, and every
  operation happens relative to that handle (``dir_fd=``). A folder swapped for a symlink is never
  followed, not even one swapped after an earlier check: nothing trusts a path across calls.
- Reads open with ``O_NOFOLLOW | O_NONBLOCK`` and accept only a regular file (``fstat``), so a FIFO
  or a device planted in the spool never hangs a command; it is refused with a one-line error.
- A part is one path component: never empty, ``.``, ``..`` or holding a ``/``.

Invariants kept here:
- a signal is written whole in a ``tmp/`` with O_EXCL, fsynced, then ``link()``ed into ``new/``
  (link fails on an existing name: nothing is overwritten); no reader looks in ``tmp/``;
- a send is durable once its room record and the room's ``new/`` are fsynced; recipient links are
  fast links that the repair pass restores after a crash;
- a name present anywhere in a session's maildir is never linked into it again; linkers and
  claimers of one session serialise on its delivery lock;
- a conduit claims with one rename new/ -> claimed/, and after showing renames into cur/ with ``:2,S``;
- folders are 0700 and files 0600 whatever the umask.

Standard library only (the drain's fast path imports it): the delivery lock is a plain ``flock``,
what portalocker calls on Linux, so the two interoperate.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from collections.abc import Iterator, Mapping

from attend import layout as L
from attend.errors import SpoolError

TYPE_CHECKING = False  # not typing's: its import would cost the drain's fast path a millisecond
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any, TypeVar

    _M = TypeVar("_M", bound=Callable[..., Any])

DIR_MODE = 0o700
FILE_MODE = 0o600
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _reopen(fd: int) -> int:
    """A handle of its own on the folder ``fd`` holds, never a dup: a dup shares the directory's read
    offset with the cached handle, so two threads listing the folder at once (the relay's two inbound
    batches, each fanning out to #open) read from each other's position, and one listing comes back
    short or empty (a recipient missed, its record in the room but never linked)."""
    return os.open(".", _DIR, dir_fd=fd)


def _listdir(fd: int) -> list[str]:
    """``os.listdir`` of a cached folder handle through a handle of its own (``_reopen``)."""
    own = _reopen(fd)
    try:
        return os.listdir(own)
    finally:
        os.close(own)


_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_PRIVATE = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_LOCKFILE = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
REMOVE_THREADS = 8  # unlinks in flight at once in Folder.remove_many
REMOVE_RUN = 64  # names a thread takes at least: fewer are not worth starting one for
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


class NoSpaceError(SpoolError, OSError):
    """The spool's filesystem is full (or over quota). An OSError too, so a caller that skips one
    failed recipient or step goes on as it did; a frontend reports the one line."""

    def __str__(self) -> str:
        return str(self.strerror)


class ReadOnlyError(SpoolError, OSError):
    """A write into a spool the user may read but not write (mode 500, say): reading commands work,
    and a write says so in one line (an OSError too, like NoSpaceError)."""

    def __str__(self) -> str:
        return str(self.strerror)


class RefusedEntry(SpoolError, OSError):
    """Something planted in the spool that attend will not follow or read: a symlink, a FIFO, a
    device, a file where a folder belongs. An OSError too, so a caller that skips unreadable
    records skips this one; anything else reports its one line."""

    def __str__(self) -> str:
        return str(self.strerror)  # the one line, without OSError's "[Errno N]"


def default_root(env: Mapping[str, str] | None = None) -> Path:
    from pathlib import Path

    return Path(L.default_root(env))


def check_same_device(rooms_dev: int, sessions_dev: int, rooms: str, sessions: str) -> None:
    """rooms/ and sessions/ must share a filesystem: deliveries are hard links between them."""
    if rooms_dev != sessions_dev:
        raise SpoolError(
            f"{rooms} and {sessions} are on different filesystems; attend hard-links between them, "
            "so keep the whole spool on one filesystem"
        )


def _writes(method: _M) -> _M:
    """A gate method that writes: a full disk raises NoSpaceError, one line, instead of errno 28."""

    def guarded(self: Spool, *args: object, **kwargs: object) -> object:
        try:
            return method(self, *args, **kwargs)
        except NoSpaceError:
            raise
        except OSError as e:
            error = self._write_error(e)
            if error is e:
                raise
            raise error from None

    guarded.__name__, guarded.__qualname__, guarded.__doc__ = method.__name__, method.__qualname__, method.__doc__
    return guarded  # type: ignore[return-value]


class Entry:
    """One entry of a scanned folder, as the listing gave it (no stat unless mtimes were asked)."""

    __slots__ = ("inode", "is_dir", "is_file", "mtime", "name")

    def __init__(self, name: str, inode: int, is_dir: bool, is_file: bool, mtime: float) -> None:
        self.name = name
        self.inode = inode
        self.is_dir = is_dir  # a real folder; a symlink to one is not
        self.is_file = is_file  # a regular file; a symlink, a FIFO or a device is not
        self.mtime = mtime


class Spool:
    """One spool root, opened once. Every path below it goes through here."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._r = os.fspath(root)
        self._fd = -1
        self._top: dict[str, int] = {}  # handles on the top-level folders, never removed by attend
        self._checked = False  # the root was checked (ours, private) on the handle held
        self._lazy = False  # Spool.open found no root: check whatever root a later open finds
        self._read_only = False  # the root is readable but not writable by this user
        self._ordered: bool | None = None  # see _one_commit

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        for fd in (*self._top.values(), self._fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._top, self._fd = {}, -1

    @property
    def root(self) -> Path:
        from pathlib import Path

        return Path(self._r)

    def path(self, *parts: str) -> str:
        """The path of root/parts… for display and for inotify, never for opening."""
        return "/".join((self._r, *parts))

    # ------------------------------------------------------------------ opening and checking

    @classmethod
    def open(cls, root: str | os.PathLike[str] | None = None, *, create: bool = True) -> Spool:
        """Open and check the spool, making it when absent. With ``create=False`` an absent root is made
        by the first write instead, so a command that only reads, or is refused, leaves the filesystem
        as it found it (the frontends open it so)."""
        spool = cls(L.default_root() if root is None else root)
        if create or os.path.lexists(spool._r):
            spool._ready()
        else:
            spool._lazy = True
        return spool

    def _ready(self) -> None:
        """Create the root if need be, check it, and make rooms/ and sessions/ (checked to share a device)."""
        self._create_root()
        self.check()
        check_same_device(
            os.fstat(self._top_fd(L.ROOMS, True)).st_dev,
            os.fstat(self._top_fd(L.SESSIONS, True)).st_dev,
            self.path(L.ROOMS),
            self.path(L.SESSIONS),
        )

    def _create_root(self) -> None:
        root = self._r
        if not os.path.lexists(root):
            try:
                os.makedirs(os.path.dirname(root) or ".", exist_ok=True)
                with contextlib.suppress(FileExistsError):
                    os.mkdir(root, DIR_MODE)
                    os.chmod(root, DIR_MODE)
            except OSError as e:
                raise self._write_error(e) from None

    def check(self) -> None:
        """Refuse a root that is not a folder, not ours, or writable by group or others."""
        root = self._r
        try:
            fd = self._root_fd()
        except NotADirectoryError as e:
            raise SpoolError(f"spool {root} is not a directory; remove it or set ATTEND_HOME elsewhere") from e
        except OSError as e:
            raise SpoolError(f"cannot use spool {root}: {e.strerror}; set ATTEND_HOME to a folder you own") from e
        self._check_fd(fd)
        self._checked = True

    def _check_fd(self, fd: int) -> None:
        root = self._r
        st = os.fstat(fd)  # on the handle itself: what we checked is what we use
        if st.st_uid != os.geteuid():
            raise SpoolError(
                f"spool {root} is owned by uid {st.st_uid}, not you; set ATTEND_HOME to a folder of your own"
            )
        if st.st_mode & 0o022:
            raise SpoolError(
                f"spool {root} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o}); "
                f"run: chmod 700 {root}"
            )
        if not os.access(root, os.R_OK | os.X_OK):
            raise SpoolError(f"spool {root} is not readable by you; run: chmod 700 {root}")
        # Readable but not writable: reading commands work; the first write says so (_write_error).
        self._read_only = not os.access(root, os.W_OK)

    def _root_fd(self, create: bool = False) -> int:
        if create and not self._checked:
            self.close()  # handles opened to read may be on a root deleted since: start afresh
            self._ready()  # about to write into a root nobody made or checked yet (Spool.open found none)
        if self._fd < 0:
            fd = os.open(self._r, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the root may be a link
            if self._lazy and not self._checked:
                try:
                    self._check_fd(fd)  # made by another process since Spool.open: checked before any read
                except BaseException:
                    os.close(fd)
                    raise
            if self._fd < 0:
                self._fd = fd
            else:  # another thread won: keep one
                os.close(fd)
        return self._fd

    def replaced(self) -> bool:
        """Whether the root, or a top-level folder, was removed (or removed and made again) since it was
        opened: ``rm -rf ~/.cache`` under a running loop. If so, every handle is dropped, and the next
        write makes the spool afresh (the caller recreates what it owns)."""
        if self._fd < 0:
            return False
        stale = False
        try:
            now, held = os.stat(self._r), os.fstat(self._fd)
            stale = (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino) or held.st_nlink == 0
        except FileNotFoundError:
            stale = True
        stale = stale or any(os.fstat(fd).st_nlink == 0 for fd in self._top.values())
        if stale:
            self.close()
            self._checked, self._lazy = False, True
        return stale

    def _write_error(self, e: OSError) -> OSError:
        """A full disk (or quota) or a spool the user may not write becomes one line naming the spool;
        any other error stays as it was."""
        if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and (self._read_only or e.errno == errno.EROFS):
            return ReadOnlyError(
                e.errno,
                f"spool {self._r} is read-only to you and this command writes to it (commands that only "
                f"read, such as peers, log and tail, work); to let attend write, run: chmod 700 {self._r}",
            )
        if e.errno in (errno.ENOSPC, errno.EDQUOT):
            return NoSpaceError(
                e.errno,
                f"no space left on {self._r}; free some disk space (attend cleanup removes old messages) and try again",
            )
        return e

    def _top_fd(self, name: str, create: bool) -> int:
        fd = self._top.get(name)
        if fd is None:
            fd = self._openat(self._root_fd(create), name, (name,), create)
            if self._top.setdefault(name, fd) != fd:  # another thread won: keep one
                os.close(fd)
                fd = self._top[name]
        return fd

    def _openat(self, parent: int, name: str, parts: tuple[str, ...], create: bool) -> int:
        if not name or name in (".", "..") or "/" in name or "\0" in name:
            raise SpoolError(f"refusing spool path {'/'.join(parts)!r}: {name!r} is not one folder name")
        try:
            return os.open(name, _DIR, dir_fd=parent)
        except FileNotFoundError:
            if not create:
                raise
        except NotADirectoryError:
            raise self._refusal(parent, name, parts) from None
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, DIR_MODE, dir_fd=parent)
        try:
            fd = os.open(name, _DIR, dir_fd=parent)
        except NotADirectoryError:
            raise self._refusal(parent, name, parts) from None
        os.fchmod(fd, DIR_MODE)  # mkdir's mode is masked by the umask
        return fd

    def _refusal(self, parent: int, name: str, parts: tuple[str, ...]) -> RefusedEntry:
        where = self.path(*parts)
        try:
            mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
        except OSError:
            mode = 0
        if stat.S_ISLNK(mode):
            return RefusedEntry(errno.ELOOP, f"refusing to follow a symlink planted in the spool at {where}; remove it")
        return RefusedEntry(errno.ENOTDIR, f"{where} should be a folder; remove it so attend can recreate it")

    @staticmethod
    def _leaf(parts: tuple[str, ...]) -> str:
        """The last part, checked as the folder parts are: one name, never climbing out."""
        name = parts[-1] if parts else ""
        if not name or name in (".", "..") or "/" in name or "\0" in name:
            raise SpoolError(f"refusing spool path {'/'.join(parts)!r}: {name!r} is not one file name")
        return name

    def _open_dir(self, parts: tuple[str, ...], create: bool = False) -> int:
        """A new handle on the folder root/parts…, each component opened from the last one's handle."""
        if not parts:
            return _reopen(self._root_fd(create))
        fd = self._top_fd(parts[0], create)
        if len(parts) == 1:
            return _reopen(fd)
        owned = False
        try:
            for i in range(1, len(parts)):
                nfd = self._openat(fd, parts[i], parts[: i + 1], create)
                if owned:
                    os.close(fd)
                fd, owned = nfd, True
        except BaseException:
            if owned:
                os.close(fd)
            raise
        return fd

    def _at(self, parts: tuple[str, ...], create: bool = False) -> _Handle:
        """``with spool._at(parts) as fd``: the folder's handle for the block, closed after it."""
        return _Handle(self._open_dir(parts, create))

    def _parts(self, args: tuple[str | os.PathLike[str], ...]) -> tuple[str, ...]:
        """Parts as given, or one path below the root split into them."""
        if len(args) == 1 and (isinstance(args[0], os.PathLike) or "/" in args[0]):
            text = os.fspath(args[0])
            if not text.startswith(self._r + "/"):
                raise SpoolError(f"{text} is not below the spool {self._r}")
            return tuple(text[len(self._r) + 1 :].split("/"))
        return tuple(os.fspath(a) for a in args)

    @_writes
    def make_dir(self, *parts: str) -> None:
        """Create root/parts… as real, private folders (those already there are checked)."""
        os.close(self._open_dir(parts, create=True))

    def folder(self, *parts: str) -> Folder:
        """An open handle on an existing folder, for scans and removals relative to it (retention)."""
        return Folder(self, parts, self._open_dir(parts))

    # ------------------------------------------------------------------ reading

    def _read_fd(self, d: int, name: str, parts: tuple[str, ...]) -> int:
        try:
            fd = os.open(name, _READ, dir_fd=d)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise self._refusal(d, name, parts) from None
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise RefusedEntry(errno.EINVAL, f"refusing to read {self.path(*parts)}: not a regular file; remove it")
        return fd

    def read(self, *args: str | os.PathLike[str], limit: int = 1 << 20) -> bytes:
        """The first ``limit`` bytes of a regular file. FileNotFoundError when it is absent;
        RefusedEntry for a symlink, a FIFO or anything else that is not a plain file."""
        parts = self._parts(args)
        with self._at(parts[:-1]) as d:
            return _read_all(self._read_fd(d, self._leaf(parts), parts), limit)

    def read_text(self, *parts: str) -> str | None:
        """A small file as text; None when it (or a folder on the way) is absent."""
        try:
            return self.read(*parts).decode("utf-8", "replace")
        except FileNotFoundError:
            return None

    def exists(self, *parts: str) -> bool:
        """Whether root/parts… exists (a final symlink counts). RefusedEntry when a folder on the
        way is planted: a symlink or a file there is reported, never looked through."""
        try:
            with self._at(parts[:-1]) as d:
                return os.access(self._leaf(parts), os.F_OK, dir_fd=d, follow_symlinks=False)
        except FileNotFoundError:
            return False

    def present(self, folder: tuple[str, ...], names: tuple[str, ...]) -> tuple[bool, ...]:
        """``exists`` for several names of one folder, opening it once (all False when it is absent)."""
        try:
            with self._at(folder) as d:
                return tuple(
                    os.access(self._leaf((*folder, n)), os.F_OK, dir_fd=d, follow_symlinks=False) for n in names
                )
        except FileNotFoundError:
            return tuple(False for _ in names)

    def survey(self, top: str, names: tuple[str, ...]) -> dict[str, tuple[bool, ...] | RefusedEntry]:
        """For each folder in the top-level folder ``top``, which of ``names`` it holds (one listing, one
        handle per folder: every send to #open asks this of every session); a child planted in place of
        a folder maps to its refusal."""
        try:
            tfd = self._top_fd(top, False)
        except FileNotFoundError:
            return {}
        out: dict[str, tuple[bool, ...] | RefusedEntry] = {}
        for child in sorted(_listdir(tfd)):
            if child.startswith("."):
                continue
            try:
                fd = os.open(child, _DIR, dir_fd=tfd)
            except FileNotFoundError:
                continue  # gone since the listing
            except NotADirectoryError:
                out[child] = self._refusal(tfd, child, (top, child))
                continue
            try:
                out[child] = tuple(os.access(n, os.F_OK, dir_fd=fd, follow_symlinks=False) for n in names)
            finally:
                os.close(fd)
        return out

    def mtime_ns(self, *parts: str) -> int | None:
        try:
            with self._at(parts[:-1]) as d:
                return os.stat(self._leaf(parts), dir_fd=d, follow_symlinks=False).st_mtime_ns
        except FileNotFoundError:
            return None

    def mtime(self, *parts: str) -> float | None:
        ns = self.mtime_ns(*parts)
        return None if ns is None else ns / 1e9

    def names(self, *parts: str) -> list[str]:
        """The names in a folder, sorted, without dotfiles (tmp names); [] when it is absent."""
        return sorted(n for n in self.entries(*parts) if not n.startswith("."))

    def entries(self, *parts: str) -> list[str]:
        """A folder as listed, unsorted and unfiltered; [] when it is absent."""
        try:
            with self._at(parts) as d:
                return os.listdir(d)
        except FileNotFoundError:
            return []

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

    # ------------------------------------------------------------------ session maildirs

    @_writes
    def make_maildir(self, sid: str, top: str = L.SESSIONS) -> None:
        """A session's maildir, or with ``top=HUMANS`` a human's (the same folders)."""
        with self._at((top, sid), create=True) as d:
            for sub in L.MAILDIR:
                os.close(self._openat(d, sub, (top, sid, sub), True))

    def delivery_path(self, sid: str, sub: str, entry: str) -> Path:
        """Where a delivery lives, for display."""
        return self.root / L.SESSIONS / sid / sub / entry

    @contextlib.contextmanager
    def lock(
        self, *parts: str, shared: bool = False, wait: bool = True, timeout: float | None = None
    ) -> Iterator[bool]:
        """An flock on the lock file root/parts…, made on first use and never unlinked (unlinking
        would split waiters across inodes). Yields False when ``wait`` is off, or ``timeout``
        seconds pass, and another holds it."""
        fd = self._lock_fd(tuple(parts))
        kind = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
        try:
            if wait and timeout is None:
                fcntl.flock(fd, kind)
                yield True
                return
            deadline = time.monotonic() + (timeout or 0.0)
            while True:
                try:
                    fcntl.flock(fd, kind | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        yield False
                        return
                    time.sleep(0.01)
            yield True
        finally:
            os.close(fd)  # closing releases the flock

    @_writes
    def _lock_fd(self, parts: tuple[str, ...]) -> int:
        with self._at(parts[:-1], create=True) as d:
            return self._lock_in(d, parts)

    def _lock_in(self, d: int, parts: tuple[str, ...]) -> int:
        """The lock file ``parts`` in its folder ``d``, made on first use; a regular file only."""
        try:
            fd = os.open(self._leaf(parts), _LOCKFILE, FILE_MODE, dir_fd=d)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise self._refusal(d, self._leaf(parts), parts) from None
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise RefusedEntry(errno.EINVAL, f"lock file {self.path(*parts)} is not a regular file; remove it")
        return fd

    @_writes
    def hold(self, *parts: str) -> int | None:
        """Take an exclusive lock for as long as the returned handle stays open (the duplicate-run
        lock); None when another process holds it."""
        fd = self._lock_fd(tuple(parts))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return fd

    def is_held(self, *parts: str) -> bool:
        """Whether another process holds the lock file (probed, never taken, never created)."""
        try:
            with self._at(parts[:-1]) as d:
                fd = self._read_fd(d, self._leaf(parts), tuple(parts))
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    @_writes
    def hold_slot(self, *parts: str, slot: int) -> int | None:
        """Lock byte ``slot`` of the lock file (an open-file-description lock: many processes hold
        slots of one file at once) for as long as the returned handle stays open; None when another
        holds it. A process holds the slot of its own pid: the evidence ``slot_held`` looks for that
        it is alive and doing what a state file claims, which a number in a file is not."""
        fd = self._lock_fd(tuple(parts))
        try:
            fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _flock(fcntl.F_WRLCK, slot))
        except OSError:
            os.close(fd)
            return None
        return fd

    def slot_held(self, *parts: str, slot: int) -> bool:
        """Whether a process holds byte ``slot`` of the lock file (probed, never taken, never created)."""
        if not 0 <= slot < 1 << 31:
            return False
        try:
            with self._at(parts[:-1]) as d:
                fd = self._read_fd(d, self._leaf(parts), tuple(parts))
        except OSError:
            return False
        try:
            got = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, _flock(fcntl.F_RDLCK, slot))
        except OSError:
            return False
        finally:
            os.close(fd)
        return int.from_bytes(got[:2], "little", signed=True) != fcntl.F_UNLCK

    def session_lock(self, sid: str, top: str = L.SESSIONS) -> contextlib.AbstractContextManager[bool]:
        """The per-session (or per-human) delivery lock: linkers and claimers of one maildir serialise on it."""
        return self.lock(top, sid, L.DELIVERY_LOCK)

    def show_lock(
        self, sid: str, timeout: float | None = None, top: str = L.SESSIONS
    ) -> contextlib.AbstractContextManager[bool]:
        """Held by a conduit from claim to show to seen. Whoever holds it knows no other conduit is
        mid-show, so every entry then in ``claimed/`` was abandoned by a dead one and may be shown.
        Separate from the delivery lock, so senders never wait on a conduit's output."""
        return self.lock(top, sid, L.SHOW_LOCK, timeout=timeout)

    def named_lock(
        self, name: str, *, shared: bool = False, wait: bool = True
    ) -> contextlib.AbstractContextManager[bool]:
        """A lock named by purpose, under locks/ (cleanup, a channel's membership)."""
        return self.lock(L.LOCKS, name, shared=shared, wait=wait)

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
            if not L.SID_RE.fullmatch(target):
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

    def set_aside(self, *parts: str) -> str | None:
        """Move an unreadable or foreign file out of the way, into quarantine/; returns its new name."""
        try:
            with self._at(parts[:-1]) as d:
                return self._set_aside(d, self._leaf(parts))
        except (FileNotFoundError, RefusedEntry):
            return None

    def _set_aside(self, d: int, name: str) -> str | None:
        dest = f"{int(time.time())}-{os.urandom(3).hex()}-{name}"
        try:
            os.rename(name, dest, src_dir_fd=d, dst_dir_fd=self._top_fd(L.QUARANTINE, True))
        except OSError:
            return None
        return dest

    # ------------------------------------------------------------------ the search index

    @_writes
    def disposable_database(self, *parts: str, fresh: bool = False) -> sqlite3.Connection:
        """An SQLite connection on root/parts…, a private file that holds only what can be made again
        (``attend search``'s index, attend/search/): 0600, one link, ours, made when absent.

        SQLite opens its file by path (its library takes no descriptor), so the gate readies the path
        for it first, on its own handles: the folders are opened without following a link, as every
        spool path is; then the file itself with ``O_NOFOLLOW | O_NONBLOCK``. Anything but a plain file
        of one link there (a planted symlink, a FIFO, a hard link to another file, a file we may not
        read or write) is removed, never followed or opened, and a fresh empty file made in its place:
        the caller rebuilds it. ``fresh`` starts afresh whatever is there (a corrupt index). The leftover
        or planted side files SQLite would look at (``-journal``, ``-wal``, ``-shm``) are removed: the
        caller keeps its journal in memory, so there are none of its own. After the connection is made
        the name is checked to still be the file readied, so only a writer inside the 0700 folder (the
        user) could swap it in between."""
        import sqlite3

        name = self._leaf(parts)
        with self._at(parts[:-1], create=True) as d:
            for side in (name + "-journal", name + "-wal", name + "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(side, dir_fd=d)
            if fresh:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=d)
            fd = self._private_file(d, name, parts)
            try:
                held = os.fstat(fd)
                conn = sqlite3.connect(self.path(*parts), timeout=10.0, isolation_level=None)
                now = os.stat(name, dir_fd=d, follow_symlinks=False)
                if (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino):
                    conn.close()
                    raise RefusedEntry(errno.ESTALE, f"{self.path(*parts)} was replaced while it was opened; try again")
            finally:
                os.close(fd)
        return conn

    def _private_file(self, d: int, name: str, parts: tuple[str, ...]) -> int:
        """A read-write handle on a plain private file ``name`` of folder ``d``: made when absent, and
        whatever else stands there (see ``disposable_database``) removed first."""
        for _ in range(3):
            try:
                fd = os.open(name, _PRIVATE, FILE_MODE, dir_fd=d)
            except OSError as e:
                if e.errno not in (errno.ELOOP, errno.ENXIO, errno.EACCES, errno.EPERM, errno.EISDIR):
                    raise
            else:
                st = os.fstat(fd)
                if stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and st.st_uid == os.geteuid():
                    if stat.S_IMODE(st.st_mode) != FILE_MODE:
                        os.fchmod(fd, FILE_MODE)
                    return fd
                os.close(fd)
            try:
                os.unlink(name, dir_fd=d)  # the link itself, never its target
            except FileNotFoundError:
                continue
            except OSError:  # a folder planted under the name
                raise RefusedEntry(errno.EISDIR, f"{self.path(*parts)} should be a file; remove it") from None
        raise RefusedEntry(errno.EAGAIN, f"{self.path(*parts)} keeps being replaced; try again")

    # ------------------------------------------------------------------ small state files

    @_writes
    def write_state(self, data: bytes, *parts: str, durable: bool = False) -> None:
        """Replace a small state file atomically (unique tmp + rename in the same folder). Whatever
        was planted under the name is replaced, never followed; a folder there is an error."""
        name = self._leaf(parts)
        tmp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        with self._at(parts[:-1], create=True) as d:
            _write_new(d, tmp, data, sync=durable)
            try:
                os.replace(tmp, name, src_dir_fd=d, dst_dir_fd=d)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=d)
                raise
            if durable:
                os.fsync(d)

    @_writes
    def rewrite_state(self, data: bytes, *parts: str) -> None:
        """Rewrite a small state file in place (pwrite, then truncate): no new inode. For state only
        read under the lock its writer holds, as the governor is under the show lock: a replace costs
        an inode's allocation and the old one's release, ~0.7 ms of CPU on this kind of disk, at every
        line a hundred loops print at once. Anything but the plain, singly linked file the name should
        be (a planted symlink, FIFO or hard link) is replaced, never written through, as write_state does."""
        fd = self._open_state(parts, os.O_WRONLY)
        if fd is None:
            self.write_state(data, *parts)
            return
        try:
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
        finally:
            os.close(fd)

    @_writes
    def append_state(self, line: bytes, *parts: str, limit: int = 16384) -> None:
        """Append one line (``line`` ends in a newline) to a small state file that readers take the
        last line of, without a lock: an append shows whole or not at all (the file's size moves
        after its bytes are in), so no reader sees half of one, and it costs no new inode. Past
        ``limit`` bytes, or on a file not ending in a line, the file is replaced by the line alone."""
        fd = self._open_state(parts, os.O_RDWR | os.O_APPEND)
        if fd is not None:
            try:
                size = os.fstat(fd).st_size
                if size + len(line) <= limit and (size == 0 or os.pread(fd, 1, size - 1) == b"\n"):
                    os.write(fd, line)
                    return
            finally:
                os.close(fd)
        self.write_state(line, *parts)

    def _open_state(self, parts: tuple[str, ...], flags: int) -> int | None:
        """The state file ``parts`` opened to write in place, made if absent; None when what is there
        is not a plain file of one link (it is then replaced whole, never written through)."""
        with self._at(parts[:-1], create=True) as d:
            try:
                fd = os.open(
                    self._leaf(parts),
                    flags | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                    FILE_MODE,
                    dir_fd=d,
                )
            except OSError:  # a symlink (ELOOP), a FIFO with no reader (ENXIO), a folder (EISDIR)
                return None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            os.close(fd)
            return None
        if stat.S_IMODE(st.st_mode) != FILE_MODE:
            os.fchmod(fd, FILE_MODE)
        return fd

    @_writes
    def create_exclusive(self, data: bytes, *parts: str) -> bool:
        """Create a file that must not exist yet; False when it does."""
        with self._at(parts[:-1], create=True) as d:
            try:
                _write_new(d, self._leaf(parts), data, sync=False)
            except FileExistsError:
                return False
        return True

    @_writes
    def create_linked(self, data: bytes, *parts: str) -> bool:
        """Publish a small file whole under a name that must not exist yet (tmp + link); False when it
        does. Unlike ``create_exclusive``, a reader never sees the file half-written."""
        name = self._leaf(parts)
        tmp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        with self._at(parts[:-1], create=True) as d:
            _write_new(d, tmp, data, sync=False)
            try:
                os.link(tmp, name, src_dir_fd=d, dst_dir_fd=d, follow_symlinks=False)
            except FileExistsError:
                return False
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=d)
        return True

    @_writes
    def touch(self, *parts: str) -> None:
        """Create or bump the mtime of a marker file (heartbeat); a symlink there is bumped itself."""
        with self._at(parts[:-1], create=True) as d:
            try:
                os.utime(self._leaf(parts), dir_fd=d, follow_symlinks=False)
            except FileNotFoundError:
                with contextlib.suppress(FileExistsError):
                    _write_new(d, self._leaf(parts), b"", sync=False)

    def remove(self, *parts: str) -> bool:
        """Unlink root/parts…; False when absent. A symlink there is removed itself, never followed."""
        try:
            with self._at(parts[:-1]) as d:
                os.unlink(self._leaf(parts), dir_fd=d)
        except FileNotFoundError:
            return False
        return True

    def remove_tree(self, *parts: str) -> None:
        """Remove a folder below the root and everything in it, never following a symlink: one planted
        in its place is unlinked itself, and one inside is removed, not descended into."""
        import shutil  # only cleanup, dissolve and reaping remove trees

        if not parts:
            raise SpoolError("refusing to remove the spool root")
        try:
            with self._at(parts[:-1]) as d:
                try:
                    mode = os.stat(self._leaf(parts), dir_fd=d, follow_symlinks=False).st_mode
                except FileNotFoundError:
                    return
                if not stat.S_ISDIR(mode):
                    os.unlink(self._leaf(parts), dir_fd=d)
                    return

                shutil.rmtree(self._leaf(parts), dir_fd=d, onerror=_missing_is_fine)
        except FileNotFoundError:
            return

    def remove_dir(self, *parts: str) -> bool:
        """Remove an empty folder below the root (a moved session's new/); False when absent or not empty."""
        try:
            with self._at(parts[:-1]) as d:
                os.rmdir(self._leaf(parts), dir_fd=d)
        except OSError:
            return False
        return True

    @_writes
    def move_entry(self, src: tuple[str, ...], dest: tuple[str, ...]) -> bool:
        """Move one spool entry to a name that must not exist yet (link + unlink: never clobbers). When
        the destination exists, the source goes anyway: the destination's copy wins."""
        with self._at(src[:-1]) as s, self._at(dest[:-1], create=True) as d:
            try:
                os.link(self._leaf(src), self._leaf(dest), src_dir_fd=s, dst_dir_fd=d, follow_symlinks=False)
            except FileExistsError:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self._leaf(src), dir_fd=s)
                return False
            except FileNotFoundError:
                return False
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._leaf(src), dir_fd=s)
        return True

    def move_all(self, src: tuple[str, ...], dest: tuple[str, ...]) -> None:
        """Move every entry of one folder into another (a /clear's notify/ and mcp/)."""
        # A symlink in place of the folder raises RefusedEntry: files are never moved out of its target.
        for entry in self.entries(*src) if self._is_dir(src) else []:
            self.move_entry((*src, entry), (*dest, entry))

    def _is_dir(self, parts: tuple[str, ...]) -> bool:
        try:
            os.close(self._open_dir(parts))
        except FileNotFoundError:
            return False
        return True

    # ------------------------------------------------------------------ the diagnostic log

    def log(self, line: str) -> None:
        """Append one line to the bounded diagnostic log (hooks' stderr is swallowed by the client)."""
        record = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} [{os.getpid()}] {line.strip()}\n".encode("utf-8", "replace")
        try:
            with self._at((L.LOG,), create=True) as d:
                with contextlib.suppress(FileNotFoundError):
                    if os.stat(L.LOG_FILE, dir_fd=d, follow_symlinks=False).st_size > L.LOG_LIMIT:
                        os.replace(L.LOG_FILE, L.LOG_OLD, src_dir_fd=d, dst_dir_fd=d)
                fd = os.open(L.LOG_FILE, _APPEND, FILE_MODE, dir_fd=d)  # a FIFO with no reader: ENXIO
                try:
                    if stat.S_ISREG(os.fstat(fd).st_mode):
                        os.write(fd, record)
                finally:
                    os.close(fd)
        except OSError:
            pass  # the log is a diagnostic aid; never fail the caller over it


class Folder:
    """An open, verified spool folder: scans, sizes and removals all relative to its handle, so a
    sweep that walks it never leaves it, whatever is swapped in on the way."""

    def __init__(self, spool: Spool, parts: tuple[str, ...], fd: int) -> None:
        self.spool, self.parts, self.fd = spool, parts, fd

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def path(self, name: str = "") -> str:
        return self.spool.path(*self.parts, name) if name else self.spool.path(*self.parts)

    def scan(self, mtimes: bool = False) -> Iterator[Entry]:
        """The folder's entries as the listing yields them (memory stays flat)."""
        with os.scandir(self.fd) as it:
            for e in it:
                try:
                    is_dir, is_file = e.is_dir(follow_symlinks=False), e.is_file(follow_symlinks=False)
                    mtime = e.stat(follow_symlinks=False).st_mtime if mtimes else 0.0
                except FileNotFoundError:
                    continue
                yield Entry(e.name, e.inode(), is_dir, is_file, mtime)

    def read(self, name: str, limit: int = 1 << 20) -> bytes:
        """As ``Spool.read``, for many files of one folder without opening the folder each time."""
        return _read_all(self.spool._read_fd(self.fd, name, (*self.parts, name)), limit)

    def set_aside(self, name: str) -> str | None:
        return self.spool._set_aside(self.fd, name)

    def size(self, name: str) -> int | None:
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False).st_size
        except FileNotFoundError:
            return None

    def remove(self, name: str) -> int:
        """Unlink one entry (never following it); the bytes freed: 0 unless this was its last link."""
        try:
            st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
            os.unlink(name, dir_fd=self.fd)
        except (FileNotFoundError, IsADirectoryError):
            return 0
        return st.st_size if st.st_nlink <= 1 else 0

    def remove_many(self, names: list[str]) -> list[int]:
        """``remove`` for each name, in order, the names split in runs over a few threads; each result
        as ``remove``'s. An unlink can wait on the device (ext4 mounted ``discard`` trims each freed
        block before unlink returns), and several in flight finish sooner than one loop. Every unlink
        is still relative to this handle, never following a name."""
        out = [0] * len(names)
        failed: list[BaseException] = []

        def work(lo: int, hi: int) -> None:
            try:
                for i in range(lo, hi):
                    out[i] = self.remove(names[i])
            except BaseException as e:  # raised in the caller, once every thread has stopped
                failed.append(e)

        n = len(names)
        runs = max(1, min(REMOVE_THREADS, n // REMOVE_RUN))
        if runs == 1:
            work(0, n)
        else:
            import threading  # only a cleanup of many files starts threads

            step = -(-n // runs)
            threads = [threading.Thread(target=work, args=(lo, min(n, lo + step))) for lo in range(step, n, step)]
            for t in threads:
                t.start()
            work(0, step)
            for t in threads:
                t.join()
        if failed:
            raise failed[0]
        return out

    def child(self, name: str) -> Folder:
        """A subfolder, opened from this handle (FileNotFoundError when gone; RefusedEntry for a symlink)."""
        parts = (*self.parts, name)
        return Folder(self.spool, parts, self.spool._openat(self.fd, name, parts, False))


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


def _write_new(d: int, name: str, data: bytes, sync: bool = True) -> None:
    """Create ``name`` in folder ``d`` (never existing, never through a symlink), write it whole, fsync
    unless told not to. On any failure the half-written file is removed and the error raised."""
    fd = os.open(name, _CREATE, FILE_MODE, dir_fd=d)
    try:
        os.fchmod(fd, FILE_MODE)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=d)
        raise
    os.close(fd)


def _missing_is_fine(_func: object, _path: str, exc_info: tuple[type[BaseException], BaseException, object]) -> None:
    if not isinstance(exc_info[1], FileNotFoundError):  # something else removed part of it: fine
        raise exc_info[1]


def _flock(kind: int, slot: int) -> bytes:
    """A ``struct flock`` for one byte at ``slot`` (Linux, 64-bit ``off_t``; ``l_pid`` 0 for OFD locks)."""
    import struct

    return struct.pack("hhqqi4x", kind, os.SEEK_SET, slot, 1, 0)


def _read_all(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes from an open file, which this closes."""
    try:
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


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


class _Handle:
    """A folder handle as a context manager: a class, not a generator, because every spool call
    opens one or more (contextlib's machinery costs more than the syscalls it wraps)."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __enter__(self) -> int:
        return self.fd

    def __exit__(self, *_: object) -> None:
        os.close(self.fd)
