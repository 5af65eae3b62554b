"""inbox_wait: block until a delivery lands for this session, or the time is up (docs/architecture/mcp.md).

Woken by inotify on the session's new/, claimed/ and cur/ (a running sensor loop claims within
milliseconds, so new/ alone would miss deliveries), never by a sleep loop. Where inotify is absent
or exhausted (not Linux, or the per-user instance limit reached) it degrades to polling every POLL
seconds. Read-only for the message state: it lists deliveries and reads their headers; only the
trailer's attention cursor moves. A ``Stop`` ends the wait from another thread at once (the MCP
frontend sets it when the call is cancelled), and a stopped wait moves no cursor: its answer is
never seen, so what it would have returned stays for the trailer.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from attend.conduits.watch import Watcher
from attend.domain.attention import trailer
from attend.domain.sessions import sessions
from attend.domain.sessions.context import Context
from attend.errors import NotASessionError, NotEnrolledError, UsageError
from attend.verbs import FRONTEND

MAX_SECONDS = 60.0
PROGRESS_EVERY = 5.0  # seconds between progress notes while waiting
POLL = 0.25  # seconds, only where inotify is unavailable

DESCRIPTION = "Wait for a message to reach this session; returns nudges for what arrived (read bodies with inbox)."
PARAMS = {"seconds": "How long to wait, 0-60 (0 checks once)."}


@dataclass
class Waited:
    items: list[trailer.Item]
    waited: float  # seconds
    timed_out: bool
    warnings: list[str] = field(default_factory=list)


class Stop:
    """Ends a wait early, from any thread. While a wait runs, ``set`` also writes to a pipe the wait
    polls, so it wakes at once; the pipe exists only inside ``wakeable``, and a ``set`` outside it
    writes nothing (never to a closed, perhaps reused, fd)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._event = threading.Event()
        self._pipe: tuple[int, int] | None = None

    def set(self) -> None:
        with self._lock:
            self._event.set()
            if self._pipe is not None:
                os.write(self._pipe[1], b"x")

    def is_set(self) -> bool:
        return self._event.is_set()

    @contextlib.contextmanager
    def wakeable(self) -> Iterator[int]:
        """The read end of a pipe that turns readable once ``set`` is called (or already was)."""
        with self._lock:
            self._pipe = os.pipe()  # non-inheritable, as every fd Python makes
            if self._event.is_set():
                os.write(self._pipe[1], b"x")
            read_end = self._pipe[0]
        try:
            yield read_end
        finally:
            with self._lock:
                for fd in self._pipe:
                    os.close(fd)
                self._pipe = None


@dataclass(frozen=True)
class WaitRequest:
    seconds: float = 30.0
    # Called with (waited, seconds) every PROGRESS_EVERY seconds while nothing has arrived.
    progress: Callable[[float, float], None] | None = field(default=None, metadata=FRONTEND)
    # Set from another thread to end the wait at once (the MCP frontend does, on a cancelled call).
    stop: Stop | None = field(default=None, metadata=FRONTEND)


def run(ctx: Context, req: WaitRequest) -> Waited:
    if not 0 <= req.seconds <= MAX_SECONDS:
        raise UsageError(f"seconds must be between 0 and {MAX_SECONDS:g}")
    who = ctx.who()
    if not who.is_agent:
        raise NotASessionError(
            "inbox --wait waits for an agent session's deliveries; as a human, follow with attend tail"
        )
    if not sessions.is_enrolled(ctx.spool, who.id):
        raise NotEnrolledError(
            "nothing can land here: this session is not enrolled; "
            "`attend join <channel>` (or, in Claude Code, `attend run` under the Monitor tool), then wait again"
        )
    stop = req.stop or Stop()
    progress = req.progress
    start = time.monotonic()
    deadline = start + req.seconds
    ctx.spool.make_maildir(who.id)
    # Watch before the first look, so a delivery between the look and the wait still wakes us.
    watcher = Watcher(poll_seconds=POLL)
    for sub in ("new", "claimed", "cur"):
        watcher.add(sub, ctx.spool.path("sessions", who.id, sub))
    try:
        with stop.wakeable() as wake:
            next_note = start + PROGRESS_EVERY
            while True:
                items = trailer.take_deliveries(ctx.spool, who, keep=lambda: not stop.is_set())
                now = time.monotonic()
                if items or now >= deadline or stop.is_set():
                    return Waited(items, round(now - start, 3), not items, list(who.notes))
                watcher.wait(min(deadline, next_note) - now, wake)
                if progress is not None and not stop.is_set() and time.monotonic() >= next_note:
                    progress(round(time.monotonic() - start, 1), req.seconds)
                    next_note += PROGRESS_EVERY
    finally:
        watcher.close(background=True)
