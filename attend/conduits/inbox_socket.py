"""The socket conduit: ``attend mcp`` posts a session's mail to the session's own inbox socket.

Claude Code (2.1.332) gives each child of a session ``CLAUDE_CODE_MESSAGING_SOCKET`` and
``CLAUDE_CODE_MESSAGING_TOKEN``. A child that connects and writes the auth line and one user line has
the content put before the model: in its next request when the session is busy, as a new turn when it
sits idle (measured: docs/architecture/conduits.md, "Reference notes"). ``attend mcp`` lives exactly as
long as its session, so a thread of it can deliver mid-turn and wake an idle session with no Monitor
and no hook left waiting.

The rules, as every conduit's:
- it sleeps in one inotify read (the session's ``new/``, its own folder, the client's session record),
  woken only by an event or by the server's end: no timer runs while nothing happens;
- it follows a ``/clear``: the client rewrites its record with the session's new id, and the conduit
  carries the session over (``sessions.follow_clear``, as the loop and the drain do), removes the old
  id's ``socket`` file and serves the new id's mail;
- it claims under the show lock with the drain's own claim (``drain.claimed``), shows through the
  drain's governor, mutes and framing, and a burst is one post;
- the client answers nothing on the socket, so a post is *confirmed* only when the session's transcript
  records it as put before the model (an attachment, a user entry or a request whose text holds the
  post's own mark, a token drawn for each batch; a tool result naming the ids is no word). Until then
  the show lock stays held and nothing is marked seen. A post the client dropped (the session idle and the post
  not in its transcript ``DROP_WAIT`` later) is posted again after a backoff (``RETRY_AFTER``), at most
  ``POST_TRIES`` posts in all, unless the transcript shows the first one meanwhile. A batch still
  unshown then is *given up*: its messages stay in ``claimed/`` for the next conduit (the drain at the
  turn end, the loop), and the conduit *rests*, not serving (``- <reason>`` in the state file), until a
  turn has ended and the next has begun, so the waiter armed at that turn end serves the idle time in
  between. ``GIVE_UPS`` batches given up in a row, and it stops for the server's life. A socket that is
  gone or not this user's, the client's end or the server's stop it at once;
- it steps aside while the sensor loop runs (the loop delivers), and when the session's settings hold
  or refuse peer messages (``crossSessionInbound``), or ``conduits.socket`` is ``off``.

``sessions/<sid>/socket`` names the serving process (``<pid> <procStart>``) while it serves, and the
process holds its pid's slot of ``socket.lock`` meanwhile; the waiter steps aside for that pair, never
for a number alone (any process of the user can write the file), and ``status`` and ``doctor`` read it
to say which conduit serves the session. ``sessions/<sid>/posted`` keeps the pending post's offset and
the digest of its mark, never the mark.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from attend import hosts, identity
from attend import layout as L
from attend.conduits import inbox_client as client
from attend.conduits.waiter import hold_slot, live_pid
from attend.conduits.watch import ARRIVALS, IN_CLOSE_WRITE, IN_CREATE, IN_DELETE, IN_MODIFY, Watcher
from attend.errors import AttendError
from attend.procfs import stat_fields
from attend.spool import Spool

if TYPE_CHECKING:
    from attend.conduits.drain import Arranged, Batch
    from attend.domain.settings.config import Config

STATE = L.SOCKET  # sessions/<sid>/socket: "<pid> <procStart>" of the serving `attend mcp`
STATE_POSTED = L.POSTED  # sessions/<sid>/posted: a post awaiting the transcript's word
POST_GAP = 2.0  # seconds between two posts (the client drops closer ones); what lands meanwhile joins the next
DROP_WAIT = 10.0  # an idle session shows a post within ~0.4 s; unconfirmed this long after, it was dropped
POST_TRIES = 3  # posts of one batch (the first, then retries) before the batch is given up
RETRY_AFTER = (2.0, 8.0)  # seconds before each retry: the client drops posts that crowd it (~30 at once)
GIVE_UPS = 3  # batches given up in a row before the conduit stops for the server's life
RESTING = "resting until a turn has ended and the next begun"  # in the state file while it rests
SESSION_EVENTS = ARRIVALS | IN_CLOSE_WRITE | IN_DELETE  # enrollment, and the drain's verdict at a turn end
IDLE_SLEEP = 86400.0  # the longest sleep: one look a day, never a periodic wake
HELD = ("hold", "refuse")  # crossSessionInbound values under which a post never reaches the model
HEADER = (
    "[attend] delivered by attend (not a Claude Code SendMessage): answer with attend's reply or send, "
    "which the sender reads; SendMessage does not reach them."
)


class Unshown(Exception):
    """A post that did not reach the model: the claimed messages stay in ``claimed/``. ``final``: no
    later post can do better (no socket of this user there, the client or the server ending)."""

    def __init__(self, why: str, final: bool = False) -> None:
        super().__init__(why)
        self.final = final


def served_by(spool: Spool, sid: str) -> int | None:
    """The pid of the live ``attend mcp`` serving ``sid``'s socket, or None (for status and doctor)."""
    return live_pid(spool, sid, STATE)


def why_not(
    env: Mapping[str, str], cfg: Config | None, cwd: str | None, host: hosts.Host = hosts.DEFAULT
) -> str | None:
    """Why the socket cannot serve this process's session, or None when it can: ``host``, the
    session's, names the socket (``Host.inbox_env``) and the session's setting for it."""
    if host.inbox_env is None:
        return "the client gives no inbox socket"
    socket_var, token_var = host.inbox_env
    if not env.get(socket_var, "") or not env.get(token_var):
        return f"the client gives no inbox socket ({socket_var} unset)"
    if cfg is not None and str(cfg.get("conduits.socket")) == "off":
        return "conduits.socket is off in the config"
    held = host.inbound_setting(env, cwd)
    if held in HELD:
        return f"the session's settings {held} peer messages (crossSessionInbound: {held})"
    return None


def compose(spool: Spool, batch: Batch, arranged: Arranged, cfg: Config | None, mark: str) -> str:
    """attend's header with the post's mark, then the drain's reason (framing, governor folds, closing
    line) and the reheat."""
    from attend.conduits import drain

    return f"{HEADER} (post {mark})\n{drain.with_reheat(spool, batch, drain.render_reason(batch, arranged), cfg)}"


def new_mark() -> str:
    """A token only this batch's posts carry: the transcript confirms a post by the client's record of
    its text holding it, since a tool result or a prompt may name the messages' ids without the post
    ever reaching the model. Nobody else can know it (the spool keeps only its digest), so nobody can
    forge the word."""
    import secrets

    return secrets.token_hex(16)


def again(content: str, attempt: int) -> str:
    """A retry's post: the client drops a post whose text repeats the sender's last one within 30 s
    (its ingress guard's duplicate window, read from 2.1.332), so a retry says which it is."""
    if not attempt:
        return content
    return f"{content}\n[attend] posted again ({attempt + 1} of {POST_TRIES}): an earlier post did not reach you"


class Conduit(threading.Thread):
    """The socket conduit of one ``attend mcp``; ``stop()`` ends it (the server's stdin closed)."""

    def __init__(self, spool: Spool, env: Mapping[str, str], who: identity.Identity, cfg: Config | None) -> None:
        super().__init__(name="attend-socket-conduit", daemon=True)
        self.spool = spool
        self.env = env
        self.sid = who.id
        self.host_pid = who.host_pid
        self.proc_start = who.proc_start
        self.cwd = who.origin
        self.cfg = cfg
        self.host = hosts.of(who.host)
        socket_var, token_var = self.host.inbox_env or ("", "")
        self.socket_path = env.get(socket_var, "") if socket_var else ""
        self.token = env.get(token_var, "") if token_var else ""
        self.watcher = Watcher()
        self._stop_r, self._stop_w = os.pipe()
        self.last_post = 0.0
        self.reason: str | None = None  # why it stopped serving, once it has
        self.posts = 0
        self.named = False  # the state file names this process: the waiter steps aside
        self.slot: int | None = None  # the handle on this process's slot of the state file's lock
        self.given_up = 0  # batches given up in a row (a confirmed post resets it)
        self.rest: int | None = None  # resting after a give-up: 0 until a turn ends, 1 until idle, 2 until busy
        self.rest_note = ""  # what the state file says while it rests
        self.rest_busy = False  # the record said busy since the give-up
        record = identity.read_record(hosts.DEFAULT.records_home(env), who.host_pid) if who.host_pid else None
        if record is not None and record.cwd:
            self.cwd = record.cwd
        self.record_name = f"{who.host_pid}.json"
        self.transcript = identity.transcript_path(env, self.sid, self.cwd)
        self.headless = self.host.unattended(env, who.host_pid)

    # -- lifecycle

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._stop_w, b"x")

    @property
    def stopping(self) -> bool:
        import select

        return bool(select.select([self._stop_r], [], [], 0)[0])

    def report(self, line: str) -> None:
        with contextlib.suppress(Exception):
            self.spool.log(line)

    def run(self) -> None:
        try:
            self.serve()
        except Exception as e:  # never take the server down; the other conduits deliver
            self.reason = f"the socket conduit failed ({type(e).__name__}: {e})"
            self.report(f"attend mcp: {self.reason}; the drain and loop deliver")
        finally:
            self.unname()
            if self.reason and not self.stopping:
                declined(self.spool, self.sid, self.reason)
            self.watcher.close()

    def name_self(self) -> None:
        """Name this process in the state file, holding its slot of the file's lock first: the waiter
        steps aside for the slot held, not for the number."""
        if self.slot is None:
            self.slot = hold_slot(self.spool, self.sid, STATE)
        fields = stat_fields(os.getpid())
        me = f"{os.getpid()} {fields[19] if fields else '?'}"
        self.spool.write_state(me.encode(), L.SESSIONS, self.sid, STATE)

    def let_go(self) -> None:
        if self.slot is not None:
            os.close(self.slot)
            self.slot = None

    def unname(self) -> None:
        """Remove the state file while it names this process, or says it rests (a server gone says
        nothing); let go of the slot."""
        with contextlib.suppress(OSError):
            if served_by(self.spool, self.sid) == os.getpid() or (
                self.rest is not None and declined_reason(self.spool, self.sid) == self.rest_note
            ):
                self.spool.remove(L.SESSIONS, self.sid, STATE)
        self.let_go()

    # -- watching

    def ready(self) -> bool:
        """Enrolled, not opted out, the maildir there: the conduit may serve."""
        enrolled, optout = self.spool.present((L.SESSIONS, self.sid), (L.ENROLLED, L.OPTOUT))
        return enrolled and not optout and self.spool.exists(L.SESSIONS, self.sid, L.NEW)

    def loop_live(self) -> bool:
        return self.spool.is_held(L.SESSIONS, self.sid, L.RUN_LOCK)

    def waiter_keeps(self) -> bool:
        """A headless run that opted in to waiting (``conduits.headless_wait``) is kept alive between
        turns by its waiter, which then delivers; the socket serves it while it works."""
        return self.headless and live_pid(self.spool, self.sid, L.WAITER) is not None

    def pending(self) -> bool:
        return bool(self.spool.listing(self.sid, L.NEW) or self.spool.listing(self.sid, L.CLAIMED))

    def serve(self) -> None:
        if self.watcher.fallback_reason:  # polling would wake every second for the session's life
            self.report(f"attend mcp: {self.watcher.fallback_reason}; the socket conduit does not serve")
            return
        self.spool.make_dir(L.SESSIONS, self.sid)  # the presence marker made it; enrollment fills it
        self.watcher.add("session", self.spool.path(L.SESSIONS, self.sid), SESSION_EVENTS, named=True)
        # The client's record: a /clear rewrites it with the session's new id (and a post's
        # confirmation reads its status from it).
        self.watcher.add("record", hosts.DEFAULT.records_home(self.env), ARRIVALS | IN_CLOSE_WRITE, named=True)
        # Loaded now, while nothing waits: the first post would otherwise pay for importing the drain
        # (its claim, governor and rendering) between the arrival and the post (~130 KB more RSS).
        from attend.conduits import drain  # noqa: F401
        from attend.domain.sessions import sessions  # noqa: F401

        while not self.stopping:
            if self.follow_clear() and self.named:
                self.named = False  # named under the old id; unnamed there, named again under the new one
            turn_end = L.DRAINED in (self.watcher.take_names("session") or ())  # taken each wake: it stays small
            if self.rest is not None and not self.rested(turn_end):
                pass  # not serving: the drain and the waiter do, until a turn has passed
            elif self.ready():
                if not self.watcher.watching("new"):
                    self.watcher.add("new", self.spool.path(L.SESSIONS, self.sid, L.NEW), ARRIVALS)
                if not self.named:
                    self.name_self()  # the waiter steps aside from now on
                    self.named = True
                if self.pending() and not self.loop_live() and not self.waiter_keeps():
                    self.gather()
                    if self.stopping:
                        return
                    if not self.show():
                        return  # stopped serving: self.reason says why
                    continue
            elif self.named:
                self.unname()
                self.named = False
            self.watcher.wait(IDLE_SLEEP, wake=self._stop_r)

    def rested(self, turn_end: bool) -> bool:
        """Resting after a give-up: True once a turn has ended (its drain shows what was given up, and
        the waiter it arms serves the idle time) and the next has begun. ``turn_end``: the drain's
        verdict was written since the last look (else the record seen busy, then not, says it); a
        turn's start is the record's status busy again. serve() wakes at each write of either."""
        assert self.rest is not None
        working = self.status() in ("busy", "waiting")
        if self.rest == 0:
            self.rest_busy = self.rest_busy or working
            if turn_end or (self.rest_busy and not working):
                self.rest = 1
        if self.rest == 1 and not working:
            self.rest = 2
        elif self.rest == 2 and working:
            self.rest = None
            self.report("attend mcp: socket conduit: a turn has passed since the give-up; serving again")
            return True
        return False

    def follow_clear(self) -> bool:
        """A /clear gave the session a new id (its record rewritten for the same client process):
        carry its state over as every conduit does, leave the old id's registration, and serve the
        new id from now on. True when it moved."""
        names = self.watcher.take_names("record")
        if names is not None and self.record_name not in names:
            return False
        record = identity.read_record(hosts.DEFAULT.records_home(self.env), self.host_pid) if self.host_pid else None
        if record is None or record.session_id == self.sid or record.proc_start != self.proc_start:
            return False
        from attend.domain.sessions import sessions

        try:
            new = identity.authority(env=self.env, pid=os.getpid(), cwd=self.cwd)
        except AttendError:
            return False
        if not new.is_agent or new.id == self.sid or new.host_pid != self.host_pid:
            return False
        old = self.sid
        self.unname()
        sessions.follow_clear(self.spool, new)  # a no-op when the loop or a call has moved it already
        self.sid = new.id
        self.transcript = identity.transcript_path(self.env, self.sid, self.cwd)
        self.watcher.remove("new")
        self.spool.make_dir(L.SESSIONS, self.sid)
        self.watcher.add("session", self.spool.path(L.SESSIONS, self.sid), SESSION_EVENTS, named=True)
        self.report(f"attend mcp: socket conduit: session id changed ({old} → {self.sid}); serving the new id")
        return True

    def gather(self) -> None:
        """Leading edge: the first message after a quiet spell is posted at once, with whatever has
        landed by the claim (a burst is one post). Posts are POST_GAP apart: what arrives while a post
        is in flight (claimed, posted, awaiting the transcript's word) or within the gap after it
        joins the next post."""
        # An arrival wakes the wait early: sleep on until the gap has passed (or the server ends).
        while (gap := self.last_post + POST_GAP - time.monotonic()) > 0 and not self.stopping:
            self.watcher.wait(gap, wake=self._stop_r)

    # -- showing

    def show(self) -> bool:
        """Claim, post, wait for the transcript's word. False when the conduit stops serving."""
        from attend.conduits import drain
        from attend.domain.sessions import sessions

        posted = False
        try:
            with drain.claimed(self.spool, self.sid) as batch:
                if batch.busy:  # another conduit is mid-show: it shows these
                    self.watcher.wait(drain.SHOW_WAIT, wake=self._stop_r)
                    return True
                if not batch.signals:
                    return True
                enrolled = sessions.read_enrollment(self.spool, self.sid)
                arranged = drain.govern(self.spool, enrolled.origin if enrolled else "", batch)
                if not arranged.count:
                    return True  # only muted mail, now marked seen: a muted source never wakes the session
                mark = new_mark()
                # The model may answer a post before this thread reads the transcript's word: a bare
                # reply then looks there itself (verbs/reply.py), through this record.
                others = [s.id for s in batch.signals if s.from_id != self.sid and s.id not in batch.muted]
                if others:
                    record = client.posted_record(self.transcript, client.size(self.transcript), mark, max(others))
                    self.spool.write_state(record, "sessions", self.sid, STATE_POSTED)
                    posted = True
                self.deliver(compose(self.spool, batch, arranged, self.cfg, mark), mark)
                self.given_up = 0  # confirmed; reset before the claim's end marks the batch seen
        except Unshown as e:
            return self.give_up(e)
        finally:
            if posted:  # after the claim's end recorded last-inbound, or the batch was given up
                with contextlib.suppress(OSError, AttendError):
                    self.spool.remove("sessions", self.sid, STATE_POSTED)
        return True

    def give_up(self, e: Unshown) -> bool:
        """The batch stays in ``claimed/`` for the next conduit. Rest (not serving) until a turn has
        passed, or stop for the server's life: False then."""
        self.given_up += 1
        if e.final or self.given_up >= GIVE_UPS:
            tail = "" if e.final else f"; {GIVE_UPS} batches in a row given up, so it stopped for this server's life"
            self.reason = f"{e}{tail}; the messages stay for the next conduit"
            self.report(f"attend mcp: socket conduit: {self.reason}")
            return False
        why = (
            f"{e} (given up {self.given_up} of {GIVE_UPS} in a row); {RESTING}: the drain shows the "
            "messages, the waiter wakes the idle session meanwhile"
        )
        self.report(f"attend mcp: socket conduit: {why}")
        declined(self.spool, self.sid, why)  # replaces this process's name: the waiter serves
        self.let_go()
        self.named, self.rest, self.rest_note = False, 0, why
        self.rest_busy = False
        self.watcher.take_names("session")  # a turn end during the retries left the messages to us: not one
        return True

    def deliver(self, content: str, mark: str) -> None:
        """Post, and post again after a backoff while the client shows nothing, at most POST_TRIES
        posts. Returns once the transcript shows one of them; raises Unshown when none was shown."""
        # Every post of the batch is confirmed past this offset, read on from where the last look stopped.
        scan = client.Scan(self.transcript, client.size(self.transcript))
        folder = os.path.dirname(self.transcript) if self.transcript else None
        if folder is not None and client.is_dir(folder):
            self.watcher.add("transcript", folder, IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE)
        why = ""
        try:
            for attempt in range(POST_TRIES):
                if attempt:
                    self.report(f"attend mcp: socket conduit: {why}; posting again ({attempt + 1} of {POST_TRIES})")
                    if self.backoff(scan, mark, RETRY_AFTER[min(attempt, len(RETRY_AFTER)) - 1]):
                        return  # the client showed an earlier post late: posting again would repeat it
                try:
                    client.post(self.socket_path, self.token, again(content, attempt))
                except client.NoDoor as e:
                    raise Unshown(f"the post failed ({e})", final=True) from None
                except OSError as e:
                    why = f"the post failed ({e})"
                    continue
                self.last_post = time.monotonic()
                self.posts += 1
                try:
                    self.confirm(scan, mark)
                    return
                except Unshown as e:
                    if e.final:
                        raise
                    why = str(e)
            raise Unshown(f"the client showed none of {POST_TRIES} posts ({why})")
        finally:
            self.watcher.remove("transcript")

    def backoff(self, scan: client.Scan, mark: str, pause: float) -> bool:
        """Sleep ``pause`` (and the post gap) before a retry; True when the transcript shows the batch."""
        end = time.monotonic() + max(pause, self.last_post + POST_GAP - time.monotonic())
        while not client.confirmed_in(scan, mark):
            if self.stopping:
                raise Unshown("the server is ending before the client showed the post", final=True)
            if (left := end - time.monotonic()) <= 0:
                return False
            self.watcher.wait(left, wake=self._stop_r)
        return True

    def status(self) -> str | None:
        record = identity.read_record(hosts.DEFAULT.records_home(self.env), self.host_pid) if self.host_pid else None
        return record.status if record is not None else "gone"

    def confirm(self, scan: client.Scan, mark: str) -> None:
        """Return once the transcript shows the post; raise Unshown when it was dropped."""
        # The client's record says busy, idle or waiting (a prompt open); serve() watches it throughout.
        idle_since: float | None = None
        while True:
            if client.confirmed_in(scan, mark):
                return
            if self.stopping:
                raise Unshown("the server is ending before the client showed the post", final=True)
            state = self.status()
            if state == "gone" or (self.host_pid is not None and stat_fields(self.host_pid) is None):
                raise Unshown("the client ended before it showed the post", final=True)
            now = time.monotonic()
            if state not in ("idle", None):  # busy, or waiting on a prompt: the post is queued
                idle_since = None
            elif idle_since is None:
                idle_since = now
            if idle_since is not None and now - idle_since >= DROP_WAIT:
                raise Unshown(f"the client did not show the post within {DROP_WAIT:g} s of being idle")
            wait = IDLE_SLEEP if idle_since is None else idle_since + DROP_WAIT - now
            self.watcher.wait(max(0.01, wait), wake=self._stop_r)


def start(spool: Spool, env: Mapping[str, str], who: identity.Identity, cfg: Config | None) -> Conduit | str:
    """Start the conduit for ``who`` (a Claude session this server is a child of), or say why not."""
    if not who.is_agent or who.host_pid is None:
        return "no Claude session in this server's ancestry"
    conduit = Conduit(spool, env, who, cfg)
    reason = why_not(env, cfg, conduit.cwd, conduit.host)
    if reason:
        return reason
    if not conduit.transcript:
        return "the session's transcript cannot be found, so a post could not be confirmed"
    conduit.start()
    return conduit


def declined(spool: Spool, sid: str, reason: str) -> None:
    """Leave why the socket does not serve ``sid`` where status and doctor read it (``- <reason>``)."""
    with contextlib.suppress(OSError, AttendError):
        if spool.exists(L.SESSIONS, sid, L.ENROLLED):
            spool.write_state(f"- {reason}".encode(), L.SESSIONS, sid, STATE)


def declined_reason(spool: Spool, sid: str) -> str | None:
    try:
        text = (spool.read_text(L.SESSIONS, sid, STATE) or "").strip()
    except OSError:
        return None
    return text[2:] if text.startswith("- ") else None


def serving(spool: Spool, sid: str, sensor: bool, waiter: bool, env: Mapping[str, str], cwd: str | None) -> str:
    """Which conduit brings this session its mail between turn ends, and why (status, doctor; both run
    inside the session, so ``env`` is the session's and says whether the client gives a socket)."""
    pid = served_by(spool, sid)
    if sensor:
        also = f"; attend mcp (pid {pid}) serves the socket but leaves mail to the loop" if pid else ""
        return f"sensor loop: attend run is live under Monitor, and the other conduits leave mail to it{also}"
    if pid:
        return (
            f"socket: attend mcp (pid {pid}) posts each message to the client's inbox socket, "
            "mid-turn when busy, a new turn when idle"
        )
    why = declined_reason(spool, sid) or why_not(env, None, cwd) or "no attend mcp of this session serves it"
    if waiter:
        return f"waiter: attend wait --hook wakes the idle session (not the socket: {why})"
    return f"the turn-end drain only (not the socket: {why})"
