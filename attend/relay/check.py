"""``attend relay --check`` (what is wrong, one line each) and ``attend relay --provision`` (the stream,
consumers and presence bucket, made with an admin's credentials). nats-py is imported here, in the functions."""

from __future__ import annotations

import asyncio
import contextlib
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
    try:
        version = nc.connected_server_version
        if (version.major, version.minor) < NEWER:
            notes.append(
                f"server {version}: older than 2.10, so one filter per consumer (checked), no sync_interval, "
                "no presence expiry events (readers expire entries); a newer server adds them"
            )
        js = nc.jetstream(timeout=3)
        try:
            info = await js.stream_info(subjects.STREAM)
            if subjects.SUBJECTS not in (info.config.subjects or []):
                problems.append(
                    f"stream {subjects.STREAM} does not take {subjects.SUBJECTS}; recreate it (--provision)"
                )
        except Exception as e:
            problems.append(f"stream {subjects.STREAM}: {_why(e)}; an admin makes it with attend relay --provision")
        for durable, want in subjects.consumers(s.host).items():
            try:
                ci = await js.consumer_info(subjects.STREAM, durable)
            except Exception as e:
                problems.append(
                    f"consumer {durable}: {_why(e)}; an admin makes it with attend relay --provision {s.host}"
                )
                continue
            if ci.config.filter_subject != want:
                problems.append(
                    f"consumer {durable} filters {ci.config.filter_subject!r}, not {want!r}: it would deliver "
                    "other hosts' records; delete it and run attend relay --provision again"
                )
        try:
            await js.key_value(subjects.BUCKET)
        except Exception as e:
            problems.append(f"presence bucket {subjects.BUCKET}: {_why(e)}; attend relay --provision makes it")
        # Publishing under this host's subjects: a probe no consumer's filter takes (no ".to.").
        try:
            await js.publish(f"attend.from.{s.host}.probe", b"", timeout=3)
        except Exception as e:
            problems.append(f"cannot publish under attend.from.{s.host}.>: {_why(e)}; see the server permissions")
        await asyncio.sleep(0.05)
        problems += [f"the server refused: {r}" for r in dict.fromkeys(refused)]
    finally:
        with contextlib.suppress(Exception):
            await nc.close()
    return problems, notes


def _why(e: Exception) -> str:
    text = str(e) or e.__class__.__name__
    if e.__class__.__name__ in ("TimeoutError", "NoRespondersError"):
        return f"no answer ({e.__class__.__name__}: missing, or not permitted)"
    return text


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
