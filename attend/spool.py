"""The maildir spool: the only module that creates, links, renames or deletes spool files.

Invariants (DESIGN.md §3):
- a signal is written whole in a ``tmp/`` with O_EXCL, fsynced, then ``link()``ed into ``new/``;
  link fails on an existing name, so nothing is ever overwritten, and no reader looks in ``tmp/``;
- a send is durable once its room record and the room's ``new/`` are fsynced; recipient links are
  fast links that the repair pass restores after a crash;
- a name present anywhere in a session's maildir (new/, claimed/, cur/) is never linked into it
  again; linkers and claimers of one session serialise on that session's delivery lock;
- a conduit claims with one rename new/ -> claimed/, and after showing renames into cur/ with ``:2,S``;
- a published file is never modified; state changes are renames;
- folders are 0700 and files 0600 whatever the umask; a root another user owns or others can write
  is refused; a symlink planted anywhere below the root is never followed.

One deliberate exception: the drain's stdlib-only fast path (attend/fastdrain.py) bumps the
heartbeat's mtime and removes the drain-round counter itself, because importing this module would
cost it most of its budget; it touches nothing else.

The delivery lock is a plain ``flock`` (what portalocker calls on Linux, so the two interoperate):
portalocker's import alone costs ~5x a bare interpreter start, and ``send`` and the drain are hot.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import os
import re
import signal
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from attend.domain.rooms import SID_RE
from attend.errors import SpoolError

DIR_MODE = 0o700
FILE_MODE = 0o600
STALE_TMP_SECONDS = 129600  # 36 hours, as maildir(5) suggests for abandoned deliveries
SEEN = ":2,S"  # maildir info: version 2, flag Seen
LOG_LIMIT = 256 * 1024  # the diagnostic log keeps at most two files of this size

# <seconds>.M<microseconds>P<pid>Q<per-process counter>R<random>.<host>: fixed-width time first so
# names sort in send order; no ':' or '/', no leading '.', as the maildir rule asks.
NAME_RE = re.compile(r"[0-9]{10}\.M[0-9]{6}P[0-9]+Q[0-9]+R[0-9a-f]{8}\.[A-Za-z0-9-]+")

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)

# A test seam for crash windows: a process started with ATTEND_PAUSE_AT=<point> stops itself
# (SIGSTOP) there, so a test can kill it at exactly that step. Read once; costs one dict lookup.
_PAUSE_AT = os.environ.get("ATTEND_PAUSE_AT", "")


def pause_point(point: str) -> None:
    if point == _PAUSE_AT:
        os.kill(os.getpid(), signal.SIGSTOP)


def default_root(env: dict[str, str] | None = None) -> Path:
    """``$ATTEND_HOME``, else an absolute ``$XDG_CACHE_HOME``/attend, else ``~/.cache/attend``."""
    env = dict(os.environ) if env is None else env
    if home := env.get("ATTEND_HOME"):
        return Path(os.path.abspath(home))
    xdg = env.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "attend"
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".cache" / "attend"


_HOST = re.sub(r"[^A-Za-z0-9-]", "-", os.uname().nodename)[:63] or "localhost"
_name_lock = threading.Lock()
_counter = itertools.count()
_last_us = 0


def unique_name(now_ns: int | None = None) -> str:
    """A maildir unique name that sorts in send order and is the message id."""
    global _last_us
    with _name_lock:
        us = (time.time_ns() if now_ns is None else now_ns) // 1000
        # Strictly increasing within a process, so one sender's messages never tie.
        us = max(us, _last_us + 1)
        _last_us = us
        seq = next(_counter)
    sec, usec = divmod(us, 1_000_000)
    return f"{sec:010d}.M{usec:06d}P{os.getpid()}Q{seq}R{os.urandom(4).hex()}.{_HOST}"


def name_time(name: str) -> float:
    """Send time (epoch seconds) encoded in a unique name; 0.0 for a foreign name."""
    try:
        sec, rest = name.split(".M", 1)
        return int(sec) + int(rest[:6]) / 1e6
    except ValueError:
        return 0.0


def base_name(entry: str) -> str:
    """The unique name of a maildir entry, without its ``:2,…`` info."""
    return entry.split(":", 1)[0]


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | _O_DIRECTORY | _O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _present(path: str) -> bool:
    """Whether a path exists, without following a final symlink (and without raising on a miss)."""
    return os.access(path, os.F_OK, follow_symlinks=False)


def check_same_device(rooms: Path, sessions: Path) -> None:
    """rooms/ and sessions/ must share a filesystem: deliveries are hard links between them."""
    if os.lstat(rooms).st_dev != os.lstat(sessions).st_dev:
        raise SpoolError(
            f"{rooms} and {sessions} are on different filesystems; attend hard-links between them, "
            "so keep the whole spool on one filesystem"
        )


class Spool:
    """One spool root. Every path below it goes through here."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._r = str(root)  # hot paths join strings: pathlib costs more than the syscalls here
        self._dirs: set[Path] = set()  # folders verified to be real, private directories
        self._sdirs: dict[tuple[str, ...], str] = {}

    # ------------------------------------------------------------------ opening and checking

    @classmethod
    def open(cls, root: Path | None = None) -> Spool:
        spool = cls(root or default_root())
        spool._check_root()
        check_same_device(spool.dir("rooms"), spool.dir("sessions"))
        return spool

    def _check_root(self) -> None:
        root = self.root
        if not root.exists():
            root.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):
                os.mkdir(root, DIR_MODE)
                os.chmod(root, DIR_MODE)
        try:
            st = os.stat(root)
        except OSError as e:
            raise SpoolError(f"cannot use spool {root}: {e.strerror}; set ATTEND_HOME to a folder you own") from e
        if not stat.S_ISDIR(st.st_mode):
            raise SpoolError(f"spool {root} is not a directory; remove it or set ATTEND_HOME elsewhere")
        if st.st_uid != os.geteuid():
            raise SpoolError(
                f"spool {root} is owned by uid {st.st_uid}, not you; set ATTEND_HOME to a folder of your own"
            )
        if st.st_mode & 0o022:
            raise SpoolError(
                f"spool {root} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o}); "
                f"run: chmod 700 {root}"
            )
        if not os.access(root, os.R_OK | os.W_OK | os.X_OK):
            raise SpoolError(f"spool {root} is not readable and writable by you; run: chmod 700 {root}")
        self._dirs.add(root)

    def sdir(self, *parts: str, create: bool = True) -> str:
        """``dir(*parts)`` as a string, cached: the form the hot paths use."""
        found = self._sdirs.get(parts)
        if found is None:
            found = self._sdirs[parts] = str(self.dir(*parts, create=create))
        return found

    def dir(self, *parts: str, create: bool = True) -> Path:
        """The folder root/parts…, each component a real directory (never a symlink), made 0700."""
        path = self.root
        for part in parts:
            path = path / part
            if path in self._dirs:
                continue
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):
                    os.mkdir(path, DIR_MODE)
                    os.chmod(path, DIR_MODE)  # mkdir's mode is masked by the umask
                st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                raise SpoolError(f"refusing to follow a symlink planted in the spool at {path}; remove it")
            if not stat.S_ISDIR(st.st_mode):
                raise SpoolError(f"{path} should be a folder; remove it so attend can recreate it")
            self._dirs.add(path)
        return path

    def exists(self, *parts: str) -> bool:
        return _present(self._r + "/" + "/".join(parts))

    def forget_dirs(self) -> None:
        """Drop the verified-folder cache (after folders were removed or moved)."""
        self._dirs = {self.root}
        self._sdirs = {}

    # ------------------------------------------------------------------ publishing signals

    def publish(self, rooms: list[str], data: bytes, name: str | None = None) -> str:
        """Deliver one signal into each room's new/ under one unique name; durable on return."""
        name = name or unique_name()
        tmp = self.dir("rooms", rooms[0], "tmp") / name
        linked: list[Path] = []
        self._write_new(tmp, data)
        try:
            pause_point("tmp-written")
            for room in rooms:
                dest = self.dir("rooms", room, "new") / name
                os.link(tmp, dest, follow_symlinks=False)
                linked.append(dest)
            for dest in linked:
                _fsync_dir(dest.parent)
        except BaseException:
            for dest in linked:
                with contextlib.suppress(OSError):
                    os.unlink(dest)
            raise
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        pause_point("room-record")
        return name

    def _write_new(self, path: Path, data: bytes, sync: bool = True) -> None:
        """Create ``path`` (never existing, never through a symlink), write it whole, fsync unless told
        not to. On any failure the half-written file is removed and the original error raised."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, FILE_MODE)
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
                os.unlink(path)
            raise
        os.close(fd)

    def room_names(self, room: str) -> list[str]:
        """Unique names in a room, oldest first. Names only: never a stat per file."""
        return sorted(n for n in self.room_entries(room) if not n.startswith("."))

    def room_entries(self, room: str) -> list[str]:
        """A room's new/ as listed, unsorted: for callers that want only the newest few."""
        try:
            return os.listdir(self.sdir("rooms", room, "new", create=False))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def rooms(self) -> list[str]:
        try:
            return sorted(os.listdir(self.dir("rooms")))
        except FileNotFoundError:
            return []

    def room_path(self, room: str, name: str) -> Path:
        return self.root / "rooms" / room / "new" / name

    # ------------------------------------------------------------------ session maildirs

    def session_dir(self, sid: str) -> Path:
        return self.dir("sessions", sid)

    def make_maildir(self, sid: str) -> Path:
        for sub in ("tmp", "new", "cur", "claimed"):
            self.dir("sessions", sid, sub)
        return self.root / "sessions" / sid

    @contextlib.contextmanager
    def lock(
        self, *parts: str, shared: bool = False, wait: bool = True, timeout: float | None = None
    ) -> Iterator[bool]:
        """An flock on the lock file root/parts…, made on first use and never unlinked (unlinking
        would split waiters across inodes). Yields False when ``wait`` is off, or ``timeout``
        seconds pass, and another holds it."""
        path = self.sdir(*parts[:-1]) + "/" + parts[-1]
        fd = os.open(path, os.O_RDWR | os.O_CREAT | _O_NOFOLLOW | _O_CLOEXEC, FILE_MODE)
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

    def session_lock(self, sid: str) -> contextlib.AbstractContextManager[bool]:
        """The per-session delivery lock: linkers and claimers of one session serialise on it."""
        return self.lock("sessions", sid, "lock")

    def show_lock(self, sid: str, timeout: float | None = None) -> contextlib.AbstractContextManager[bool]:
        """Held by a conduit from claim to show to seen. Whoever holds it knows no other conduit is
        mid-show, so every entry then in ``claimed/`` was abandoned by a dead one and may be shown.
        Separate from the delivery lock, so senders never wait on a conduit's output."""
        return self.lock("sessions", sid, "show.lock", timeout=timeout)

    def named_lock(
        self, name: str, *, shared: bool = False, wait: bool = True
    ) -> contextlib.AbstractContextManager[bool]:
        """A lock named by purpose, under locks/ (cleanup, a channel's membership)."""
        return self.lock("locks", name, shared=shared, wait=wait)

    def has_delivery(self, sid: str, name: str) -> bool:
        base = f"{self._r}/sessions/{sid}"
        for path in (f"{base}/new/{name}", f"{base}/claimed/{name}", f"{base}/cur/{name}{SEEN}"):
            try:
                os.lstat(path)
                return True
            except FileNotFoundError:
                continue
        return False

    def link_delivery(self, sid: str, room: str, name: str) -> bool:
        """Link a room record into a session's new/, unless the name is already anywhere in its maildir.

        The hot loop of every send (once per recipient), so the lock is taken inline and presence is
        tested with ``access`` (no exception per miss): this is the session_lock protocol, unrolled.
        """
        src = f"{self._r}/rooms/{room}/new/{name}"
        try:
            # Never created here: a session whose new/ is gone was moved by a /clear (see below).
            dest = f"{self.sdir('sessions', sid, 'new', create=False)}/{name}"
        except FileNotFoundError:
            return self._link_moved(sid, room, name)
        base = f"{self._r}/sessions/{sid}"
        fd = os.open(f"{base}/lock", os.O_RDWR | os.O_CREAT | _O_NOFOLLOW | _O_CLOEXEC, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            # new/ is covered by link() failing on an existing name; check where a claim moved it.
            if _present(f"{base}/claimed/{name}") or _present(f"{base}/cur/{name}{SEEN}"):
                return False
            try:
                os.link(src, dest, follow_symlinks=False)
            except FileExistsError:
                return False
            except FileNotFoundError:  # the record was swept, or the session moved while we waited
                missing = True
            else:
                missing = False
        finally:
            os.close(fd)  # releases the lock
        return self._link_moved(sid, room, name) if missing else True

    def _link_moved(self, sid: str, room: str, name: str) -> bool:
        """A sender that read the recipient set before a /clear move links after it: the move removed
        the old id's new/ (under this lock) after writing ``moved-to``, so follow the pointer."""
        target = self.moved_to(sid)
        return target != sid and self.link_delivery(target, room, name)

    def moved_to(self, sid: str) -> str:
        """Follow ``moved-to`` pointers left by /clear moves to the session's current id."""
        for _ in range(8):  # a handful of /clears in a row; a cycle of pointers ends here too
            text = self.read_text("sessions", sid, "moved-to")
            target = text.strip() if text else ""
            if not SID_RE.fullmatch(target):
                return sid
            sid = target
        return sid

    def listing(self, sid: str, sub: str) -> list[str]:
        """Entries of a session's new/, claimed/ or cur/, sorted; listed again until stable."""
        try:
            path = self.sdir("sessions", sid, sub, create=False)
        except FileNotFoundError:
            return []
        previous: list[str] | None = None
        for _ in range(5):  # a rename during readdir can hide an entry; a second look finds it
            try:
                current = sorted(n for n in os.listdir(path) if not n.startswith("."))
            except FileNotFoundError:
                return []
            if current == previous:
                break
            previous = current
        return current

    def claim(self, sid: str, name: str) -> bool:
        """Take a delivery: one rename new/ -> claimed/. Exactly one conduit wins."""
        base = self.root / "sessions" / sid
        with self.session_lock(sid):
            try:
                st = os.lstat(base / "new" / name)
            except FileNotFoundError:
                return False
            if not stat.S_ISREG(st.st_mode):
                self._set_aside_path(base / "new" / name)
                return False
            try:
                os.rename(base / "new" / name, base / "claimed" / name)
            except FileNotFoundError:
                return False
        pause_point("claimed")
        return True

    def claim_all(self, sid: str, names: list[str]) -> list[str]:
        """Claim many deliveries under one take of the delivery lock; returns the names this call won."""
        # Plain strings, not Path joins: a drain may claim a thousand entries at a turn end.
        new, claimed = f"{self.root}/sessions/{sid}/new/", f"{self.root}/sessions/{sid}/claimed/"
        won: list[str] = []
        with self.session_lock(sid):
            for name in names:
                try:
                    st = os.lstat(new + name)
                    if not stat.S_ISREG(st.st_mode):
                        self._set_aside_path(Path(new + name))
                        continue
                    os.rename(new + name, claimed + name)
                except FileNotFoundError:
                    continue  # another conduit won it
                won.append(name)
        if won:
            pause_point("claimed")
        return won

    def mark_seen(self, sid: str, names: list[str]) -> None:
        """Move shown deliveries claimed/ -> cur/ with the Seen flag; one directory fsync for the batch."""
        if not names:
            return
        base = f"{self.root}/sessions/{sid}/"
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                os.rename(f"{base}claimed/{name}", f"{base}cur/{name}{SEEN}")
        _fsync_dir(Path(base + "cur"))

    def delivery_path(self, sid: str, sub: str, entry: str) -> Path:
        return self.root / "sessions" / sid / sub / entry

    # ------------------------------------------------------------------ reading

    def read(self, path: Path | str, limit: int = 1 << 20) -> bytes:
        """Read a spool file without following a symlink, neither the file nor a folder on the way."""
        text = os.fspath(path)
        if text.startswith(self._r + "/"):
            folders = text[len(self._r) + 1 :].split("/")[:-1]
            if folders:
                self.sdir(*folders, create=False)  # checked once per folder, then cached
        fd = os.open(text, os.O_RDONLY | _O_NOFOLLOW | _O_CLOEXEC)
        try:
            return os.read(fd, limit)
        finally:
            os.close(fd)

    def read_text(self, *parts: str) -> str | None:
        try:
            return self.read(self.root.joinpath(*parts)).decode("utf-8", "replace")
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise SpoolError(
                    f"refusing to follow a symlink planted in the spool at {self.root.joinpath(*parts)}; remove it"
                ) from e
            raise

    def set_aside(self, path: Path) -> Path | None:
        """Move an unreadable or foreign file out of the way, into quarantine/."""
        return self._set_aside_path(path)

    def _set_aside_path(self, path: Path) -> Path | None:
        dest = self.dir("quarantine") / f"{int(time.time())}-{os.urandom(3).hex()}-{path.name}"
        try:
            os.rename(path, dest)
        except OSError:
            return None
        return dest

    # ------------------------------------------------------------------ small state files

    def write_state(self, data: bytes, *parts: str, durable: bool = False) -> Path:
        """Replace a small state file atomically (unique tmp + rename in the same folder)."""
        folder = self.dir(*parts[:-1])
        path = folder / parts[-1]
        tmp = folder / f".{parts[-1]}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        self._write_new(tmp, data, sync=durable)
        try:
            if os.path.islink(path):
                raise SpoolError(f"refusing to follow a symlink planted in the spool at {path}; remove it")
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        if durable:
            _fsync_dir(folder)
        return path

    def create_exclusive(self, data: bytes, *parts: str) -> bool:
        """Create a file that must not exist yet; False when it does."""
        path = self.dir(*parts[:-1]) / parts[-1]
        try:
            self._write_new(path, data, sync=False)
        except FileExistsError:
            return False
        return True

    def create_linked(self, data: bytes, *parts: str) -> bool:
        """Publish a small file whole under a name that must not exist yet (tmp + link); False when it does.

        Unlike ``create_exclusive``, a reader never sees the file half-written.
        """
        folder = self.dir(*parts[:-1])
        tmp = folder / f".{parts[-1]}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        self._write_new(tmp, data, sync=False)
        try:
            os.link(tmp, folder / parts[-1], follow_symlinks=False)
        except FileExistsError:
            return False
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return True

    def touch(self, *parts: str) -> None:
        """Create or bump the mtime of a marker file (heartbeat)."""
        path = self.dir(*parts[:-1]) / parts[-1]
        try:
            os.utime(path, follow_symlinks=False)
        except FileNotFoundError:
            with contextlib.suppress(FileExistsError):
                self._write_new(path, b"", sync=False)

    def mtime(self, *parts: str) -> float | None:
        try:
            return os.lstat(self.root.joinpath(*parts)).st_mtime
        except (FileNotFoundError, NotADirectoryError):
            return None

    def remove(self, *parts: str) -> bool:
        """Unlink root/parts…; the folders on the way must be real ones (unlink follows them)."""
        try:
            os.unlink(self.dir(*parts[:-1], create=False) / parts[-1])
        except (FileNotFoundError, NotADirectoryError):
            return False
        return True

    def remove_path(self, path: Path) -> int:
        """Unlink one spool file; returns the bytes freed (0 unless this was its last link)."""
        try:
            st = os.lstat(path)
            os.unlink(path)
        except (FileNotFoundError, NotADirectoryError):
            return 0
        return st.st_size if st.st_nlink <= 1 else 0

    def remove_tree(self, *parts: str) -> None:
        """Remove a folder below the root and everything in it, never following a symlink."""
        if not parts or any(p in ("", ".", "..") or "/" in p for p in parts):
            raise SpoolError(f"refusing to remove {'/'.join(parts) or 'the spool root'}: not a folder below the root")
        try:
            parent = self.dir(*parts[:-1], create=False)
        except FileNotFoundError:
            return
        self._rmtree(parent / parts[-1])
        self.forget_dirs()

    def _rmtree(self, path: Path) -> None:
        # lstat first: scandir would follow a symlink planted in place of the folder and empty its
        # target, outside the spool. A symlink (or a file) is unlinked itself, never descended into.
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return
        if not stat.S_ISDIR(st.st_mode):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            return
        try:
            entries = list(os.scandir(path))
        except FileNotFoundError:
            return
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                self._rmtree(Path(entry.path))
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)
        with contextlib.suppress(OSError):
            os.rmdir(path)

    def remove_dir(self, *parts: str) -> bool:
        """Remove an empty folder below the root (a moved session's new/); False when absent or not empty."""
        try:
            os.rmdir(self.dir(*parts, create=False))
        except OSError:
            return False
        finally:
            self.forget_dirs()
        return True

    def move_entry(self, src: Path, dest: Path) -> bool:
        """Rename one spool entry to a name that must not exist yet (link + unlink: never clobbers)."""
        try:
            os.link(src, dest, follow_symlinks=False)
        except FileExistsError:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(src)
            return False
        except FileNotFoundError:
            return False
        with contextlib.suppress(FileNotFoundError):
            os.unlink(src)
        return True

    # ------------------------------------------------------------------ housekeeping

    def sweep_tmp(self, now: float | None = None) -> int:
        """Remove tmp files older than 36 hours, in every room and session; returns how many."""
        cutoff = (time.time() if now is None else now) - STALE_TMP_SECONDS
        removed = 0
        for top in ("rooms", "sessions"):
            try:
                owners = os.listdir(self.root / top)
            except FileNotFoundError:
                continue
            for owner in owners:
                try:
                    # Through verified folders only: a room planted as a symlink would otherwise
                    # have its target's tmp/ swept.
                    tmp = self.dir(top, owner, "tmp", create=False)
                    entries = list(os.scandir(tmp))
                except (FileNotFoundError, NotADirectoryError, SpoolError):
                    continue
                for entry in entries:
                    try:
                        if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                            os.unlink(entry.path)
                            removed += 1
                    except FileNotFoundError:
                        continue
        return removed

    def log(self, line: str) -> None:
        """Append one line to the bounded diagnostic log (hooks' stderr is swallowed by the client)."""
        try:
            folder = self.dir("log")
            path = folder / "attend.log"
            with contextlib.suppress(FileNotFoundError):
                if os.lstat(path).st_size > LOG_LIMIT:
                    os.replace(path, folder / "attend.log.1")
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
            record = f"{stamp} [{os.getpid()}] {line.strip()}\n".encode("utf-8", "replace")
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _O_NOFOLLOW | _O_CLOEXEC, FILE_MODE)
            try:
                os.write(fd, record)
            finally:
                os.close(fd)
        except OSError:
            pass  # the log is a diagnostic aid; never fail the caller over it
