"""Locks: the flock files of the spool (a maildir's delivery and show locks, the named locks under
locks/, the duplicate-run hold) and the byte-slot locks a live process holds as its evidence. A lock
file is made on first use and never unlinked (unlinking would split waiters across inodes).

A plain ``flock``, what portalocker calls on Linux, so the two interoperate.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time

from attend import layout as L
from attend.gate.opening import _LOCKFILE, FILE_MODE, Handles, RefusedEntry, _writes

TYPE_CHECKING = False  # not typing's: its import would cost the drain's fast path a millisecond
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


class Locks(Handles):
    """The gate's locks (a part of ``Spool``, attend/spool.py)."""

    @contextlib.contextmanager
    def lock(
        self,
        *parts: str,
        shared: bool = False,
        wait: bool = True,
        timeout: float | None = None,
        unless: Callable[[], bool] | None = None,
    ) -> Iterator[bool]:
        """An flock on the lock file root/parts…, made on first use and never unlinked (unlinking
        would split waiters across inodes). Yields False when ``wait`` is off, or ``timeout``
        seconds pass, or ``unless()`` turns true, and another holds it."""
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
                    if time.monotonic() >= deadline or (unless is not None and unless()):
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
        self, sid: str, timeout: float | None = None, top: str = L.SESSIONS, unless: Callable[[], bool] | None = None
    ) -> contextlib.AbstractContextManager[bool]:
        """Held by a conduit from claim to show to seen. Whoever holds it knows no other conduit is
        mid-show, so every entry then in ``claimed/`` was abandoned by a dead one and may be shown.
        Separate from the delivery lock, so senders never wait on a conduit's output."""
        return self.lock(top, sid, L.SHOW_LOCK, timeout=timeout, unless=unless)

    def named_lock(
        self, name: str, *, shared: bool = False, wait: bool = True
    ) -> contextlib.AbstractContextManager[bool]:
        """A lock named by purpose, under locks/ (cleanup, a channel's membership)."""
        return self.lock(L.LOCKS, name, shared=shared, wait=wait)


def _flock(kind: int, slot: int) -> bytes:
    """A ``struct flock`` for one byte at ``slot`` (Linux, 64-bit ``off_t``; ``l_pid`` 0 for OFD locks)."""
    import struct

    return struct.pack("hhqqi4x", kind, os.SEEK_SET, slot, 1, 0)
