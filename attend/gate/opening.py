"""Safe opening: the handles every gate operation goes through, and what the gate refuses.

The root is opened once and checked on its handle (ours, not writable by others); every folder below it
is opened relative to its parent's handle with ``O_DIRECTORY | O_NOFOLLOW``, and every operation happens
relative to that handle (``dir_fd=``), so nothing trusts a path across calls. Reads open with
``O_NOFOLLOW | O_NONBLOCK`` and accept only a regular file. ``Handles`` is the base every other part of
the gate builds on (attend/gate/__init__.py); ``Folder`` is an open, verified folder for sweeps.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time

from attend import layout as L
from attend.errors import SpoolError

TYPE_CHECKING = False  # not typing's: its import would cost the drain's fast path a millisecond
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path
    from typing import Any, TypeVar

    _M = TypeVar("_M", bound=Callable[..., Any])

DIR_MODE = 0o700
FILE_MODE = 0o600
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_PRIVATE = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_LOCKFILE = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
REMOVE_THREADS = 8  # unlinks in flight at once in Folder.remove_many
REMOVE_RUN = 64  # names a thread takes at least: fewer are not worth starting one for


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


def check_same_device(rooms_dev: int, sessions_dev: int, rooms: str, sessions: str) -> None:
    """rooms/ and sessions/ must share a filesystem: deliveries are hard links between them."""
    if rooms_dev != sessions_dev:
        raise SpoolError(
            f"{rooms} and {sessions} are on different filesystems; attend hard-links between them, "
            "so keep the whole spool on one filesystem"
        )


def _writes(method: _M) -> _M:
    """A gate method that writes: a full disk raises NoSpaceError, one line, instead of errno 28."""

    def guarded(self: Handles, *args: object, **kwargs: object) -> object:
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


class Handles:
    """One spool root, opened once, and the handles below it: the part of ``Spool`` (attend/spool.py) that
    opens, checks, reads and refuses. Every other part of the gate reaches the disk through these."""

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


class Folder:
    """An open, verified spool folder: scans, sizes and removals all relative to its handle, so a
    sweep that walks it never leaves it, whatever is swapped in on the way."""

    def __init__(self, spool: Handles, parts: tuple[str, ...], fd: int) -> None:
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
