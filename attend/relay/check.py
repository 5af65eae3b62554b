"""``attend relay --check`` (what is wrong, one line each) and ``attend relay --provision`` (the stream,
consumers and presence bucket, made with an admin's credentials). nats-py is imported here, in the functions."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from attend.relay import subjects
from attend.relay.settings import RelaySettings, connect_options

NEWER = (2, 10)  # from here: a consumer may filter several subjects, sync_interval exists; 2.11: KV expiry events


def check(s: RelaySettings) -> tuple[list[str], list[str]]:
    """(problems, notes). A problem stops the relay from working; a note says what an old server lacks."""
    if s.problems:
        return list(s.problems), []
    return asyncio.run(_check(s))


async def _check(s: RelaySettings) -> tuple[list[str], list[str]]:
    import nats

    problems: list[str] = []
    notes: list[str] = []
    refused: list[str] = []

    async def on_error(e: Exception) -> None:
        refused.append(str(e))

    try:
        opts = connect_options(s, on_error)
        opts.update(max_reconnect_attempts=0, allow_reconnect=False)
        nc = await nats.connect(**opts)
    except Exception as e:
        hint = "; " + refused[0] if refused else ""
        return [f"cannot connect to {', '.join(s.servers)}: {e.__class__.__name__} {e}{hint}"], []

    # This host's replies first: every check below asks the server and waits for an answer on this
    # host's inbox, which only this host's credentials may subscribe to. Another host's key is refused
    # there, and every step would wait out its timeout and read as a missing stream.
    prefix = subjects.inbox_prefix(s.host)
    try:
        await nc.subscribe(nc.new_inbox())
        # The server answers the SUB's refusal before the flush's PONG, so once the flush returns the
        # refusal has been read; its callback then runs on the client's read task. The flush's bound is
        # the steps' own (a loaded machine took more than 3 s to answer, and the refusal went unseen).
        await nc.flush(10)
        for _ in range(10):
            await asyncio.sleep(0)
    except Exception:
        pass  # a failure here is the steps' to report
    not_this_hosts = [
        f"the server refused host {s.host}'s replies ({prefix}.>): these credentials are not host "
        f"{s.host}'s (another host's?); use the ones provisioned for {s.host}, or set relay.host to the "
        "host they are for"
    ]

    def replies_refused() -> bool:
        return any(prefix.lower() in r.lower() for r in refused)

    if replies_refused():
        with contextlib.suppress(Exception):
            await nc.close()
        return not_this_hosts, notes

    # Each step's place in ``problems`` and what it names, so a refusal the server reports late (a
    # loaded machine, a flush that timed out) still lands on the step's own line, in the steps' order.
    steps: list[tuple[int, str, str]] = []

    def refusal_line(what: str, said: str) -> str:
        return f"{what}: the server refused ({said}); see the server permissions"

    async def step(what: str, subject: str, act: Callable[[], Awaitable[object]], fix: str = "") -> bool:
        """One check, and on a failure one line: the server's refusal of ``subject`` when it said one
        (taken out of ``refused``), else what went wrong and ``fix``. Whether it passed."""
        line, failure = None, ""
        try:
            got = await act()
            line = got if isinstance(got, str) else None
        except Exception as e:
            failure = _why(e)
        with contextlib.suppress(Exception):
            await nc.flush(10)  # a refusal comes before the flush's answer: it is in ``refused`` by now
        said = [r for r in refused if subject.lower() in r.lower()]  # nats-py lowers the server's words
        for r in said:
            refused.remove(r)
        steps.append((len(problems), what, subject))
        if said:
            problems.append(refusal_line(what, said[0]))
        elif failure:
            problems.append(f"{what}: {failure}{'; ' + fix if fix else ''}")
        elif line:
            problems.append(line)
        return not (said or failure or line)

    try:
        version = nc.connected_server_version
        if (version.major, version.minor) < NEWER:
            notes.append(
                f"server {version.major}.{version.minor}.{version.patch}: older than 2.10, so one filter per "
                "consumer (checked), no sync_interval, no presence expiry events (readers expire entries); "
                "a newer server adds them"
            )
        js = nc.jetstream(timeout=3)
        stream = await step(
            f"stream {subjects.STREAM}",
            f"$JS.API.STREAM.INFO.{subjects.STREAM}",
            partial(_stream, js),
            "an admin makes it with attend relay --provision",
        )
        for durable, want in subjects.consumers(s.host).items():
            if not await step(
                f"consumer {durable}",
                f"$JS.API.CONSUMER.INFO.{subjects.STREAM}.{durable}",
                partial(_consumer, js, durable, want),
                f"an admin makes it with attend relay --provision {s.host}",
            ):
                continue
            # A pull for only what is there now (no_wait); a record it does get goes back at once.
            await step(
                f"cannot pull from consumer {durable}",
                f"$JS.API.CONSUMER.MSG.NEXT.{subjects.STREAM}.{durable}",
                partial(_pull_nothing, nc, durable),
            )
            # Progress on no delivery (sequence 0): the server ignores it, or refuses its subject.
            ack = f"$JS.ACK.{subjects.STREAM}.{durable}.1.0.0.0.0"
            await step(f"cannot acknowledge {durable}'s records", ack, partial(nc.publish, ack, b"+WPI"))
        if stream:  # publishing under this host's subjects: a probe no consumer's filter takes (no ".to.")
            probe = f"attend.from.{s.host}.probe"
            await step(
                f"cannot publish under attend.from.{s.host}.>", probe, partial(js.publish, probe, b"", timeout=3)
            )
        kv: Any = None

        async def bucket() -> None:
            nonlocal kv
            kv = await js.key_value(subjects.BUCKET)

        async def put_and_delete() -> None:
            await kv.put(f"{s.host}.probe", b"")  # not a presence entry: other relays skip it
            await kv.delete(f"{s.host}.probe")

        async def watch() -> None:
            watcher = await kv.watchall()
            await watcher.stop()

        if await step(
            f"presence bucket {subjects.BUCKET}",
            f"$JS.API.STREAM.INFO.KV_{subjects.BUCKET}",
            bucket,
            "attend relay --provision makes it",
        ):
            await step(
                f"cannot put this host's presence ({s.host}.* in {subjects.BUCKET})",
                f"$KV.{subjects.BUCKET}.{s.host}.",
                put_and_delete,
            )
            await step(f"cannot watch the others' presence ({subjects.BUCKET})", f"KV_{subjects.BUCKET}", watch)
        with contextlib.suppress(Exception):
            await nc.flush(10)
        if replies_refused():
            # The refusal came after the first look (a server slow to answer its flush on a loaded
            # machine): every step's failure since was that refusal's, so it is the one line, and what
            # the steps noted of the server is left unsaid as the early answer leaves it.
            return not_this_hosts, []
        late: list[tuple[int, int, str]] = []
        for r in dict.fromkeys(refused):
            owner = next((i for i, (_, _, subject) in enumerate(steps) if subject.lower() in r.lower()), None)
            what = steps[owner][1] if owner is not None else ""
            if owner is not None and not any(p.startswith(f"{what}:") for p in problems):
                late.append((steps[owner][0], owner, refusal_line(what, r)))
            else:
                problems.append(f"the server refused: {r}")
        for at, _, line in sorted(late, reverse=True):  # from the last place back, so earlier places hold
            problems.insert(at, line)
    finally:
        with contextlib.suppress(Exception):
            await nc.close()
    return problems, notes


async def _stream(js: Any) -> str | None:
    config = (await js.stream_info(subjects.STREAM)).config
    if subjects.SUBJECTS not in (config.subjects or []):
        return f"stream {subjects.STREAM} does not take {subjects.SUBJECTS}; recreate it (--provision)"
    limit = config.max_msg_size
    if limit is not None and 0 < limit < subjects.MAX_MSG:
        # It would refuse a large record and take the ones after it: the order would break.
        return (
            f"stream {subjects.STREAM} takes messages of at most {limit} bytes, not {subjects.MAX_MSG}; "
            "update it (--provision)"
        )
    return None


async def _consumer(js: Any, durable: str, want: str) -> str | None:
    got = (await js.consumer_info(subjects.STREAM, durable)).config.filter_subject
    if got != want:  # a 2.9 server given a list of filters makes a consumer with none: it delivers everything
        return (
            f"consumer {durable} filters {got!r}, not {want!r}: it would deliver other hosts' records; "
            "delete it and run attend relay --provision again"
        )
    return None


async def _pull_nothing(nc: Any, durable: str) -> None:
    import json

    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    try:
        request = json.dumps({"batch": 1, "no_wait": True}).encode()
        await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{subjects.STREAM}.{durable}", request, reply=inbox)
        msg = await sub.next_msg(timeout=3)
        if msg.reply:  # a record, not a status: back to the consumer at once
            await nc.publish(msg.reply, b"-NAK")
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()


def _why(e: Exception) -> str:
    name = e.__class__.__name__
    if name in ("TimeoutError", "NoRespondersError"):
        return f"no answer ({name}: missing, or not permitted)"
    if name.endswith("NotFoundError"):
        return "not found"
    described = getattr(e, "description", None)  # a JetStream API error: the server's words
    return str(described) if described else str(e) or name


def provision(s: RelaySettings, hosts: list[str], replicas: int = 1) -> list[str]:
    """Make (or update) the stream, each host's two consumers and the presence bucket; the lines done."""
    return asyncio.run(_provision(s, hosts, replicas))


async def _provision(s: RelaySettings, hosts: list[str], replicas: int) -> list[str]:
    import nats
    from nats.js.api import (
        AckPolicy,
        ConsumerConfig,
        DeliverPolicy,
        DiscardPolicy,
        KeyValueConfig,
        RetentionPolicy,
        StorageType,
        StreamConfig,
    )

    opts = connect_options(s)
    opts.pop("inbox_prefix")  # the admin's own inbox
    opts.update(max_reconnect_attempts=0, allow_reconnect=False)
    nc: Any = await nats.connect(**opts)
    done = []
    try:
        js = nc.jetstream(timeout=10)
        config = StreamConfig(
            name=subjects.STREAM,
            subjects=[subjects.SUBJECTS],
            retention=RetentionPolicy.LIMITS,
            storage=StorageType.FILE,
            max_age=subjects.MAX_AGE_DAYS * 86400,
            max_msg_size=subjects.MAX_MSG,
            discard=DiscardPolicy.OLD,
            duplicate_window=subjects.DUPLICATE_WINDOW,
            num_replicas=replicas,
        )
        try:
            await js.add_stream(config)
            done.append(f"stream {subjects.STREAM} made")
        except Exception:
            await js.update_stream(config)
            done.append(f"stream {subjects.STREAM} updated")
        for host in hosts:
            for durable, filt in subjects.consumers(host).items():
                cc = ConsumerConfig(
                    durable_name=durable,
                    filter_subject=filt,
                    ack_policy=AckPolicy.EXPLICIT,
                    ack_wait=subjects.ACK_WAIT,
                    max_deliver=-1,
                    max_ack_pending=1000,
                    deliver_policy=DeliverPolicy.NEW,
                    num_replicas=replicas,
                )
                await js.add_consumer(subjects.STREAM, cc)
                got = (await js.consumer_info(subjects.STREAM, durable)).config.filter_subject
                if got != filt:
                    raise RuntimeError(f"the server made {durable} with filter {got!r}, not {filt!r}")
                done.append(f"consumer {durable} ({filt})")
        try:
            await js.key_value(subjects.BUCKET)
            done.append(f"bucket {subjects.BUCKET} kept")
        except Exception:
            await js.create_key_value(
                KeyValueConfig(bucket=subjects.BUCKET, history=1, ttl=90, replicas=replicas, storage=StorageType.FILE)
            )
            done.append(f"bucket {subjects.BUCKET} made")
    finally:
        await nc.close()
    return done
