"""Filesystem wake-ups (the sensor loop, inbox_wait): inotify on Linux, polling elsewhere.

An event is only a hint: the loop always lists the folder again, so a missed, merged or overflowed
event costs nothing but a later look. Where inotify is unavailable (another platform, or the
kernel's watch limit reached) the watcher degrades to a one-second poll and says so once.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import struct
import threading
import time

from attend.record import Record

TYPE_CHECKING = False  # typing only for mypy: every sensor loop imports this module
if TYPE_CHECKING:
    from typing import Any

POLL_SECONDS = 1.0  # the fallback's cadence; only used where no event source exists
WAKE = "wake"  # the tag ``wait`` returns when its ``wake`` descriptor is readable

# inotify masks (linux/inotify.h); spelled out so the polling fallback needs no import.
IN_MODIFY = 0x002
IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_IGNORED = 0x8000  # the kernel dropped a watch: its folder was removed
ARRIVALS = IN_CREATE | IN_MOVED_TO
CHANGES = ARRIVALS | IN_DELETE | IN_MOVED_FROM | IN_CLOSE_WRITE
# Added to every watch: a folder only, and never through a symlink planted in its place.
IN_ONLYDIR = 0x01000000
IN_DONT_FOLLOW = 0x02000000


class Event(Record):
    wd: int
    mask: int
    cookie: int
    name: str


_EVENT = struct.Struct("iIII")  # struct inotify_event, before its name
IN_CLOEXEC = os.O_CLOEXEC
IN_NONBLOCK = os.O_NONBLOCK


class INotify:
    """An inotify instance through libc's own symbols (ctypes on the running process, so no library
    search: that would import shutil, subprocess and tempfile into every idle loop)."""

    def __init__(self) -> None:
        import ctypes

        self._libc = ctypes.CDLL(None, use_errno=True)
        self._get_errno = ctypes.get_errno
        self._fd = self._call(self._libc.inotify_init1, IN_CLOEXEC | IN_NONBLOCK)
        self._poll = select.poll()
        self._poll.register(self._fd, select.POLLIN)

    def _call(self, function: Any, *args: object) -> int:
        rv = int(function(*args))
        if rv == -1:
            code = self._get_errno()
            raise OSError(code, os.strerror(code))
        return rv

    def fileno(self) -> int:
        return self._fd

    def add_watch(self, path: str, mask: int) -> int:
        return self._call(self._libc.inotify_add_watch, self._fd, os.fsencode(path), mask)

    def rm_watch(self, wd: int) -> None:
        self._call(self._libc.inotify_rm_watch, self._fd, wd)

    def read(self, timeout: int | None = None) -> list[Event]:
        """The events queued, waiting up to ``timeout`` ms (None: for ever) for the first."""
        data = self._drain()
        if not data and timeout != 0 and self._poll.poll(timeout):
            data = self._drain()
        events, at = [], 0
        while at + _EVENT.size <= len(data):
            wd, mask, cookie, size = _EVENT.unpack_from(data, at)
            at += _EVENT.size
            name = os.fsdecode(data[at : at + size].rstrip(b"\0"))
            at += size
            events.append(Event(wd, mask, cookie, name))
        return events

    def _drain(self) -> bytes:
        chunks = []
        while True:
            try:
                chunk = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)


class Watcher:
    """Watch a few folders, each under a tag; ``wait`` returns the tags that saw something."""

    def __init__(self, use_inotify: bool = True, poll_seconds: float = POLL_SECONDS) -> None:
        self._ino: Any = None
        self.poll_seconds = poll_seconds
        self._tags: dict[int, str] = {}  # watch descriptor -> tag
        self._wds: dict[str, int] = {}
        self._polled: set[str] = set()
        self.fallback_reason: str | None = None
        self.lost: set[str] = set()  # tags whose folder was removed since the caller last cleared this
        self._named: set[str] = set()  # tags whose entry names are kept for ``take_names``
        self._names: dict[str, set[str] | None] = {}  # tag -> names seen (None: unknown, look at all)
        if not use_inotify:
            self.fallback_reason = "inotify disabled"
            return
        try:
            self._ino = INotify()
        except (ImportError, OSError, AttributeError) as e:
            self.fallback_reason = f"inotify unavailable ({e}); polling every {poll_seconds:g} s"

    def add(self, tag: str, path: os.PathLike[str] | str, mask: int = ARRIVALS, named: bool = False) -> bool:
        """Watch ``path`` under ``tag`` (replacing what the tag watched). False when it cannot. With
        ``named``, the names of the entries events were about are kept for ``take_names``."""
        self.remove(tag)
        if named:
            self._named.add(tag)
            self._names[tag] = None  # nothing is known of what happened before the watch
        if self._ino is None:
            self._polled.add(tag)
            return True
        try:
            wd = self._ino.add_watch(os.fspath(path), mask | IN_ONLYDIR | IN_DONT_FOLLOW)
        except OSError as e:
            if e.errno not in (errno.ENOSPC, errno.ENOMEM):  # absent, or not a real folder
                return False
            # The watch limit is reached: poll from now on rather than miss messages.
            self.fallback_reason = f"inotify watch failed ({e.strerror}); polling every {self.poll_seconds:g} s"
            self.close()
            self._polled = {*self._wds, tag}
            self._wds.clear()
            self._tags.clear()
            return True
        self._tags[wd] = tag
        self._wds[tag] = wd
        return True

    def remove(self, tag: str) -> None:
        self._polled.discard(tag)
        self._named.discard(tag)
        self._names.pop(tag, None)
        wd = self._wds.pop(tag, None)
        if wd is None or self._ino is None:
            return
        self._tags.pop(wd, None)
        with contextlib.suppress(OSError):  # the folder went away, and its watch with it
            self._ino.rm_watch(wd)

    def watching(self, tag: str) -> bool:
        return tag in self._wds or tag in self._polled

    def take_names(self, tag: str) -> set[str] | None:
        """The entry names a ``named`` tag's events were about since the last take; None when they
        cannot be known (a queue overflow, polling, the watch just made): look at everything."""
        if tag not in self._wds:
            return None
        names = self._names.get(tag)
        self._names[tag] = set()
        return names

    def _note(self, events: list[Event]) -> None:
        for e in events:
            tag = self._tags.get(e.wd)
            if tag in self._named and e.name:
                known = self._names.get(tag)
                if known is not None:
                    known.add(e.name)

    def wait(self, timeout: float, wake: int | None = None) -> set[str]:
        """Block until an event, ``timeout`` seconds, or ``wake`` (a file descriptor another thread
        or the kernel makes readable: a pidfd, say) turns readable; returns the tags that saw
        events, and ``WAKE`` when ``wake`` is readable."""
        if self._ino is None:
            pause = max(0.0, min(timeout, self.poll_seconds))
            if wake is None:
                time.sleep(pause)
                return set(self._polled)
            ready, _, _ = select.select([wake], [], [], pause)
            return set(self._polled) | ({WAKE} if ready else set())
        if wake is None:
            events = self._ino.read(timeout=max(0, int(timeout * 1000)))
            woken: set[str] = set()
        else:
            ready, _, _ = select.select([self._ino.fileno(), wake], [], [], max(0.0, timeout))
            woken = {WAKE} if wake in ready else set()
            if self._ino.fileno() not in ready:
                return woken
            events = self._ino.read(timeout=0)
        if any(e.wd == -1 for e in events):  # the queue overflowed: anything may have changed
            for tag in self._named:
                self._names[tag] = None
            return set(self._wds) | woken
        self._note(events)
        gone = {self._tags[e.wd] for e in events if e.mask & IN_IGNORED and e.wd in self._tags}
        tags = {self._tags[e.wd] for e in events if e.wd in self._tags} | woken
        for tag in gone:  # the kernel dropped the watch: the tag is not watched until added again
            self._tags.pop(self._wds.pop(tag), None)
            self._names.pop(tag, None)
        self.lost |= gone
        return tags

    def close(self, background: bool = False) -> None:
        """Release the inotify instance. That waits for an RCU grace period (~15 ms measured here):
        ``background`` does it off the caller's path, so an answer is not held back by cleanup."""
        ino, self._ino = self._ino, None
        if ino is None:
            return
        if background:
            threading.Thread(target=ino.close, daemon=True).start()
        else:
            ino.close()
