"""``attend relay``: the long-lived client that carries this host's outbox to the server and the server's
records for this host into the spool, and keeps presence (docs/architecture/relay.md).

One asyncio loop and one worker thread: every spool write (and its fsync) runs in the thread, so a
slow disk never holds up a fetch or a publish; a fetched batch is acknowledged after its writes are
durable. nats-py is imported here and in ``check`` only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from attend import identity, layout, safejson
from attend.domain.core import outcomes, rooms
from attend.domain.messages import channels, remote
from attend.domain.sessions import humans, sessions
from attend.errors import AttendError
from attend.layout import OUTBOX, RELAY, RELAY_LOCK, RELAY_ON, RELAY_STATE
from attend.relay import store, subjects
from attend.relay.settings import RelaySettings, connect_options
from attend.spool import Spool

BATCH = 64  # records fetched at once, written, then acknowledged together
WINDOW = 64  # publishes in flight at once, while every publish is being stored
WINDOW_BYTES = 1 << 20  # a window's records at most: under nats-py's 2 MiB buffer, so one write carries it
NAK_DELAY = 2.0  # seconds before an arrival that could not be written now is delivered again
FETCH_WAIT = 60.0  # seconds a fetch waits for records (it returns as soon as one comes)
STOP_WAIT = 5.0  # seconds the relay's tasks have to end once cancelled at a stop
POLL = 30.0  # seconds between outbox looks besides inotify (a missed event, a reconnect)
PRUNE_EVERY = 3600.0
SPOOL_ID = "id"  # relay/id: this spool's own random id, in its relay's presence key <host>.relay
PRESENCE_MAX = 8000  # bytes of one presence entry this relay puts (another host reads at most 8 KiB)


class RelayError(AttendError):
    pass


class Relay:
    def __init__(self, spool: Spool, s: RelaySettings, sessions_dir: str, warn: Callable[[str], None]) -> None:
        self.spool = spool
        self.s = s
        self.me = s.host
        self.sessions_dir = sessions_dir
        self.warn = warn
        self.nc: Any = None
        self.js: Any = None
        self.kv: Any = None
        self.stopping = asyncio.Event()
        self.wake = asyncio.Event()
        self.linked = asyncio.Event()  # connected now (a publish is never queued for a reconnect's replay)
        self.steady = False  # the last publish was stored and no disconnect since: a full window may go
        self.mirror: dict[str, dict[str, object]] = {}
        self.published: set[str] = set()  # presence keys put by this relay
        self.errors: list[str] = []
        self.denied = False  # the server refused a permission or the credentials: exit 2
        self.refused = asyncio.Event()  # the credentials
        self.said: set[str] = set()
        self.lost = False  # the connection closed for good under it
        self.taking: set[asyncio.Future[bool]] = set()  # fetched batches being written and acknowledged
        self.stuck: list[str] = []  # tasks that had not ended STOP_WAIT after their cancel, at the stop
        self.watching: asyncio.Task[None] | None = None
        self.rewatch = False
        self.spool_id = ""
        self.repo_keys: dict[str, str | None] = {}  # a lease root -> its repository's key (tree.repo_key)

    # ------------------------------------------------------------------ start, stop

    async def run(self) -> int:
        import nats

        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stopping.set)
        self.spool.make_dir(RELAY, OUTBOX, layout.NEW)
        self.spool.make_dir(RELAY, OUTBOX, layout.CUR)
        self.spool.make_dir(RELAY, layout.RELAY_SEEN)
        self.spool.make_dir(RELAY, store.LANDED)
        self.spool.create_linked(os.urandom(8).hex().encode(), RELAY, SPOOL_ID)  # once per spool
        self.spool_id = (self.spool.read_text(RELAY, SPOOL_ID) or "").strip()
        was_on = self.spool.exists(RELAY, RELAY_ON)
        self.spool.write_state(json.dumps({"host": self.me}).encode(), RELAY, RELAY_ON, durable=True)
        self._state("connecting")
        while not self.stopping.is_set():
            # nats-py keeps trying a server that is not there yet; a refusal of the credentials ends it.
            connecting = asyncio.ensure_future(
                nats.connect(
                    **connect_options(self.s, self._on_error),
                    disconnected_cb=self._disconnected,
                    reconnected_cb=self._reconnected,
                    closed_cb=self._closed,
                )
            )
            ends = [asyncio.ensure_future(e.wait()) for e in (self.refused, self.stopping)]
            await asyncio.wait([connecting, *ends], return_when=asyncio.FIRST_COMPLETED)
            for end in ends:
                end.cancel()
            if not connecting.done():
                connecting.cancel()
                with contextlib.suppress(BaseException):
                    await connecting
                break
            try:
                self.nc = connecting.result()
                break
            except Exception as e:  # no server yet: keep trying, as the reconnects will
                self._state(f"no server ({e.__class__.__name__}); retrying")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.stopping.wait(), 1.0)
        if self.refused.is_set():
            self._state("refused")
            if not was_on:  # it never served: sends stay local, as before it ran
                self.spool.remove(RELAY, RELAY_ON)
            return 2
        if self.stopping.is_set() or self.nc is None:
            return 0
        self.js = self.nc.jetstream(timeout=5)
        problem = await self._check_consumers() or await self._other_relay()
        if problem:
            self.warn(f"attend relay: {problem}")
            await self.nc.close()
            if not was_on:  # it never served: sends stay local, as before it ran
                self.spool.remove(RELAY, RELAY_ON)
            return 2 if self.denied else 1
        self._state("connected")
        self.linked.set()
        self.wake.set()  # what queued while no relay ran goes out now, not at the first look
        self.warn(f"attend relay: {self.me} connected to {self.nc.connected_url.netloc}")
        tasks = [
            asyncio.create_task(self._outbound()),
            asyncio.create_task(self._inbound(subjects.direct(self.me))),
            asyncio.create_task(self._inbound(subjects.bcast(self.me))),
            asyncio.create_task(self._presence()),
            asyncio.create_task(self._watch_outbox()),
        ]
        await self.stopping.wait()
        if self.taking:  # a batch being written: let it finish and be acknowledged
            await asyncio.wait(self.taking, timeout=10)
        if self.watching is not None:  # the presence watch, a task of the presence loop's making
            tasks.append(self.watching)
        for task in tasks:
            task.cancel()
        # Each one's end retrieved (no traceback at exit), within a bound: a task that outlives its
        # cancel (one seen under load, inside the nats client) must not keep the relay from ending.
        done, pending = await asyncio.wait(tasks, timeout=STOP_WAIT)
        for task in done:
            if not task.cancelled():
                task.exception()
        self.stuck = [t.get_name() for t in pending]
        await self._withdraw_presence()
        # Flush, then close; not nats-py's drain: the tasks reading the subscriptions are cancelled by
        # now, so a subscription still holding a fetched message never empties its queue, drain waits out
        # its timeout, and the gather it leaves behind is reported at exit ("exception was never
        # retrieved"). What a stop owes the server is the last acks, which the flush sends; a message
        # fetched and not acknowledged is redelivered to the next run.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.nc.flush(), 5)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.nc.close(), 5)
        self._state("stopped")
        return 2 if self.denied else 1 if self.lost else 0

    async def _check_consumers(self) -> str | None:
        """The consumers exist with exactly their one filter (a 2.9 server silently widens a list)."""
        for durable, want in subjects.consumers(self.me).items():
            try:
                info = await self.js.consumer_info(subjects.STREAM, durable)
            except Exception as e:
                return f"consumer {durable}: {e.__class__.__name__} {e}; see attend relay --check"
            got = info.config.filter_subject
            if got != want:
                return f"consumer {durable} filters {got!r}, not {want!r}: it would deliver others' records"
        return None

    async def _other_relay(self) -> str | None:
        """Another spool's relay publishing under this host name (a second OS user, or another machine,
        without a name of its own): its records and presence would pass for this one's. Each relay puts
        ``<host>.relay`` with its spool's id every heartbeat and deletes it on a clean stop; the bucket
        drops it 90 s after the last put. This spool's own key (a relay killed and started again) is no
        obstacle."""
        try:
            kv = await self.js.key_value(subjects.BUCKET)
            watcher = await kv.watch(f"{self.me}.relay")
        except Exception:  # no bucket or no permission yet: presence says so in the state, --check too
            return None
        try:
            entry = await watcher.updates(timeout=5)  # the last put, or None when there is none
        except Exception:
            entry = None
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(watcher.stop(), 2)
        if entry is None or entry.operation in ("DEL", "PURGE") or len(entry.value or b"") > 8192:
            return None
        try:
            value = safejson.loads(entry.value)
        except ValueError:
            return None
        other = value.get("spool") if isinstance(value, dict) else None
        if not other or other == self.spool_id:
            return None
        return (
            f"another relay already publishes as host {self.me} (pid {value.get('pid')} of another spool); "
            f"each OS user's spool is a host of its own: set ATTEND_HOST to a name of its own for every "
            f"attend process of this user (relay.host too, if set)"
        )

    async def _on_error(self, e: Exception) -> None:
        text = str(e)
        if e.__class__.__name__ == "SSLCertVerificationError":  # relay.tls_ca did not sign the server's: no retry helps
            text = f"its TLS certificate is not one relay.tls_ca vouches for ({getattr(e, 'verify_message', '') or e})"
            self.denied = True
            if text not in self.said:
                self.said.add(text)
                self.warn(f"attend relay: {self.me} cannot trust the server: {text}")
            self.refused.set()
        if "permissions violation" in text.lower() or "authorization" in text.lower():
            self.denied = True
            if text not in self.said:  # once each: a refused reconnect says it every second
                self.said.add(text)
                self.warn(f"attend relay: the server refused {self.me}: {text}")
        if "authorization" in text.lower():
            self.refused.set()  # the credentials: trying them again cannot help (exit 2)
        self._state(f"error: {text[:200]}")

    async def _closed(self) -> None:
        if not self.stopping.is_set():  # the client gave up (refused on a reconnect): stop, exit 2 (else 1)
            self.lost = True
            self.stopping.set()

    async def _disconnected(self) -> None:
        self.linked.clear()
        self.steady = False
        self._state("disconnected; reconnecting")

    async def _reconnected(self) -> None:
        self._state("connected")
        self.linked.set()
        self.wake.set()
        self.rewatch = True  # a restarted server forgot the watch's consumer: make a new one

    def _state(self, what: str) -> None:
        doc = {"pid": os.getpid(), "host": self.me, "state": what, "at": time.time()}
        with contextlib.suppress(OSError, AttendError):
            self.spool.write_state(json.dumps(doc).encode(), RELAY, RELAY_STATE)

    async def _io(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.to_thread(fn, *args)

    # ------------------------------------------------------------------ outbound

    async def _watch_outbox(self) -> None:
        """Wake the publisher on each link into outbox/new/ (inotify), and every POLL seconds regardless."""
        from attend.conduits.watch import IN_CREATE, IN_MOVED_TO, INotify

        loop = asyncio.get_running_loop()
        ino = None
        try:
            ino = INotify()
            ino.add_watch(self.spool.path(RELAY, OUTBOX, layout.NEW), IN_CREATE | IN_MOVED_TO)

            def readable(ino: INotify = ino) -> None:
                ino.read(0)
                self.wake.set()

            loop.add_reader(ino.fileno(), readable)
        except OSError as e:
            self.warn(f"attend relay: no inotify on the outbox ({e}); polling every second")
            ino = None
        try:
            while True:
                await asyncio.sleep(POLL if ino is not None else 1.0)
                self.wake.set()
        finally:
            if ino is not None:
                loop.remove_reader(ino.fileno())
                ino.close()

    async def _outbound(self) -> None:
        last_prune = 0.0
        while True:
            await self.wake.wait()
            self.wake.clear()
            if time.time() - last_prune > PRUNE_EVERY:
                last_prune = time.time()
                await self._io(store.prune, self.spool)
            await self.linked.wait()
            try:
                await self._drain_outbox()
            except Exception as e:  # the server went away or refused mid-window: the queue is still in new/
                self._state(f"publish paused: {e.__class__.__name__}")
                await asyncio.sleep(0.5)
                self.wake.set()

    async def _drain_outbox(self) -> None:
        """Publish the queue in name order. The stream stores one connection's publishes in the order
        they come, so a window of them keeps the queue's order while each is stored; what breaks it is a
        window in which one fails and a later one is stored (the stream coming back mid-window), since
        the failed one, sent again, would land after it. So a window goes out whole (one write) only
        while publishing is steady; after a failure or a disconnect one record goes at a time until one
        is stored. Sending again is safe: the stream drops a repeated Nats-Msg-Id."""
        while True:
            names = await self._io(store.pending, self.spool)
            if not names:
                return
            start = 0
            while start < len(names):
                if not self.linked.is_set():
                    raise ConnectionError("not connected")
                want = WINDOW if self.steady else 1
                used, batch = await self._io(self._read_window, names[start : start + want])
                start += used
                if not batch:
                    continue
                # gather starts every publish before the client's flusher runs: one write, in this order.
                acks = await asyncio.gather(
                    *(self.js.publish(subj, data, headers=hdrs, timeout=5) for _, (subj, data, hdrs) in batch),
                    return_exceptions=True,
                )
                done = []
                for (name, _), ack in zip(batch, acks, strict=True):
                    if isinstance(ack, BaseException):
                        break  # this one and those after it are sent again, in order, same Msg-Id
                    done.append(name)
                await self._io(self._mark_sent, done)
                if len(done) < len(batch):
                    self.steady = False
                    failed = acks[len(done)]
                    assert isinstance(failed, BaseException)
                    pairs = list(zip(batch, acks, strict=True))[len(done) + 1 :]
                    stored = [n for (n, _), a in pairs if not isinstance(a, BaseException)]
                    if stored:  # the stream took a later one of the window: it stands before the failed one now
                        self.spool.log(f"relay: the server stored {stored[0]} before {batch[len(done)][0]}")
                    raise failed
                self.steady = True

    def _read_window(self, names: list[str]) -> tuple[int, list[tuple[str, tuple[str, bytes, dict[str, str]]]]]:
        """One worker call for a window's reads (not one per record): how many names it used, and the
        records to publish, up to WINDOW_BYTES of them (always at least one)."""
        out: list[tuple[str, tuple[str, bytes, dict[str, str]]]] = []
        size = 0
        for used, name in enumerate(names):
            if out and size >= WINDOW_BYTES:
                return used, out
            item = store.outgoing(self.spool, self.me, name)
            if item is not None:
                out.append((name, item))
                size += len(item[1])
        return len(names), out

    def _mark_sent(self, names: list[str]) -> None:
        for name in names:
            store.sent(self.spool, name)

    # ------------------------------------------------------------------ inbound

    async def _inbound(self, durable: str) -> None:
        from nats.errors import TimeoutError as NatsTimeout

        psub = None
        while True:
            try:
                if psub is None:
                    await self._await_redeliveries(durable)
                    psub = await self.js.pull_subscribe_bind(durable, subjects.STREAM)
                msgs = await psub.fetch(BATCH, timeout=FETCH_WAIT)
            except (TimeoutError, NatsTimeout):
                continue
            except asyncio.CancelledError:
                raise
            except Exception as e:
                self._state(f"fetch {durable}: {e.__class__.__name__}")
                await asyncio.sleep(1.0)
                continue
            # A batch taken is written and acknowledged whole, even when the relay is told to stop.
            job = asyncio.ensure_future(self._take(msgs))
            self.taking.add(job)
            job.add_done_callback(self.taking.discard)
            if await asyncio.shield(job):
                # Some went back (nak, NAK_DELAY): fetch again once they are due, so they come before
                # what the stream holds after them.
                await asyncio.sleep(NAK_DELAY + 0.5)

    async def _await_redeliveries(self, durable: str) -> None:
        """Records the consumer delivered and nobody acknowledged (a relay killed mid-batch) come back
        only after the ack wait, and a fetch before then would take the records after them first. So
        a relay that finds some waits the ack wait out: then the server hands them over first."""
        info = await self.js.consumer_info(subjects.STREAM, durable)
        if info.num_ack_pending:
            wait = float(info.config.ack_wait or subjects.ACK_WAIT) + 2.0
            self._state(f"connected; {durable} waits {wait:g} s for {info.num_ack_pending} delivered, unacknowledged")
            await asyncio.sleep(wait)

    async def _take(self, msgs: list[Any]) -> bool:
        """Write a fetched batch, then acknowledge each (refused ones: never again); whether any went back."""
        batch = [(m.subject, dict(m.headers or {}), m.data) for m in msgs]
        outcomes = await self._io(self._write_batch, batch)
        back = False
        for m, outcome in zip(msgs, outcomes, strict=True):
            with contextlib.suppress(Exception):
                if isinstance(outcome, store.Refused):
                    self.warn(f"attend relay: refused {outcome}")
                    await m.term()
                elif isinstance(outcome, BaseException):
                    back = True
                    await m.nak(delay=NAK_DELAY)
                else:
                    await m.ack()
        return back

    def _write_batch(self, batch: list[tuple[str, dict[str, str], bytes]]) -> list[object]:
        """Write a fetched batch in two steps, each synced once for the whole batch (several fsyncs in
        flight, then each folder once): first every arrival's index entry, then the records into their
        rooms. So no record is in a room ahead of its durable entry (a crash between them would write it
        twice), and nothing is acknowledged before both steps are on disk."""
        out: list[object] = []
        admitted: set[str] = set()
        failed: Exception | None = None  # from the first failure on, the rest go back too: the order holds
        for subject, headers, data in batch:
            if failed is not None:
                out.append(failed)
                continue
            try:
                out.append(store.admit(self.spool, self.me, subject, headers, data, admitted))
            except store.Refused as e:
                self.spool.log(f"relay: refused: {e}")
                out.append(e)
            except (OSError, AttendError) as e:
                self.spool.log(f"relay: could not write an arrival now: {e}")
                out.append(failed := e)
        arrivals = [x for x in out if isinstance(x, store.Arrival)]
        if not arrivals:
            return out
        try:
            self.spool.sync_files((RELAY, layout.RELAY_SEEN), [x.msg_id for x in arrivals])
        except OSError as e:  # not durable: land and acknowledge none; the redelivery finds the entries
            self.spool.log(f"relay: could not sync a batch's index entries: {e}")
            return [e if isinstance(x, store.Arrival) else x for x in out]
        by_room: dict[str, list[str]] = {}
        landed: list[bool] = []  # per arrival, in order
        landing_failed: Exception | None = None
        for i, x in enumerate(out):
            if not isinstance(x, store.Arrival):
                continue
            landed.append(False)
            if landing_failed is not None:
                out[i] = landing_failed  # its index entry names a record not in the room: written again then
                continue
            try:
                landed_as = store.land(self.spool, x)
                for room in (x.room, *x.also):
                    by_room.setdefault(room, []).append(landed_as)
                out[i] = "stored"
                landed[-1] = True
            except (OSError, AttendError) as e:
                self.spool.log(f"relay: could not write an arrival now: {e}")
                out[i] = landing_failed = e
        try:
            for room, names in by_room.items():
                self.spool.sync_records(room, names)
            # Landed and durable: a redelivery is a duplicate even after retention removes the room's copy.
            store.mark_landed(self.spool, [x.msg_id for x, got in zip(arrivals, landed, strict=True) if got])
        except OSError as e:  # not durable: acknowledge nothing written; the redelivery finds them in the index
            self.spool.log(f"relay: could not sync a batch: {e}")
            out = [e if x == "stored" else x for x in out]
        return out

    # ------------------------------------------------------------------ presence

    def _snapshot(self) -> dict[str, dict[str, object]]:
        """This host's live sessions and recent humans, as presence entries keyed ``<host>.s|h.<id>``."""
        member_of: dict[str, list[str]] = {}
        for name in channels.names(self.spool):
            for member in channels.members(self.spool, name):
                member_of.setdefault(member, []).append(name)
        out: dict[str, dict[str, object]] = {}
        for record in identity.live_records(self.sessions_dir):
            sid = record.session_id
            if not sessions.is_enrolled(self.spool, sid):
                continue
            origin = identity.normalise_origin(record.cwd or "/")
            who = identity.Identity("agent", sid, origin, "record", True, record.pid, record.proc_start, record.name)
            entry = sessions.read_registry(self.spool, rooms.project_key(origin)).get(sid)
            out[f"{self.me}.s.{sid}"] = {
                "host": self.me,
                "kind": "agent",
                "id": sid,
                "name": sessions.display(identity.persona(who), entry, record.name),
                "project": origin,
                "status": record.status or "",
                "channels": member_of.get(sid, []),
                "inbound": outcomes.decide(self.spool, sid, "hosts"),  # senders elsewhere learn it at send
            }
        for h in humans.recent(self.spool):
            out[f"{self.me}.h.{h.user}"] = {
                "host": self.me,
                "kind": "human",
                "id": h.user,
                "name": h.user,
                "project": "",
                "status": "active",
                "channels": member_of.get(h.user, []),
                "active_at": h.active_at,  # the human's own last send or read: peers shows it elsewhere
            }
        out.update(self._leases())
        return out

    def _leases(self) -> dict[str, dict[str, object]]:
        """This host's live leases on files, keyed ``<host>.l.<sid>``, each by its repository (the
        origin's URL without credentials, else the root commit), never by the local path: a lease in a
        folder that is no repository names nothing on another machine, and is not published."""
        from attend.leases import tree
        from attend.leases.store import live_holdings

        out: dict[str, dict[str, object]] = {}
        for h in live_holdings(self.spool):
            items: list[dict[str, object]] = []
            for x in h.leases:
                if x.root not in self.repo_keys:  # a root's origin rarely changes: asked once per relay
                    self.repo_keys[x.root] = tree.repo_key(x.root)
                repo = self.repo_keys[x.root]
                if repo is not None:
                    items.append(
                        {"repo": repo, "glob": x.glob, "reason": x.reason, "shared": x.shared, "since": x.since}
                    )
            entry: dict[str, object] = {
                "host": self.me,
                "kind": "leases",
                "id": h.sid,
                "name": h.name,
                "client": h.client or "",
                "leases": items,
            }
            while items and len(json.dumps(entry)) > PRESENCE_MAX:
                items.pop()  # another host reads an entry of at most 8 KiB
            if items:
                out[f"{self.me}.l.{h.sid}"] = entry
        return out

    async def _presence(self) -> None:
        watcher = None
        while True:
            try:
                if self.kv is None:
                    self.kv = await self.js.key_value(subjects.BUCKET)
                if watcher is not None and (self.rewatch or self.watching is None or self.watching.done()):
                    self.rewatch = False
                    if self.watching is not None:
                        self.watching.cancel()
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(watcher.stop(), 2)
                    watcher = None
                if watcher is None:
                    watcher = await self.kv.watchall()
                    quiet_flow_control(watcher)
                    self.watching = asyncio.create_task(self._read_watch(watcher))
                snap = await self._io(self._snapshot)
                snap[f"{self.me}.relay"] = {
                    "host": self.me,
                    "kind": "relay",
                    "spool": self.spool_id,
                    "pid": os.getpid(),
                }
                for key, value in snap.items():
                    await self.kv.put(key, json.dumps(value).encode())
                for key in self.published - set(snap):
                    with contextlib.suppress(Exception):
                        await self.kv.delete(key)
                self.published = set(snap)
                await self._io(self._write_mirror)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                self._state(f"presence: {e.__class__.__name__} {e}")
            await asyncio.sleep(self.s.heartbeat)

    async def _read_watch(self, watcher: Any) -> None:
        try:
            await self._follow(watcher)
        except asyncio.CancelledError:
            pass
        except Exception as e:  # the connection closed under it: the presence loop makes a new watch
            self._state(f"presence watch: {e.__class__.__name__}")

    async def _follow(self, watcher: Any) -> None:
        async for entry in watcher:
            if entry is None:
                continue
            key = entry.key
            if key.startswith(self.me + ".") or key.endswith(".relay"):
                continue  # this host's own; another host's relay key (not a session or human)
            if entry.operation in ("DEL", "PURGE"):
                self.mirror.pop(key, None)
            else:
                if len(entry.value or b"") > 8192:  # another host's input: a presence entry is small
                    continue
                try:
                    value = safejson.loads(entry.value)
                except ValueError:
                    continue
                # Another host's input. The key's host is what the server's permissions vouch for, not
                # the value's. A presence entry is kept only as remote.entry checks it, field by field;
                # a leases entry is kept whole and checked field by field where it is read (remote.leases).
                if isinstance(value, dict) and value.get("kind") == "leases":
                    if value.get("host") == key.split(".", 1)[0]:
                        value["seen"] = time.time()
                        self.mirror[key] = value
                    continue
                peer = remote.entry(value)
                if peer is not None and peer.host == key.split(".", 1)[0]:
                    self.mirror[key] = peer._replace(seen=time.time())._asdict()
            await self._io(self._write_mirror)

    def _write_mirror(self) -> None:
        now = time.time()
        stale = [k for k, v in self.mirror.items() if now - float(v.get("seen", 0)) > self.s.ttl]  # type: ignore[arg-type]
        for key in stale:
            del self.mirror[key]  # a 2.9 server sends no expiry: readers expire entries themselves
        remote.write(self.spool, self.me, self.s.same_humans, self.s.ttl, list(self.mirror.values()))

    async def _withdraw_presence(self) -> None:
        if self.kv is None:
            return
        for key in self.published:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.kv.delete(key), 1)


def run(spool: Spool, s: RelaySettings, sessions_dir: str, warn: Callable[[str], None]) -> int:
    """Runs until SIGTERM/SIGINT. 0: a clean stop; 1: another relay serves this spool, or the server's
    consumers are wrong; 2: the server refused this host's credentials or permissions."""
    with spool.lock(RELAY, RELAY_LOCK, wait=False) as held:
        if not held:
            warn(f"attend relay: another relay already serves {spool.root}")
            return 1
        # A stop before the loop takes the signals over (it is starting) is as clean as one after.
        before = {sig: signal.signal(sig, _stop_early) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            relay = Relay(spool, s, sessions_dir, warn)
            runner = asyncio.Runner()
            code = runner.run(relay.run())
            if relay.stuck:  # closing the loop would wait on them again: end without it, all written
                warn(f"attend relay: stopped with {len(relay.stuck)} task(s) still ending; left to the exit")
                sys.stderr.flush()
                os._exit(code)
            runner.close()
            return code
        except _Stopped:
            return 0
        finally:
            for sig, handler in before.items():
                signal.signal(sig, handler)


class _Stopped(Exception):
    """SIGTERM or SIGINT before the relay's loop handles them."""


def _stop_early(_sig: int, _frame: object) -> None:
    raise _Stopped


def quiet_flow_control(watcher: Any) -> None:
    """Stop the task nats-py runs beside a KV watch (an ordered push consumer) to answer the server's
    flow control: it wakes four times a second for the watch's life, most of an idle relay's CPU
    (docs/benchmarks.md). Without it nothing is lost: the client answers a flow control message at
    once when all before it was delivered, and a stalled consumer's next idle heartbeat (every 5 s)
    carries the reply to send, which the client sends. A client without that task is left as it is."""
    with contextlib.suppress(AttributeError):
        jsi = watcher._sub._sub._jsi  # the watch's push subscription, its core subscription's JetStream state
        if jsi._fctask is not None:
            jsi._fctask.cancel()
            jsi._fctask = None
