"""Filesystem wake-ups for the sensor loop: inotify (inotify-simple) on Linux, polling elsewhere.

An event is only a hint: the loop always lists the folder again, so a missed, merged or overflowed
event costs nothing but a later look. Where inotify is unavailable (another platform, or the
kernel's watch limit reached) the watcher degrades to a one-second poll and says so once.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

POLL_SECONDS = 1.0  # the fallback's cadence; only used where no event source exists

# inotify masks (linux/inotify.h); spelled out so the polling fallback needs no import.
IN_MODIFY = 0x002
IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
ARRIVALS = IN_CREATE | IN_MOVED_TO
CHANGES = ARRIVALS | IN_DELETE | IN_MOVED_FROM | IN_CLOSE_WRITE


class Watcher:
    """Watch a few folders, each under a tag; ``wait`` returns the tags that saw something."""

    def __init__(self, use_inotify: bool = True) -> None:
        self._ino: Any = None
        self._tags: dict[int, str] = {}  # watch descriptor -> tag
        self._wds: dict[str, int] = {}
        self._polled: set[str] = set()
        self.fallback_reason: str | None = None
        if not use_inotify:
            self.fallback_reason = "inotify disabled"
            return
        try:
            from inotify_simple import INotify

            self._ino = INotify()
        except (ImportError, OSError) as e:
            self.fallback_reason = f"inotify unavailable ({e}); polling every {POLL_SECONDS:g} s"

    def add(self, tag: str, path: os.PathLike[str] | str, mask: int = ARRIVALS) -> bool:
        """Watch ``path`` under ``tag`` (replacing what the tag watched). False when it cannot."""
        self.remove(tag)
        if self._ino is None:
            self._polled.add(tag)
            return True
        try:
            wd = self._ino.add_watch(os.fspath(path), mask)
        except OSError as e:
            if not os.path.isdir(path):
                return False
            # The watch limit is reached: poll from now on rather than miss messages.
            self.fallback_reason = f"inotify watch failed ({e.strerror}); polling every {POLL_SECONDS:g} s"
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
        wd = self._wds.pop(tag, None)
        if wd is None or self._ino is None:
            return
        self._tags.pop(wd, None)
        with contextlib.suppress(OSError):  # the folder went away, and its watch with it
            self._ino.rm_watch(wd)

    def watching(self, tag: str) -> bool:
        return tag in self._wds or tag in self._polled

    def wait(self, timeout: float) -> set[str]:
        """Block until an event or ``timeout`` seconds; returns the tags that saw events."""
        if self._ino is None:
            time.sleep(max(0.0, min(timeout, POLL_SECONDS)))
            return set(self._polled)
        events = self._ino.read(timeout=max(0, int(timeout * 1000)))
        if any(e.wd == -1 for e in events):  # the queue overflowed: anything may have changed
            return set(self._wds)
        return {self._tags[e.wd] for e in events if e.wd in self._tags}

    def close(self) -> None:
        if self._ino is not None:
            self._ino.close()
            self._ino = None
