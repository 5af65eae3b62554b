"""The notification trailer (seed ADR 0024, DESIGN.md §6): shapes, attention, subscriptions, cursors
and inbox_wait, through the in-process MCP server acting as a stand-in session."""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

import anyio
import pytest
from mcp import Client

from attend import identity
from attend.domain.attention import trailer
from attend.domain.core import envelope, rooms
from attend.domain.messages import presence
from attend.domain.sessions import sessions
from attend.layout import name_time, unique_name
from attend.mcp.server import AttendServer
from attend.testing.standin import StandIn
from attend.verbs import reply as reply_verb
from attend.verbs import send as send_verb
from tests.support import World, error_text, join_channel, server_as, structured

pytestmark = pytest.mark.anyio


def pending(data: dict[str, Any]) -> list[dict[str, Any]]:
    return list(data.get("notifications", {}).get("pending", []))


def pair(world: World) -> tuple[StandIn, StandIn, AttendServer]:
    a, b = world.session("proj"), world.session("proj")
    join_channel(world, a)
    join_channel(world, b)
    return a, b, server_as(world, a)


def direct(world: World, sender: StandIn, to: StandIn, text: str) -> str:
    return send_verb.run(world.context(sender), send_verb.SendRequest(text, to=to.session_id)).id


# ---------------------------------------------------------------------- shapes


async def test_a_reply_to_my_message_rides_on_my_next_result_once(world: World) -> None:
    _a, b, server = pair(world)
    async with Client(server, mode="legacy") as client:
        mine = structured(await client.call_tool("send", {"message": "who has the build?"}))
        answer = reply_verb.run(world.context(b), reply_verb.ReplyRequest("I do", re=mine["id"]))
        shown = structured(await client.call_tool("status", {}))
        again = structured(await client.call_tool("status", {}))
    items = pending(shown)
    assert [(i["source"], i["kind"], i["id"]) for i in items] == [("attention", "reply", answer.id)]
    assert set(items[0]) == {"source", "kind", "id", "project_id", "title", "at"}
    assert items[0]["title"].endswith(": I do")
    assert "notifications" not in again


def _reply_route(world: World, a: StandIn, b: StandIn, route: str) -> tuple[str, str]:
    """Session ``a`` writes, someone answers it by the given route; returns (answer id, its room)."""
    ctx = world.context

    def answer(who: StandIn | None, parent: str) -> send_verb.Sent:
        return reply_verb.run(ctx(who), reply_verb.ReplyRequest("answered", re=parent))

    if route == "human":  # the human writes to me; my answer lands in the human's room; it answers that
        first = send_verb.run(ctx(None), send_verb.SendRequest("from the human", to=a.session_id))
        mine = answer(a, first.id)
        assert mine.room.startswith("h-")
        got = answer(None, mine.id)
        return got.id, got.room
    if route == "project":  # a project I am not in: the answer goes there and to my own room
        c = world.session("elsewhere")
        join_channel(world, c, "elsewhere")
        mine = send_verb.run(ctx(a), send_verb.SendRequest("to your project", to=str(c.cwd)))
        got = answer(c, mine.id)
        return got.id, got.room
    scope = {"private": {"to": b.session_id}, "channel": {"channel": "crew"}, "open": {"broadcast": True}}[route]
    mine = send_verb.run(ctx(a), send_verb.SendRequest("a question", **scope))  # type: ignore[arg-type]
    got = answer(b, mine.id)
    return got.id, got.room


@pytest.mark.parametrize("how", ["trailer", "inbox_wait"])
@pytest.mark.parametrize("route", ["private", "channel", "open", "project", "human"])
async def test_a_reply_to_my_message_is_labelled_a_reply_whichever_room_it_lands_in(
    world: World, route: str, how: str
) -> None:
    a, b, server = pair(world)
    answer, room = _reply_route(world, a, b, route)
    if how == "trailer":
        async with Client(server, mode="legacy") as client:
            items = pending(structured(await client.call_tool("status", {})))
        kinds = [(i["kind"], i["id"]) for i in items if i["id"] == answer]
    else:  # inbox_wait labels what lands in the maildir, from the same reader
        kinds = [(i.kind, i.id) for i in trailer.take_deliveries(world.spool, world.context(a).who()) if i.id == answer]
    assert kinds == [("reply", answer)], room


async def test_the_text_content_mirrors_the_structured_result_with_its_trailer(world: World) -> None:
    a, b, server = pair(world)
    direct(world, b, a, "ping")
    async with Client(server, mode="legacy") as client:
        result = await client.call_tool("peers", {})
    data = structured(result)
    assert pending(data)
    assert json.loads(result.content[0].text) == data  # type: ignore[union-attr]


async def test_the_trailer_is_absent_when_nothing_is_pending_and_on_an_error(world: World) -> None:
    a, b, server = pair(world)
    async with Client(server, mode="legacy") as client:
        quiet = structured(await client.call_tool("status", {}))
        direct(world, b, a, "are you there?")
        failed = await client.call_tool("send", {"message": "x", "channel": "nosuch"})
        later = structured(await client.call_tool("status", {}))
    assert "notifications" not in quiet
    error_text(failed)
    assert failed.structured_content is None
    assert [i["kind"] for i in pending(later)] == ["direct"]  # the error consumed nothing


async def test_a_broken_cursor_never_fails_the_call(world: World) -> None:
    a, _b, server = pair(world)
    folder = world.spool_root / "sessions" / a.session_id / "notify"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "attention.json").write_text("{not json")
    (folder / "sub-s1.json").write_text('{"id": 3}')
    async with Client(server, mode="legacy") as client:
        first = structured(await client.call_tool("status", {}))
        shutil.rmtree(folder)
        folder.write_text("a file where the folder should be")
        second = structured(await client.call_tool("status", {}))
    assert first["session_id"] == second["session_id"] == a.session_id
    assert "notifications" not in second
    assert "notify: trailer failed" in (world.spool_root / "log" / "attend.log").read_text()


async def test_titles_are_one_line_without_control_characters_and_at_most_80_characters(world: World) -> None:
    a, b, server = pair(world)
    direct(world, b, a, "line one\nline two\x1b[31m red\x07 " + "long " * 40)
    async with Client(server, mode="legacy") as client:
        items = pending(structured(await client.call_tool("status", {})))
    title = items[0]["title"]
    assert len(title) <= 80 and title.isprintable()
    assert "line one ⏎ line two\\x1b[31m red\\x07" in title


# ---------------------------------------------------------------------- cursors


async def test_a_hundred_concurrent_calls_report_each_item_exactly_once(world: World) -> None:
    a, b, server = pair(world)
    sent = [direct(world, b, a, f"note {i}") for i in range(30)]
    seen: list[str] = []
    async with Client(server, mode="legacy") as client:

        async def one(i: int) -> None:
            tool = ("status", "peers", "inbox")[i % 3]
            seen.extend(item["id"] for item in pending(structured(await client.call_tool(tool, {}))))

        async with anyio.create_task_group() as tg:
            for i in range(100):
                tg.start_soon(one, i)
    assert sorted(seen) == sorted(sent)


async def test_fifty_items_per_call_and_the_rest_on_the_next_calls(world: World) -> None:
    a, b, server = pair(world)
    sent = [direct(world, b, a, f"n{i}") for i in range(120)]
    counts = []
    got: list[str] = []
    async with Client(server, mode="legacy") as client:
        for _ in range(4):
            items = pending(structured(await client.call_tool("status", {})))
            counts.append(len(items))
            got += [i["id"] for i in items]
    assert counts == [50, 50, 20, 0]
    assert got == sent


async def test_a_record_published_late_under_an_earlier_name_is_still_reported(world: World) -> None:
    a, b, server = pair(world)
    async with Client(server, mode="legacy") as client:
        late_name = unique_name()  # a slow sender takes its name now, and publishes later
        on_time = direct(world, b, a, "named second, published first")
        first = pending(structured(await client.call_tool("status", {})))
        record = envelope.Signal(
            "", "slow", "agent", b.session_id, a.session_id, rooms.direct_room(a.session_id), str(b.cwd), "late", 0.0
        )
        world.spool.publish([record.room], envelope.render(record.with_id(late_name, name_time(late_name))), late_name)
        second = pending(structured(await client.call_tool("status", {})))
        third = pending(structured(await client.call_tool("status", {})))
    assert [i["id"] for i in first] == [on_time]
    assert [i["id"] for i in second] == [late_name]
    assert third == []


# ---------------------------------------------------------------------- subscriptions


async def test_a_subscription_starts_at_the_newest_event_and_reports_what_follows(world: World) -> None:
    _a, b, server = pair(world)
    send_verb.run(world.context(b), send_verb.SendRequest("old news"))
    async with Client(server, mode="legacy") as client:
        sub = structured(await client.call_tool("notify_subscribe", {"kinds": ["open"]}))
        quiet = structured(await client.call_tool("status", {}))
        fresh = send_verb.run(world.context(b), send_verb.SendRequest("new news"))
        shown = structured(await client.call_tool("status", {}))
    assert sub["kinds"] == ["open"]
    assert "notifications" not in quiet  # no replay of "old news"
    assert [(i["source"], i["kind"], i["id"]) for i in pending(shown)] == [("subscription", "open", fresh.id)]


async def test_channel_and_presence_subscriptions_report_their_kinds(world: World) -> None:
    _a, b, server = pair(world)
    async with Client(server, mode="legacy") as client:
        structured(
            await client.call_tool("notify_subscribe", {"kinds": ["channel:crew", "peer_started", "peer_ended"]})
        )
        news = send_verb.run(world.context(b), send_verb.SendRequest("crew only", channel="crew"))
        record = identity.read_record(world.home / ".claude" / "sessions", b.pid)
        assert record is not None
        presence.publish(world.spool, record, "ended")
        shown = pending(structured(await client.call_tool("status", {})))
    kinds = sorted(i["kind"] for i in shown)
    assert kinds == ["channel:crew", "peer_ended"]
    assert news.id in {i["id"] for i in shown}
    assert next(i["title"] for i in shown if i["kind"] == "peer_ended").endswith(" ended")


async def test_a_project_scoped_subscription_reports_only_that_project(world: World) -> None:
    _a, b, server = pair(world)
    c = world.session("elsewhere")
    join_channel(world, c)
    async with Client(server, mode="legacy") as client:
        await client.call_tool("notify_subscribe", {"kinds": ["open"], "project": str(c.cwd)})
        send_verb.run(world.context(b), send_verb.SendRequest("from proj"))
        theirs = send_verb.run(world.context(c), send_verb.SendRequest("from elsewhere"))
        shown = pending(structured(await client.call_tool("status", {})))
    assert [i["id"] for i in shown] == [theirs.id]


async def test_an_unknown_kind_is_refused_with_the_valid_ones(world: World) -> None:
    _a, _b, server = pair(world)
    async with Client(server, mode="legacy") as client:
        text = error_text(await client.call_tool("notify_subscribe", {"kinds": ["everything"]}))
    assert "unknown kind 'everything'" in text
    for kind in trailer.KINDS:
        assert kind in text


async def test_unsubscribing_another_sessions_subscription_reads_as_not_found(world: World) -> None:
    _a, b, server = pair(world)
    async with Client(server, mode="legacy") as client, Client(server_as(world, b), mode="legacy") as other:
        sub = structured(await client.call_tool("notify_subscribe", {"kinds": ["open"]}))
        theirs = error_text(await other.call_tool("notify_unsubscribe", {"subscription_id": sub["subscription_id"]}))
        missing = error_text(await other.call_tool("notify_unsubscribe", {"subscription_id": "s00000000"}))
        news = send_verb.run(world.context(b), send_verb.SendRequest("still subscribed?"))
        shown = pending(structured(await client.call_tool("status", {})))
        mine = structured(await client.call_tool("notify_unsubscribe", {"subscription_id": sub["subscription_id"]}))
    assert theirs.replace(sub["subscription_id"], "ID") == missing.replace("s00000000", "ID")
    assert "no subscription" in theirs
    assert [i["id"] for i in shown] == [news.id]
    assert mine["removed"] is True


async def test_a_session_holds_at_most_32_subscriptions(world: World) -> None:
    _a, _b, server = pair(world)
    async with Client(server, mode="legacy") as client:
        for _ in range(trailer.SUB_CAP):
            structured(await client.call_tool("notify_subscribe", {"kinds": ["open"]}))
        refused = error_text(await client.call_tool("notify_subscribe", {"kinds": ["open"]}))
    assert "32 subscriptions" in refused


def test_the_cli_forms_subscribe_list_and_unsubscribe(world: World) -> None:
    a = world.session("proj")
    join_channel(world, a)
    sub = json.loads(a.attend("notify", "subscribe", "--json", "open,peer_started").stdout)
    listed = json.loads(a.attend("notify", "list", "--json").stdout)
    gone = a.attend("notify", "unsubscribe", "--json", sub["subscription_id"])
    again = a.attend("notify", "unsubscribe", sub["subscription_id"])
    assert sub["kinds"] == ["open", "peer_started"]
    assert [s["subscription_id"] for s in listed["subscriptions"]] == [sub["subscription_id"]]
    assert gone.rc == 0 and json.loads(gone.stdout)["removed"] is True
    assert again.rc != 0 and "no subscription" in again.stderr


# ---------------------------------------------------------------------- inbox_wait


async def test_inbox_wait_returns_with_the_delivery_long_before_its_deadline(world: World) -> None:
    a, b, server = pair(world)
    baseline = inotify_handles()
    async with Client(server, mode="legacy") as client:
        result: dict[str, Any] = {}

        async def wait() -> None:
            result.update(structured(await client.call_tool("inbox_wait", {"seconds": 60})))

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait)
            # Send once the wait watches the maildir, so the delivery is what wakes it.
            await until(lambda: inotify_handles() > baseline, "the wait never started watching")
            sent = await anyio.to_thread.run_sync(lambda: direct(world, b, a, "wake up"))
        after = structured(await client.call_tool("status", {}))
    assert result["timed_out"] is False
    assert [(i["kind"], i["id"]) for i in result["items"]] == [("direct", sent)]
    assert "notifications" not in after  # inbox_wait moved the attention cursor past it


async def test_inbox_wait_returns_empty_at_its_deadline_and_zero_polls_once(world: World) -> None:
    _a, _b, server = pair(world)
    async with Client(server, mode="legacy") as client:
        waited = structured(await client.call_tool("inbox_wait", {"seconds": 0.5}))
        polled = structured(await client.call_tool("inbox_wait", {"seconds": 0}))
        too_long = error_text(await client.call_tool("inbox_wait", {"seconds": 61}))
    assert waited["items"] == [] and waited["timed_out"] is True and waited["waited"] >= 0.5
    assert polled["items"] == [] and polled["timed_out"] is True
    assert "seconds" in too_long


async def test_inbox_wait_sees_a_delivery_a_running_loop_already_moved_to_cur(world: World) -> None:
    a, b, server = pair(world)
    sent = direct(world, b, a, "claimed at once")
    spool = world.spool
    spool.claim_all(a.session_id, [sent])
    spool.mark_seen(a.session_id, [sent])
    async with Client(server, mode="legacy") as client:
        polled = structured(await client.call_tool("inbox_wait", {"seconds": 0}))
    assert [i["id"] for i in polled["items"]] == [sent]
    assert spool.listing(a.session_id, "cur") == [sent + ":2,S"]  # flags untouched


async def test_inbox_wait_sends_progress_while_it_waits(world: World) -> None:
    _a, _b, server = pair(world)
    notes: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        notes.append((progress, total))

    async with Client(server, mode="legacy") as client:
        waited = structured(await client.call_tool("inbox_wait", {"seconds": 5.5}, progress_callback=on_progress))
    assert waited["timed_out"] is True
    assert notes and notes[0][1] == 5.5


def test_attend_inbox_wait_is_the_cli_form(world: World) -> None:
    a, b = world.session("proj"), world.session("proj")
    join_channel(world, a)
    join_channel(world, b)
    sent = direct(world, b, a, "for the cli")
    out = a.attend("inbox", "--wait", "0", "--json")
    assert out.rc == 0, out.stderr
    assert [i["id"] for i in json.loads(out.stdout)["items"]] == [sent]
    assert sessions.is_enrolled(world.spool, a.session_id)


def inotify_handles() -> int:
    """inotify instances this test process holds open."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify"
        except OSError:
            continue
    return count


async def until(check: Any, what: str, limit: float = 20.0) -> None:
    """Wait for ``check()`` with a generous bound; the bound catches a hang, it measures nothing."""
    with anyio.move_on_after(limit):
        while not check():
            await anyio.sleep(0.02)
    assert check(), what


async def test_a_cancelled_inbox_wait_stops_and_leaves_later_deliveries_to_the_trailer(world: World) -> None:
    a, b, server = pair(world)
    baseline = inotify_handles()
    async with Client(server, mode="legacy") as client:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, "inbox_wait", {"seconds": 60})
            await until(lambda: inotify_handles() > baseline, "the wait never started watching")
            tg.cancel_scope.cancel()
        # The wait's watch goes with it, long before its 60 s deadline.
        await until(lambda: inotify_handles() == baseline, "a cancelled inbox_wait kept waiting")
        sent = await anyio.to_thread.run_sync(lambda: direct(world, b, a, "after the cancel"))
        shown = pending(structured(await client.call_tool("status", {})))
    assert [i["id"] for i in shown] == [sent]  # the abandoned wait consumed nothing


async def test_inbox_wait_polls_instead_of_failing_when_inotify_is_used_up(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from attend.conduits import watch

    def used_up(*_args: object, **_kw: object) -> None:
        raise OSError(errno.EMFILE, "Too many open files")

    a, b, server = pair(world)
    sent = direct(world, b, a, "found by polling")
    monkeypatch.setattr(watch.INotify, "add_watch", used_up)
    baseline = inotify_handles()
    async with Client(server, mode="legacy") as client:
        waited = structured(await client.call_tool("inbox_wait", {"seconds": 0.3}))
    assert [i["id"] for i in waited["items"]] == [sent]
    await until(lambda: inotify_handles() == baseline, "the half-made inotify instance was kept open")


async def test_a_notify_lock_held_elsewhere_never_hangs_the_call(world: World) -> None:
    import fcntl

    a, b, server = pair(world)
    sent = direct(world, b, a, "behind a stuck lock")
    folder = world.spool_root / "sessions" / a.session_id / "notify"
    folder.mkdir(parents=True, exist_ok=True)
    held = os.open(folder / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(held, fcntl.LOCK_EX)  # a stopped process in the middle of a pass
    answered: dict[str, Any] = {}
    try:
        async with Client(server, mode="legacy") as client:
            with anyio.move_on_after(30):  # a bound against a hang
                answered = structured(await client.call_tool("status", {}))
            os.close(held)
            held = -1
            later = pending(structured(await client.call_tool("status", {})))
    finally:
        if held >= 0:
            os.close(held)
    assert answered["session_id"] == a.session_id
    assert "notifications" not in answered
    assert [i["id"] for i in later] == [sent]  # nothing was consumed while the lock was held


async def test_inbox_wait_reports_a_delivery_a_loop_claims_between_listing_and_reading(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b, server = pair(world)
    sent = direct(world, b, a, "claimed mid-look")
    listed = trailer.deliveries(world.spool, a.session_id)
    assert listed == [(sent, f"new/{sent}")]
    world.spool.claim_all(a.session_id, [sent])  # the sensor loop wins the race after the listing
    world.spool.mark_seen(a.session_id, [sent])
    monkeypatch.setattr(trailer, "deliveries", lambda *_: listed)  # what the wait saw: the entry in new/
    async with Client(server, mode="legacy") as client:
        polled = structured(await client.call_tool("inbox_wait", {"seconds": 0}))
    assert [i["id"] for i in polled["items"]] == [sent]


async def test_a_project_named_through_a_symlink_scopes_a_subscription_to_that_project(world: World) -> None:
    _a, _b, server = pair(world)
    c = world.session("elsewhere")
    join_channel(world, c)
    link = world.tmp / "shortcut"
    link.symlink_to(c.cwd)
    async with Client(server, mode="legacy") as client:
        sub = structured(await client.call_tool("notify_subscribe", {"kinds": ["open"], "project": str(link)}))
        theirs = send_verb.run(world.context(c), send_verb.SendRequest("from elsewhere"))
        shown = pending(structured(await client.call_tool("status", {})))
    assert sub["project"] == str(c.cwd)
    assert [i["id"] for i in shown] == [theirs.id]
