"""inbox_wait: block until a delivery lands for this session, or the time is up (seed ADR 0024).

Woken by inotify on the session's new/, claimed/ and cur/ (a running sensor loop claims within
milliseconds, so new/ alone would miss deliveries), never by a sleep loop. Where inotify is absent
(not Linux) it degrades to polling every POLL seconds. Read-only for the message state: it lists
deliveries and reads their headers; only the trailer's attention cursor moves.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from attend import notify, sessions
from attend.context import Context
from attend.errors import NotEnrolledError, UsageError

MAX_SECONDS = 60.0
PROGRESS_EVERY = 5.0  # seconds between progress notes while waiting
POLL = 0.25  # seconds, only where inotify is unavailable

DESCRIPTION = (
    "Wait until a message reaches this session, then return nudges for what arrived (read bodies with "
    "inbox). For an idle agent with nothing else to do."
)
PARAMS = {"seconds": "How long to wait, 0-60 (0 checks once)."}


@dataclass(frozen=True)
class WaitRequest:
    seconds: float = 30.0


@dataclass
class Waited:
    items: list[notify.Item]
    waited: float  # seconds
    timed_out: bool
    warnings: list[str] = field(default_factory=list)


class Watch:
    """inotify on a session's maildir folders; a hint only, always followed by a listing."""

    def __init__(self, folders: list[str]) -> None:
        try:
            from inotify_simple import INotify, flags
        except ImportError:  # not Linux: poll
            self.inotify = None
            return
        self.inotify = INotify()
        for folder in folders:
            self.inotify.add_watch(folder, flags.CREATE | flags.MOVED_TO)

    def wait(self, seconds: float) -> None:
        if self.inotify is None:
            time.sleep(min(seconds, POLL))
            return
        self.inotify.read(timeout=max(0, int(seconds * 1000)))

    def close(self) -> None:
        # Releasing an inotify instance waits for an RCU grace period (~15 ms measured here): do it
        # off the caller's path, so the answer is not held back by the cleanup.
        if self.inotify is not None:
            threading.Thread(target=self.inotify.close, daemon=True).start()
            self.inotify = None


def run(ctx: Context, req: WaitRequest, progress: Callable[[float, float], None] | None = None) -> Waited:
    if not 0 <= req.seconds <= MAX_SECONDS:
        raise UsageError(f"seconds must be between 0 and {MAX_SECONDS:g}")
    who = ctx.who()
    if not who.is_agent or not sessions.is_enrolled(ctx.spool, who.id):
        raise NotEnrolledError(
            "nothing can land here: this caller is not an enrolled Claude session; "
            "arm `attend run` under the Monitor tool, or `attend join <channel>`, then wait again"
        )
    start = time.monotonic()
    deadline = start + req.seconds
    base = ctx.spool.make_maildir(who.id)
    # Watch before the first look, so a delivery between the look and the wait still wakes us.
    watch = Watch([str(base / sub) for sub in ("new", "claimed", "cur")])
    try:
        next_note = start + PROGRESS_EVERY
        while True:
            items = notify.take_deliveries(ctx.spool, who)
            now = time.monotonic()
            if items or now >= deadline:
                return Waited(items, round(now - start, 3), not items, list(who.notes))
            watch.wait(min(deadline, next_note) - now)
            if progress is not None and time.monotonic() >= next_note:
                progress(round(time.monotonic() - start, 1), req.seconds)
                next_note += PROGRESS_EVERY
    finally:
        watch.close()
