"""The waiting conduit: a waiter that costs no model turn and wakes the idle session when a message
arrives (docs/architecture/conduits.md). Which waiter a session gets is its host's ``wake``
(attend/hosts/base.py), and each form below refuses a session whose host names another:

- ``REWAKE``: ``attend wait --hook``, an ``asyncRewake`` Stop hook (Claude Code), described below;
- ``QUEUE``: ``attend wait --codex <id>`` (``queue_main``, ``QueueWaiter``), left behind by the Stop
  hook, which hands the wake to the host's ``wake_command`` (Codex's ``codex queue``);
- ``STEER``: ``attend wait --once`` (``once_main``, ``SteeringWaiter``), a background shell command the
  model keeps running, whose end the client turns into a turn (Gemini CLI, where ``wake_refusal``
  finds its settings allow it).

All three wait alike (inotify on ``new/``, the show lock and the drain's claim, the round ceiling);
they differ in how they start, how they prove their session, and where the wake's text goes.

The hook form: Claude Code runs it in the background at every turn end. It sleeps in an inotify read on the
session's ``new/`` (no polling) until a delivery lands, claims everything pending under the show
lock with the drain's own claim (``drain.claimed``), writes the drain's hook reason on stderr and
exits 2: the client starts a new turn with that text. Otherwise it exits 0, silently:

- when the sensor loop is live (the loop delivers), or an ``attend mcp`` of the session serves its
  inbox socket (``sessions/<sid>/socket``), or ``conduits.wake`` is ``off``, or the session is not
  enrolled, or its host's wake is not ``REWAKE``;
- at once in a headless session (``claude -p``, the Agent SDK: the client marks it unattended),
  which the client would otherwise keep running for as long as this hook waits; unless
  ``conduits.headless_wait`` opts in, and then for that many seconds;
- when a newer waiter of the same session takes over (``sessions/<sid>/waiter`` names the newest;
  an older one sees it change and leaves), so two waiters never both wake the model for one message;
- when its Claude process ends (a pidfd wakes it), or its own deadline, ``MARGIN`` before the
  hook's ``timeout``, comes;
- on any failure of its own (one stderr line, one diagnostic-log line): it never wakes a session
  with an error of its own making.

It never wakes in a loop: consecutive wakes that each come soon after the turn they follow are
counted (``wake-rounds``), and past the drain's ceiling the wake is held until ``LOOP_WINDOW`` after
the turn, when it is no longer quick: a slower wake, never none (an idle session has no next turn end
to wait for, so giving up would leave the messages with no conduit).

While keepwarm is armed (``attend keepwarm on``) and no loop is live, the same wait is timed to
``keepwarm.idle_seconds`` after the transcript's last write: then it wakes the session once with the
keepwarm sensor's own line (its once-per-stretch state in ``sessions/<sid>/keepwarm``, shared with the
loop), exit 2.

While it waits it holds only the standard library, the gate and inotify (attend.conduits.watch):
the drain (and the domain it imports) is imported when there is something to show.
"""

from __future__ import annotations

import contextlib
import os
import select
import time
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any

from attend import hosts, identity, safejson
from attend import layout as L
from attend.conduits.watch import ARRIVALS, IN_CLOSE_WRITE, IN_CREATE, IN_DELETE, IN_MOVED_TO, Watcher
from attend.errors import IdentityError, SpoolError
from attend.hosts.base import QUEUE, REWAKE, STEER
from attend.procfs import stat_fields
from attend.spool import Spool

if TYPE_CHECKING:
    from attend.domain.settings.config import Config

HOOK_TIMEOUT = 86400  # seconds: the entry's "timeout" in settings/hooks.json (tests/test_waiter.py checks)
MARGIN = 120.0  # the waiter leaves this long before the client would kill it mid-show
DRAIN_GRACE = 35.0  # the drain's own timeout is 30 s: past this, its verdict is not coming
LOOK_EVERY = 600.0  # seconds between looks without an event (the loop's lock, the deadline)
LOOP_WINDOW = 30.0  # a wake this soon after the turn it follows continues a chain of wakes
MAX_WAKES = 5  # as drain.MAX_ROUNDS: consecutive quick wakes before the waiter leaves them to a turn end
WAITER = L.WAITER  # sessions/<sid>/waiter: "<pid> <procStart>" of the newest waiter
WAKE_ROUNDS = L.WAKE_ROUNDS  # sessions/<sid>/wake-rounds: the chain of quick wakes
STATE_EVENTS = IN_MOVED_TO | IN_CREATE | IN_CLOSE_WRITE | IN_DELETE
WAKE = 2  # the exit code that makes the client start a turn with our stderr
QUIET_EXIT = 0


def me() -> str:
    """This process as the waiter file names it: pid and start time, so a reused pid is not us."""
    fields = stat_fields(os.getpid())
    return f"{os.getpid()} {fields[19] if fields else '?'}"


def named(spool: Spool, sid: str, name: str) -> tuple[int, str] | None:
    """(pid, procStart) as ``sessions/<sid>/<name>`` says them; None for anything else. Bounded before
    conversion: the file is anyone's to write."""
    try:
        text = spool.read_text(L.SESSIONS, sid, name)
    except OSError:
        return None
    pid, _, start = (text or "")[:64].strip().partition(" ")
    number = L.small_int(pid, 0, 7)  # pid_max is at most 2^22
    return (number, start) if number > 0 else None


def live_pid(spool: Spool, sid: str, name: str) -> int | None:
    """The process ``sessions/<sid>/<name>`` names (``<pid> <procStart>``), when it still runs and holds
    its pid's slot of the file's lock (``layout.STATE_LOCKS``): the file only points, the lock is the
    evidence. A file naming any other live process (a planted ``sleep``) names nobody."""
    got = named(spool, sid, name)
    if got is None:
        return None
    pid, start = got
    if not spool.slot_held(L.SESSIONS, sid, L.STATE_LOCKS[name], slot=pid):
        return None
    fields = stat_fields(pid)
    return pid if fields is not None and fields[0] != "Z" and fields[19] == start else None


def hold_slot(spool: Spool, sid: str, name: str) -> int | None:
    """Hold this process's slot of ``name``'s lock (the handle; close it to let go), before the process
    names itself in ``name``."""
    with contextlib.suppress(OSError, SpoolError):
        return spool.hold_slot(L.SESSIONS, sid, L.STATE_LOCKS[name], slot=os.getpid())
    return None


def waiter_live(spool: Spool, sid: str) -> bool:
    """Whether the newest waiter of ``sid`` is running (for status and doctor)."""
    return live_pid(spool, sid, WAITER) is not None


def load_config(env: Mapping[str, str]) -> Config:
    from attend.domain.settings import config  # yaml is imported only when a config file exists

    return config.load(env)


def wake_mode(env: Mapping[str, str]) -> str:
    return str(load_config(env).get("conduits.wake"))


class Waiter:
    def __init__(
        self,
        spool: Spool,
        sid: str,
        host_pid: int | None,
        stop_active: bool,
        err: IO[str],
        tag: str = "",
        cfg: Config | None = None,
        transcript: str | None = None,
        stay: float | None = None,
    ) -> None:
        """``stay``: seconds a headless session that opted in waits (None: as long as the hook may)."""
        self.tag = tag  # this turn end's event tag, to find the drain's verdict on it
        self.cleared = not tag  # the drain of this turn end did not block (or is not coming)
        self.spool = spool
        self.sid = sid
        self.host_pid = host_pid
        self.stop_active = stop_active
        self.err = err
        self.me = me()
        self.started = time.monotonic()
        limit = HOOK_TIMEOUT - MARGIN
        self.deadline = self.started + (limit if stay is None else min(limit, stay))
        self.watcher = Watcher()
        self.pidfd: int | None = None
        self.cfg = cfg  # None: no keepwarm from this waiter
        self.transcript = transcript
        self.warm_at: float | None = None  # epoch seconds: when keepwarm wants a look
        self.hold: float | None = None  # monotonic: past the ceiling of quick wakes, no wake before this
        self.headless = stay is not None  # an opted-in headless run: the socket cannot keep it alive, this does
        self.slot: int | None = None  # the handle on this process's slot of the waiter lock

    def report(self, line: str) -> None:
        self.err.write(line + "\n")
        self.err.flush()
        with contextlib.suppress(Exception):
            self.spool.log(line)

    def mine(self) -> bool:
        """Whether this is still the session's waiter: the file names it, or names nobody who holds its
        slot (a newer waiter holds its slot before it names itself; a planted number does not)."""
        try:
            if (self.spool.read_text(L.SESSIONS, self.sid, WAITER) or "").strip() == self.me:
                return True
        except OSError:
            return False
        return live_pid(self.spool, self.sid, WAITER) is None

    def loop_live(self) -> bool:
        """The loop delivers, or an ``attend mcp`` of the session posts to its inbox socket (but a
        headless run that opted in to waiting is kept alive by this waiter alone: it serves then)."""
        socket = not self.headless and live_pid(self.spool, self.sid, L.SOCKET) is not None
        return socket or self.spool.is_held(L.SESSIONS, self.sid, L.RUN_LOCK)

    def pending(self) -> bool:
        return bool(self.spool.listing(self.sid, L.NEW) or self.spool.listing(self.sid, L.CLAIMED))

    def host_gone(self) -> bool:
        if self.pidfd is None:
            return False
        ready, _, _ = select.select([self.pidfd], [], [], 0)
        return bool(ready)

    def start(self) -> bool:
        """Take over from any older waiter and set up the watches. False: step aside now."""
        if self.watcher.fallback_reason:  # polling would cost a wake-up a second for hours
            self.report(f"attend wait: {self.watcher.fallback_reason}; not waiting (the drain delivers at turn end)")
            return False
        self.spool.check()
        self.spool.make_maildir(self.sid)
        # The newest waiter is named before anything else, so an older one leaves even if this one
        # then steps aside for the loop; it holds its slot first, the evidence the older one asks for.
        self.slot = hold_slot(self.spool, self.sid, WAITER)
        self.spool.write_state(self.me.encode(), L.SESSIONS, self.sid, WAITER)
        return self.watch()

    def watch(self) -> bool:
        """The watches on ``new/`` and the session's state, and the pidfd of the client."""
        if not self.watcher.add("new", self.spool.path(L.SESSIONS, self.sid, L.NEW), ARRIVALS):
            return False
        self.watcher.add("state", self.spool.path(L.SESSIONS, self.sid), STATE_EVENTS)
        if self.host_pid is not None:
            try:
                self.pidfd = os.pidfd_open(self.host_pid)
            except ProcessLookupError:
                return False  # the client is already gone
            except (OSError, AttributeError):
                self.pidfd = None  # no pidfd here: the client's end is seen at the next look
        self.warm_at = self.keepwarm_due()
        return True

    def keepwarm_due(self) -> float | None:
        if self.cfg is None or not self.spool.present((L.SESSIONS, self.sid), (L.KEEPWARM,))[0]:
            return None  # not armed: nothing more is imported than without keepwarm
        from attend.domain.attention import keepwarm

        return keepwarm.due_at(self.spool, self.sid, self.transcript, self.cfg, time.time())

    def timeout(self, left: float) -> float:
        """How long the next wait may sleep: to the deadline, the next look, or keepwarm's time."""
        wait = min(left, LOOK_EVERY)
        if self.hold is not None:
            wait = min(wait, max(0.0, self.hold - time.monotonic()) + 0.01)
        if self.warm_at is not None:
            wait = min(wait, max(0.0, self.warm_at - time.time()) + 0.01)
        return wait

    def keepwarm(self) -> int | None:
        """Keepwarm's time has come: WAKE with its line, QUIET_EXIT when refused, None to wait on."""
        from attend.conduits.sensors.builtin import keepwarm_line

        assert self.cfg is not None  # warm_at is only ever set with a config
        line = keepwarm_line(self.spool, self.sid, self.transcript, self.cfg, time.time())
        if line is None:  # a turn since, too small a context, or disarmed: look again only if later
            due = self.keepwarm_due()
            self.warm_at = due if due is not None and due > time.time() else None
            return None
        refusal = self.next_wake()
        if refusal:
            self.report(f"attend wait: {refusal}; no keepwarm wake this stretch")
            return QUIET_EXIT
        self.err.write(line + "\n")
        self.err.flush()
        return WAKE

    def run(self) -> int:
        try:
            if not self.start():
                return QUIET_EXIT
            return self.wait()
        finally:
            self.watcher.close()
            if self.pidfd is not None:
                os.close(self.pidfd)
            if self.mine():  # status shows no waiter once the newest has gone
                with contextlib.suppress(OSError):
                    self.spool.remove(L.SESSIONS, self.sid, WAITER)
            if self.slot is not None:
                os.close(self.slot)
                self.slot = None

    def drain_blocked(self) -> bool:
        """Whether the drain run by this same turn end blocked. The client holds the block's
        continuation until every asyncRewake hook of the event has exited (measured: a 6 s hook held
        it 6 s), so then this waiter leaves at once; a new one starts at the next turn end. Until the
        drain's verdict is in (at most DRAIN_GRACE), nothing is claimed here: the drain shows it."""
        if self.cleared:
            return False
        try:
            text = self.spool.read_text(L.SESSIONS, self.sid, L.DRAINED) or ""
        except OSError:
            text = ""
        tag, _, verdict = text.strip().partition(" ")
        if tag == self.tag:
            self.cleared = verdict != "block"
            return verdict == "block"
        self.cleared = time.monotonic() - self.started > DRAIN_GRACE
        return False

    def wait(self) -> int:
        while True:
            if self.host_gone() or not self.mine() or self.loop_live() or self.drain_blocked():
                return QUIET_EXIT
            if not self.cleared:
                self.watcher.wait(max(0.0, DRAIN_GRACE - (time.monotonic() - self.started)) + 0.01, wake=self.pidfd)
                continue
            if self.host_pid is not None and self.pidfd is None and stat_fields(self.host_pid) is None:
                return QUIET_EXIT
            left = self.deadline - time.monotonic()
            if left <= 0:
                return QUIET_EXIT
            if self.pending():
                if self.hold is not None and time.monotonic() < self.hold:
                    self.watcher.wait(self.timeout(left), wake=self.pidfd)
                    continue
                # Leading edge: the first arrival wakes the session at once, with whatever has landed
                # by the claim (a burst is one wake); what lands after the claim waits for the turn
                # the wake starts (its drain, or the socket mid-turn).
                code = self.deliver()
                if code is not None:
                    return code
                # Another conduit was mid-show and shows them: wait for the next arrival, not in a spin.
                self.watcher.wait(self.timeout(left), wake=self.pidfd)
                continue
            if self.warm_at is not None and time.time() >= self.warm_at:
                code = self.keepwarm()
                if code is not None:
                    return code
                continue
            self.watcher.wait(self.timeout(left), wake=self.pidfd)

    def next_wake(self) -> str | None:
        """None when this wake may go ahead; else why not (a chain of quick wakes is a loop)."""
        previous = 0
        if self.stop_active and time.monotonic() - self.started < LOOP_WINDOW:
            try:
                text = self.spool.read_text(L.SESSIONS, self.sid, WAKE_ROUNDS)
            except OSError:
                text = None
            previous = L.small_int(text)
        rounds = previous + 1
        try:
            self.spool.write_state(str(rounds).encode(), L.SESSIONS, self.sid, WAKE_ROUNDS)
        except (OSError, SpoolError):
            if previous:
                return "cannot record the wake round"
        if rounds > MAX_WAKES:
            return f"wake round {rounds} > {MAX_WAKES} in a row, each within {LOOP_WINDOW:g} s of the last turn"
        return None

    def deliver(self) -> int | None:
        """Claim and show what is pending: WAKE once shown, QUIET_EXIT to leave it, None to wait on."""
        from attend.conduits import drain  # the heavy part, only with something to show
        from attend.domain.sessions import sessions

        refusal = self.next_wake()
        if refusal:
            # Held, not dropped: by then the wake is no longer quick, and the chain starts again. Said
            # in the log only: what this hook writes on stderr before a wake is shown to the model.
            self.hold = self.started + LOOP_WINDOW
            with contextlib.suppress(Exception):
                self.spool.log(f"attend wait: {refusal}; the wake waits until {LOOP_WINDOW:g} s after the turn")
            return None
        with drain.claimed(self.spool, self.sid) as batch:
            if batch.busy:
                return None
            for warning in batch.warnings:
                self.spool.log(f"attend wait: {warning}")
            if not batch.signals:
                return None if not batch.note else QUIET_EXIT  # nothing to wake for; a note waits for the drain
            enrolled = sessions.read_enrollment(self.spool, self.sid)
            arranged = drain.govern(self.spool, enrolled.origin if enrolled else "", batch)
            if not arranged.count:
                return None  # only muted mail, now marked seen: a muted source never wakes the session
            self.err.write(
                self.shown(drain.with_reheat(self.spool, batch, drain.render_reason(batch, arranged), self.cfg))
            )
            self.err.write("\n")
            self.err.flush()
        return WAKE

    def shown(self, reason: str) -> str:
        """The wake's text as this waiter's client shows it to the model (here: as it is)."""
        return reason


def _payload(data: bytes) -> dict[str, Any]:
    try:
        raw = safejson.loads(data or b"{}")
    except ValueError:
        return {}
    return raw if isinstance(raw, dict) else {}


def hook_main(data: bytes, env: Mapping[str, str], err: IO[str]) -> int:
    """Entry for the hook form, the Stop payload already read. 2 only when it showed messages."""
    spool: Spool | None = None
    try:
        payload = _payload(data)
        sid = safejson.text_field(payload, "session_id", 128)
        if sid is None or not L.is_session_id(sid):
            return QUIET_EXIT
        spool = Spool(L.default_root(env))
        enrolled, optout = spool.present((L.SESSIONS, sid), (L.ENROLLED, L.OPTOUT))
        if not enrolled or optout:
            return QUIET_EXIT
        # The authority rule's hook form: a waiter waits only for the session that runs it. A payload
        # naming another (``echo '{"session_id": …}' | attend wait --hook`` from a session's shell)
        # is refused before anything is claimed, displaced or read.
        who = identity.authority(claimed=sid, env=env, hook=True)
        host = hosts.of(who.host)
        if host.wake != REWAKE:  # the session's client wakes it another way (attend wait --codex, --once)
            return QUIET_EXIT
        host_pid = who.host_pid
        cfg = load_config(env)
        if str(cfg.get("conduits.wake")) == "off":
            return QUIET_EXIT
        stay = None
        if host.unattended(env, host_pid):  # claude -p, the SDK: it must end after its last turn
            stay = float(cfg.get("conduits.headless_wait"))
            if stay <= 0:
                return QUIET_EXIT
        stop_active = payload.get("stop_hook_active") is True
        path = None
        if spool.present((L.SESSIONS, sid), (L.KEEPWARM,))[0]:  # armed (or was): the loop's transcript
            from attend.domain.sessions import transcript

            cwd = safejson.text_field(payload, "cwd")
            path = transcript.of_host_process(env, sid, host_pid, cwd or os.getcwd())
        return Waiter(spool, sid, host_pid, stop_active, err, L.event_tag(data), cfg, path, stay).run()
    except IdentityError as e:
        with contextlib.suppress(Exception):
            err.write(f"attend wait: {e}\n")
            if spool is not None:
                spool.log(f"attend wait: {e}")
        return QUIET_EXIT
    except Exception as e:  # never wake the session with an error of our own
        line = f"attend wait: the waiter failed ({type(e).__name__}: {e}); messages stay pending for the next conduit"
        with contextlib.suppress(Exception):
            err.write(line + "\n")
            if spool is not None:
                spool.log(line)
        return QUIET_EXIT


class QueueWriter:
    """Where a queue waiter's wake goes: the host's ``wake_command`` with the text last (Codex's
    ``codex queue --thread <id> --message <text>``), run when the waiter flushes, still under the show
    lock, so a failed queue raises before anything is marked seen and the messages stay for the next
    conduit."""

    def __init__(self, command: list[str], env: Mapping[str, str]) -> None:
        self.argv = list(command)
        self.env = dict(env)
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        text, self.text = self.text.rstrip("\n"), ""
        if not text:
            return
        import subprocess

        done = subprocess.run(
            [*self.argv, text], env=self.env, stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False
        )
        if done.returncode != 0:
            why = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit {done.returncode}"]
            name = " ".join([os.path.basename(self.argv[0]), *self.argv[1:2]])  # "codex queue"
            raise OSError(f"{name} failed: {why[0][:200]}")


class QueueWaiter(Waiter):
    """The waiter for an idle session of a ``QUEUE`` host (a Codex thread): its wake is the host's
    queue command (``QueueWriter``), and its own notes go to the log, never to the model."""

    def __init__(self, spool: Spool, sid: str, host_pid: int | None, out: IO[str], cfg: Config | None = None) -> None:
        # True: every wake counts toward the chain of quick wakes. A queued turn is a new turn to the
        # client (Codex's Stop payload says stop_hook_active false), so nothing else would tell that
        # this turn end follows a wake: two threads answering each other would wake each other forever.
        super().__init__(spool, sid, host_pid, True, out, "", cfg)

    def report(self, line: str) -> None:
        with contextlib.suppress(Exception):
            self.spool.log(line)


def queue_main(sid: str, env: Mapping[str, str], out: IO[str]) -> int:
    """``attend wait --codex <id>``, started by a ``QUEUE`` host's Stop hook (Codex's, ``stop_and_queue``
    in attend/conduits/hosthooks.py). It proves its session while the hook, its parent, still links it
    to the host's process serving the session, takes the host's ``wake_command``, says ``ready``, and
    waits. 0 always: nothing it does is an answer to anyone."""
    spool: Spool | None = None
    try:
        spool = Spool(L.default_root(env))
        who = identity.resolve(payload_sid=sid, env=env)
        host = hosts.of(who.host)
        proved = who.is_agent and host.wake == QUEUE and who.id == sid and L.is_session_id(sid)
        wake = host.wake_command(os.getpid(), sid) if proved else None
        if wake is None:
            spool.log(f"attend wait --codex {sid[:80]}: no session here whose host queues turns; not waiting")
            return QUIET_EXIT
        host_pid, command = wake
        out.write("ready\n")
        out.flush()
        with contextlib.suppress(OSError):  # the hook stops reading; stderr is /dev/null (hosthooks)
            os.dup2(2, 1)
        cfg = load_config(env)
        if str(cfg.get("conduits.wake")) == "off":
            return QUIET_EXIT
        writer = QueueWriter(command, env)
        QueueWaiter(spool, sid, host_pid, writer, cfg).run()  # type: ignore[arg-type]
        return QUIET_EXIT  # its wake was the queued turn, not this exit
    except Exception as e:
        with contextlib.suppress(Exception):
            if spool is not None:
                spool.log(f"attend wait --codex: the waiter failed ({type(e).__name__}: {e})")
        return QUIET_EXIT


ONCE_DEADLINE = float(HOOK_TIMEOUT)  # seconds `attend wait --once` waits at most (a day, less MARGIN)
FOLLOW_MAX = 8  # /clear moves one waiter follows before it ends (each is a new id for the same process)
STANDBY_LOOK = 30.0  # seconds between a waiting-behind waiter's looks at a first one killed without a trace
NAME_WAIT = 2.0  # seconds a waiter waits for the show lock to name itself; a conduit mid-show holds it
ONCE_AGAIN = "to be woken again while idle, start `attend wait --once` again (run_shell_command, is_background: true)"
STEERED = "[attend] "


class SteeringWaiter(Waiter):
    """``attend wait --once``: the waiter of an idle Gemini CLI session, a background shell command the
    model starts. Gemini, where its settings enable steering, turns the command's end into a turn whose
    text is the command's output, its whitespace folded into single spaces ("User steering update").
    So this waiter ends only when it has something to say: the messages, or why it stopped. A second
    one waits behind the first (never displacing it: that end would be a wake with nothing in it) and
    takes over when the first has ended. Its notes go to the log, its wake to stdout."""

    def __init__(self, spool: Spool, sid: str, host_pid: int, out: IO[str]) -> None:
        super().__init__(spool, sid, host_pid, True, out, "", None, None, ONCE_DEADLINE)
        # True: every wake counts toward the chain of quick wakes, from when the model started this one.
        self.headless = False  # the deadline above is this waiter's own, not a headless opt-in
        self.mark = f"[attend:{os.urandom(3).hex()}]"  # unknown to every sender: the folded text keeps it
        self.why = ""
        self.follow: str | None = None  # the id a /clear moved this session to

    def moved(self) -> str | None:
        """The id a ``/clear`` moved this session to (its ``moved-to`` pointer), if it moved."""
        try:
            text = (self.spool.read_text(L.SESSIONS, self.sid, L.MOVED_TO) or "").strip()
        except OSError:
            return None
        return text if L.is_session_id(text) and text != self.sid else None

    def mine(self) -> bool:
        return self.moved() is None and super().mine()

    def report(self, line: str) -> None:
        with contextlib.suppress(Exception):
            self.spool.log(line)

    def start(self) -> bool:
        if self.watcher.fallback_reason:
            self.why = f"{self.watcher.fallback_reason}, and this waiter does not poll"
            return False
        self.spool.check()
        self.spool.make_maildir(self.sid)
        if not self.watch():
            self.why = "its watches could not be set"
            return False
        while True:
            with self.spool.show_lock(self.sid, timeout=NAME_WAIT) as held:
                # Looked at and named under the show lock: two waiters started together cannot both
                # find none and both name themselves (the one displaced would end in an empty turn).
                if held and live_pid(self.spool, self.sid, WAITER) in (None, os.getpid()):
                    if self.slot is None:
                        self.slot = hold_slot(self.spool, self.sid, WAITER)
                    self.spool.write_state(self.me.encode(), L.SESSIONS, self.sid, WAITER)
                    return True
            if (moved := self.moved()) is not None:
                self.follow = moved
                return False
            left = self.deadline - time.monotonic()
            if self.host_gone() or left <= 0 or (self.pidfd is None and stat_fields(self.host_pid or 0) is None):
                self.why = "its deadline came while another waiter waited" if left <= 0 else ""
                return False
            self.watcher.wait(min(left, STANDBY_LOOK if held else NAME_WAIT), wake=self.pidfd)

    def wait(self) -> int:
        code = super().wait()
        if code == QUIET_EXIT and not self.host_gone():
            if (moved := self.moved()) is not None:
                self.follow = moved  # a /clear: the same gemini process, a new id (once_main follows)
                if Waiter.mine(self):
                    with contextlib.suppress(OSError):
                        self.spool.remove(L.SESSIONS, self.sid, WAITER)
            elif self.loop_live():
                self.why = "the sensor loop or attend's inbox socket delivers this session's messages now"
            elif not self.mine():
                self.why = "another waiter took over"
            else:
                self.why = f"it waited its limit with no message; {ONCE_AGAIN}"
        return code

    def shown(self, reason: str) -> str:
        """The reason with a mark no sender knows at the start of each of attend's own lines: Gemini
        folds the text onto one line, so the drain's indented body lines no longer set a peer's words
        apart from attend's headers; the mark does."""
        out = []
        for i, line in enumerate(reason.split("\n")):
            if not line or line[0].isspace():
                out.append(line)  # a body line: the drain indents every one
            elif i == 0 and line.startswith(STEERED):  # the drain's header: it says peers wrote these
                out.append(
                    f"{self.mark} {line[len(STEERED) :].rstrip(':')} (each of attend's own lines starts {self.mark}):"
                )
            else:
                out.append(f"{self.mark} {line}")
        out.append(f"{self.mark} {ONCE_AGAIN}")
        return "\n".join(out)


def once_refusal(spool: Spool, who: identity.Identity, env: Mapping[str, str]) -> str | None:
    """Why ``attend wait --once`` does not wait for ``who`` (a session), or None."""
    host = hosts.of(who.host)
    if host.wake != STEER:
        return (
            "it wakes an idle session whose client turns a finished background command into a turn "
            f"(Gemini CLI's), and this is a {who.host} session"
        )
    if who.resolved_by != "ancestry" or who.host_pid is None:
        return "the session's gemini process is not among this process's ancestors"
    enrolled, optout = spool.present((L.SESSIONS, who.id), (L.ENROLLED, L.OPTOUT))
    if optout:
        return "this session opted out of attend"
    if not enrolled:
        return "this session is not enrolled yet: attend join <channel> first, then start it again"
    if wake_mode(env) == "off":
        return "conduits.wake is off in attend's config"
    return host.wake_refusal(who.host_pid, env)


def once_main(env: Mapping[str, str], out: IO[str], err: IO[str]) -> int:
    """``attend wait --once``, run by a Gemini session's model as a background shell command: for the
    session the authority rule finds in its ancestry, and no other. 0 when it showed messages or
    stopped (saying why); 1 refused (one line); 2 run by someone who is not a session."""
    spool: Spool | None = None
    try:
        who = identity.authority(env=env)
        if not who.is_agent:
            err.write("attend: attend wait --once serves a Gemini CLI session (its shell tool, in the background)\n")
            return 2
        spool = Spool(L.default_root(env))
        refusal = once_refusal(spool, who, env)
        if refusal is not None:
            err.write(f"attend wait --once: not waiting: {refusal}\n")
            return 1
        assert who.host_pid is not None  # once_refusal checked it
        sid = who.id
        for _ in range(FOLLOW_MAX):
            waiter = SteeringWaiter(spool, sid, who.host_pid, out)
            code = waiter.run()
            if code == WAKE or waiter.follow is None:
                break
            # After a /clear the session's id is the one the ancestry proves now (the SessionStart
            # hook rewrote the gemini process's record), and the spool moved to it: wait for that one.
            now = identity.authority(env=env)
            if now.id != waiter.follow or now.host_pid != who.host_pid:
                return 0
            sid = now.id
        if code != WAKE and waiter.why:
            out.write(f"{waiter.mark} attend wait --once stopped: {waiter.why}\n")
            out.flush()
        return 0
    except IdentityError as e:
        err.write(f"attend wait --once: {e}\n")
        return 1
    except Exception as e:
        line = f"attend wait --once: the waiter failed ({type(e).__name__}: {e}); messages stay pending"
        with contextlib.suppress(Exception):
            err.write(line + "\n")
            if spool is not None:
                spool.log(line)
        return 1


USAGE = (
    "attend wait runs as Claude Code's asyncRewake Stop hook (attend wait --hook, which attend install wires) "
    "or in a Gemini CLI session's background shell (attend wait --once)"
)


def main(argv: list[str], env: Mapping[str, str], err: IO[str]) -> int:
    """``attend wait …`` from the console entry, before click is imported."""
    if len(argv) == 2 and argv[0] == "--codex":
        import sys

        return queue_main(argv[1], env, sys.stdout)
    if argv == ["--once"]:
        import sys

        return once_main(env, sys.stdout, err)
    if argv != ["--hook"]:
        err.write(f"attend: {USAGE}\n")
        from attend.conduits import fastdrain

        # Exit 2 is a wake to a client that runs this as a REWAKE hook: under one a misuse is a plain failure.
        rewake = any(h.inside(env) for h in hosts.HOSTS if h.wake == REWAKE) or env.get(fastdrain.HOST_PID_ENV)
        return 1 if rewake else 2
    from attend.conduits import fastdrain

    return hook_main(fastdrain.read_payload(), env, err)
