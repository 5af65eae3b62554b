"""The MCP frontend in process (mcp.Client in legacy mode: JSON-RPC over memory streams, with the
initialize handshake): every tool, its schema, its errors, and the fresh-invocation rule."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import click
import pytest
from mcp import Client

from attend.cli.app import cli
from attend.domain.core import envelope
from attend.domain.messages import addressing
from attend.domain.sessions import mcp_markers, sessions
from attend.domain.sessions.context import Context
from attend.mcp.server import build_server
from attend.setup import data
from attend.verbs import inbound as inbound_verb
from attend.verbs import inbox as inbox_verb
from attend.verbs import inbox_wait as wait_verb
from attend.verbs import join as join_verb
from attend.verbs import leave as leave_verb
from attend.verbs import mute as mute_verb
from attend.verbs import notify_subscribe as subscribe_verb
from attend.verbs import notify_unsubscribe as unsubscribe_verb
from attend.verbs import peers as peers_verb
from attend.verbs import reply as reply_verb
from attend.verbs import search as search_verb
from attend.verbs import send as send_verb
from attend.verbs import status as status_verb
from attend.verbs import unmute as unmute_verb
from tests.support import World, error_text, join_channel, server_as, structured

pytestmark = pytest.mark.anyio


# tool -> (click command path, its description, its parameter descriptions)
VERBS: dict[str, tuple[tuple[str, ...], str, dict[str, str]]] = {
    "send": (("send",), send_verb.DESCRIPTION, send_verb.PARAMS),
    "reply": (("reply",), reply_verb.DESCRIPTION, reply_verb.PARAMS),
    "inbox": (("inbox",), inbox_verb.DESCRIPTION, inbox_verb.PARAMS),
    "peers": (("peers",), peers_verb.DESCRIPTION, peers_verb.PARAMS),
    "status": (("status",), status_verb.DESCRIPTION, status_verb.PARAMS),
    "join": (("join",), join_verb.DESCRIPTION, join_verb.PARAMS),
    "leave": (("leave",), leave_verb.DESCRIPTION, leave_verb.PARAMS),
    "notify_subscribe": (("notify", "subscribe"), subscribe_verb.DESCRIPTION, subscribe_verb.PARAMS),
    "notify_unsubscribe": (("notify", "unsubscribe"), unsubscribe_verb.DESCRIPTION, unsubscribe_verb.PARAMS),
    "inbox_wait": (("inbox",), wait_verb.DESCRIPTION, wait_verb.PARAMS),
    "mute": (("mute",), mute_verb.DESCRIPTION, mute_verb.PARAMS),
    "unmute": (("unmute",), unmute_verb.DESCRIPTION, unmute_verb.PARAMS),
    "inbound": (("inbound",), inbound_verb.DESCRIPTION, inbound_verb.PARAMS),
    "search": (("search",), search_verb.DESCRIPTION, search_verb.PARAMS),
}
# MCP parameter -> click parameter name, where they differ or the CLI takes it as an argument.
CLICK_NAME = {"re": "re_", "all": "all_", "id": "msg_id", "seconds": "wait"}


async def tools_of(world: World) -> dict[str, Any]:
    async with Client(server_as(world, None), mode="legacy") as client:
        return {t.name: t for t in (await client.list_tools()).tools}


def click_command(path: tuple[str, ...]) -> click.Command:
    ctx = click.Context(cli, info_name="attend")
    command: click.Command | None = cli
    for part in path:
        assert isinstance(command, click.Group)
        command = command.get_command(ctx, part)
        assert command is not None, f"attend {' '.join(path)} is not a click command"
    assert command is not None
    return command


# ---------------------------------------------------------------------- schema


async def test_the_server_lists_the_tools_the_settings_baseline_allows(world: World) -> None:
    tools = await tools_of(world)
    allow = json.loads(data.data_file("settings", "permissions.json").read_text())["permissions"]["allow"]
    assert sorted(f"mcp__attend__{name}" for name in tools) == sorted(e for e in allow if e.startswith("mcp__"))
    assert len(tools) == 15
    read_only = {name for name, t in tools.items() if t.annotations and t.annotations.read_only_hint}
    # DESIGN.md §5: read-only changes no room, delivery, flag, membership or registration; the notify/
    # bookkeeping (cursors, subscriptions) is what such a tool may still write. test_contract checks
    # that each of these leaves the message state as it found it.
    assert read_only == {"inbox", "peers", "status", "inbox_wait", "notify_subscribe", "notify_unsubscribe", "search"}


async def test_each_description_agrees_across_click_help_the_docs_and_the_tool_schema(world: World) -> None:
    from attend.cli import docs

    reference = docs.render()
    tools = await tools_of(world)
    for tool, (path, description, params) in VERBS.items():
        schema = tools[tool]
        assert schema.description == description, tool
        properties = schema.input_schema.get("properties", {})
        for name, text in params.items():
            if name in properties:
                assert properties[name]["description"] == text, (tool, name)
        for name, prop in properties.items():
            assert prop["description"] == params[name], (tool, name)
        command = click_command(path)
        by_name = {p.name: p for p in command.params}
        if tool == "inbox_wait":
            wait = by_name["wait"]
            assert isinstance(wait, click.Option) and wait.help
            assert description in wait.help and params["seconds"] in wait.help
            assert description in reference
            continue
        assert command.help == description, tool
        assert description in reference, f"docs lack the description of {tool}"
        for name in properties:
            param = by_name.get(CLICK_NAME.get(name, name))
            assert param is not None, f"attend {' '.join(path)} has no parameter for {tool}.{name}"
            if isinstance(param, click.Option):
                assert param.help and param.help.startswith(params[name]), (tool, name)
                assert params[name] in reference, (tool, name)


async def test_from_kind_and_from_id_are_never_parameters(world: World) -> None:
    tools = await tools_of(world)
    for tool in ("send", "reply"):
        properties = tools[tool].input_schema["properties"]
        assert set(properties) >= {"message", "to", "channel", "broadcast", "on_behalf_of"}
        assert not {"from_kind", "from_id", "sender"} & set(properties)
    assert "re" in tools["reply"].input_schema["properties"]
    assert tools["send"].input_schema["required"] == ["message"]


async def test_the_tools_as_the_model_receives_them_stay_under_six_thousand_bytes(world: World) -> None:
    # Claude Code loads a tool as {name, description, input_schema} (compact JSON); names carry the
    # mcp__attend__ prefix. tests/e2e/test_mcp_e2e.py measures the same in the real client's request.
    tools = await tools_of(world)
    size = sum(
        len(
            json.dumps(
                {"name": f"mcp__attend__{t.name}", "description": t.description, "input_schema": t.input_schema},
                separators=(",", ":"),
                ensure_ascii=False,
            ).encode()
        )
        for t in tools.values()
    )
    assert len(tools) == 15
    assert size < 6000, size


async def test_an_optional_string_parameter_is_published_as_a_plain_string(world: World) -> None:
    tools = await tools_of(world)
    to = tools["send"].input_schema["properties"]["to"]
    assert to == {"description": send_verb.PARAMS["to"], "type": "string"}
    assert "to" not in tools["send"].input_schema["required"]


async def test_every_output_schema_declares_notifications_as_optional(world: World) -> None:
    tools = await tools_of(world)
    for name, tool in tools.items():
        schema = tool.output_schema
        assert schema is not None, name
        assert "notifications" in schema["properties"], name
        assert "notifications" not in schema.get("required", []), name


# ---------------------------------------------------------------------- acting


async def test_send_lands_in_the_spool_as_the_calling_session(world: World) -> None:
    a, b = world.session("proj"), world.session("proj")
    join_channel(world, a)
    join_channel(world, b)
    async with Client(server_as(world, a), mode="legacy") as client:
        sent = structured(await client.call_tool("send", {"message": "hello from mcp", "from_id": "forged"}))
    record = envelope.parse(world.spool.read(world.spool.room_path(sent["room"], sent["id"])))
    assert (record.from_kind, record.from_id, record.body) == ("agent", a.session_id, "hello from mcp")
    names = addressing.session_names(world.spool, world.context(b).sessions_dir)
    assert sent["outcome"] == f"{names[b.session_id]} delivered"
    assert world.spool.has_delivery(b.session_id, sent["id"])


async def test_shell_metacharacters_arrive_byte_identical_through_mcp_and_the_cli(world: World) -> None:
    a = world.session("proj")
    join_channel(world, a)
    message = "--x $(rm -rf ~) `id` *.py ~/x 'single' \"double\" ; | & > <\nsecond line\ttab \\ $HOME !!"
    async with Client(server_as(world, a), mode="legacy") as client:
        via_mcp = structured(await client.call_tool("send", {"message": message}))
    out = a.attend("send", "--json", "--", message)
    assert out.rc == 0, out.stderr
    via_cli = json.loads(out.stdout)
    bodies = [
        world.spool.read(world.spool.room_path(sent["room"], sent["id"])).partition(b"\n\n")[2]
        for sent in (via_mcp, via_cli)
    ]
    assert bodies[0] == bodies[1] == message.encode()


async def test_reply_threads_to_the_most_recent_peer_message(world: World) -> None:
    a, b = world.session("proj"), world.session("proj")
    join_channel(world, a)
    join_channel(world, b)
    first = send_verb.run(world.context(b), send_verb.SendRequest("question?"))
    sessions.set_last_inbound(world.spool, a.session_id, first.id)  # what a conduit records on showing it
    async with Client(server_as(world, a), mode="legacy") as client:
        replied = structured(await client.call_tool("reply", {"message": "answer"}))
    assert replied["re"] == first.id
    assert replied["room"] == first.room


async def test_inbox_lists_rows_with_typed_envelope_fields_and_reads_one_by_id(world: World) -> None:
    a, b = world.session("proj"), world.session("proj")
    join_channel(world, a)
    join_channel(world, b)
    sent = send_verb.run(world.context(b), send_verb.SendRequest("for you", on_behalf_of="op@tty"))
    async with Client(server_as(world, a), mode="legacy") as client:
        listing = structured(await client.call_tool("inbox", {"limit": 5}))
        one = structured(await client.call_tool("inbox", {"id": sent.id}))
    row = listing["messages"][0]
    assert row["id"] == sent.id
    assert {k: row[k] for k in ("from_kind", "from_id", "on_behalf_of", "to", "re", "room")} == {
        "from_kind": "agent",
        "from_id": b.session_id,
        "on_behalf_of": "op@tty",
        "to": "*",
        "re": None,
        "room": "open",
    }
    assert one["messages"][0]["body"] == "for you"


async def test_join_and_leave_change_membership_through_the_tools(world: World) -> None:
    a = world.session("proj")
    async with Client(server_as(world, a), mode="legacy") as client:
        joined = structured(await client.call_tool("join", {"name": "ops"}))
        assert joined["channel"] == "ops" and joined["enrolled"] is True
        assert sessions.channels_of(world.spool, a.session_id) == ["ops"]
        left = structured(await client.call_tool("leave", {"name": "#ops"}))
    assert left["was_member"] is True
    assert sessions.channels_of(world.spool, a.session_id) == []


async def test_peers_lists_live_sessions_with_typed_rows(world: World) -> None:
    a, b = world.session("proj"), world.session("other")
    join_channel(world, b)
    async with Client(server_as(world, a), mode="legacy") as client:
        listing = structured(await client.call_tool("peers", {}))
    rows = {p["session_id"]: p for p in listing["peers"]}
    assert rows[a.session_id]["self"] is True
    assert rows[b.session_id]["enrolled"] is True and rows[b.session_id]["channels"] == ["#crew"]


# ---------------------------------------------------------------------- every call is fresh


async def test_a_session_enrolled_between_two_calls_can_send_on_the_second(world: World) -> None:
    a = world.session("proj")
    async with Client(server_as(world, a), mode="legacy") as client:
        refused = error_text(await client.call_tool("send", {"message": "too early"}))
        join_channel(world, a)
        sent = structured(await client.call_tool("send", {"message": "now enrolled"}))
    assert "not enrolled" in refused and "attend run" in refused and "attend join" in refused
    record = envelope.parse(world.spool.read(world.spool.room_path(sent["room"], sent["id"])))
    assert record.from_id == a.session_id


async def test_status_reports_identity_and_registration_as_read_at_call_time(world: World) -> None:
    a = world.session("proj")
    async with Client(server_as(world, a), mode="legacy") as client:
        before = structured(await client.call_tool("status", {}))
        join_channel(world, a)
        after = structured(await client.call_tool("status", {}))
        a.write_record(session_id="0f0f0f0f-aaaa-bbbb-cccc-000000000001")  # what /clear does to the record
        cleared = structured(await client.call_tool("status", {}))
    assert (before["session_id"], before["resolved"], before["ordinal"], before["enrolled"], before["ways"]) == (
        after["session_id"],
        True,
        "alpha",  # a session without a client name is registered when first shown: one name throughout
        False,
        [],
    )
    assert after["ordinal"] == "alpha" and after["enrolled"] is True and after["ways"] == ["join"]
    assert cleared["session_id"] == "0f0f0f0f-aaaa-bbbb-cccc-000000000001"
    assert cleared["ways"] == ["join"]  # the /clear move carried the enrollment on this very call


async def test_a_server_outside_any_session_refuses_send_and_reply(world: World) -> None:
    async with Client(server_as(world, None), mode="legacy") as client:
        send_error = error_text(await client.call_tool("send", {"message": "hi"}))
        reply_error = error_text(
            await client.call_tool("reply", {"message": "hi", "re": "0000000001.M000001P1Q0R00000000.h"})
        )
        status = structured(await client.call_tool("status", {}))
    assert "outside any agent session" in send_error
    assert reply_error == send_error
    assert status["kind"] == "human"  # positive control: the queries still answer
    assert world.spool.rooms() == []


async def test_a_server_outside_any_session_joins_and_leaves_nothing(world: World) -> None:
    # A model-driven server must not write the human's channel membership: that path is the CLI's.
    async with Client(server_as(world, None), mode="legacy") as client:
        join_error = error_text(await client.call_tool("join", {"name": "ops"}))
        leave_error = error_text(await client.call_tool("leave", {"name": "ops"}))
    assert "outside any agent session" in join_error and leave_error == join_error
    assert not (world.spool_root / "channels" / "ops").exists()
    human = world.attend("join", "ops")  # positive control: the CLI's human path still joins
    assert human.returncode == 0, human.stderr
    assert (world.spool_root / "channels" / "ops").exists()


# ---------------------------------------------------------------------- errors


async def test_each_error_is_one_clear_sentence_with_is_error(world: World) -> None:
    a = world.session("proj")
    join_channel(world, a)
    async with Client(server_as(world, a), mode="legacy") as client:
        errors = {
            "empty inbox for reply": error_text(await client.call_tool("reply", {"message": "hi"})),
            "unknown channel": error_text(await client.call_tool("send", {"message": "hi", "channel": "nosuch"})),
            "oversize": error_text(await client.call_tool("send", {"message": "x" * (64 * 1024 + 1)})),
            "two scopes": error_text(
                await client.call_tool("send", {"message": "hi", "channel": "crew", "broadcast": True})
            ),
            "bad arguments": error_text(await client.call_tool("send", {"message": 5, "broadcast": "maybe"})),
            "missing argument": error_text(await client.call_tool("inbox", {"limit": "many"})),
        }
    assert "nothing to reply to" in errors["empty inbox for reply"]
    assert "#nosuch" in errors["unknown channel"]
    assert "64 KiB" in errors["oversize"]
    assert "choose one scope" in errors["two scopes"]
    assert errors["bad arguments"].startswith("bad arguments for send (")
    for what, text in errors.items():
        assert "\n" not in text and "Traceback" not in text and "Error executing tool" not in text, what
        assert text.rstrip(")").count(";") <= 3, what


async def test_a_crash_inside_a_verb_is_one_sentence_and_the_server_keeps_serving(world: World) -> None:
    a = world.session("proj")
    calls = 0

    def flaky() -> Context:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("secret internal detail")
        return world.context(a)

    async with Client(build_server(flaky), mode="legacy") as client:
        crashed = error_text(await client.call_tool("status", {}))
        status = structured(await client.call_tool("status", {}))
    assert crashed.startswith("status failed inside attend (RuntimeError)")
    assert "secret" not in crashed and "Traceback" not in crashed
    assert status["session_id"] == a.session_id


# ---------------------------------------------------------------------- concurrency and presence


async def test_sixteen_parallel_sends_deliver_sixteen_messages(world: World) -> None:
    a, b = world.session("proj"), world.session("proj")
    join_channel(world, a)
    join_channel(world, b)
    results: dict[int, dict[str, Any]] = {}
    async with Client(server_as(world, a), mode="legacy") as client:

        async def one(i: int) -> None:
            results[i] = structured(await client.call_tool("send", {"message": f"parallel {i}"}))

        async with anyio.create_task_group() as tg:
            for i in range(16):
                tg.start_soon(one, i)
    ids = {r["id"] for r in results.values()}
    assert len(ids) == 16
    delivered = world.spool.listing(b.session_id, "new")
    bodies = sorted(
        envelope.parse(world.spool.read(world.spool.delivery_path(b.session_id, "new", n))).body for n in delivered
    )
    assert bodies == sorted(f"parallel {i}" for i in range(16))
    for i, r in results.items():  # no mixed-up state: each result names its own record
        body = envelope.parse(world.spool.read(world.spool.room_path(r["room"], r["id"]))).body
        assert body == f"parallel {i}"


async def test_the_marker_follows_a_clear_to_the_new_session_id_on_the_next_call(world: World) -> None:
    a = world.session("proj")
    join_channel(world, a)
    marker = mcp_markers.Marker()
    old = a.session_id
    async with Client(build_server(lambda: world.context(a), marker), mode="legacy") as client:
        await client.call_tool("status", {})
        assert mcp_markers.mcp_live(world.spool, old)
        a.write_record(session_id="0f0f0f0f-aaaa-bbbb-cccc-000000000002")
        status = structured(await client.call_tool("status", {}))
    assert status["conduits"]["mcp"] is True
    assert mcp_markers.mcp_live(world.spool, a.session_id)
    assert not mcp_markers.mcp_live(world.spool, old)
    marker.remove()
    assert not mcp_markers.mcp_live(world.spool, a.session_id)


async def test_attend_status_and_peers_report_a_live_marker(world: World) -> None:
    a = world.session("proj")
    join_channel(world, a)
    marker = mcp_markers.Marker()
    async with Client(build_server(lambda: world.context(a), marker), mode="legacy") as client:
        await client.call_tool("peers", {})
    status = json.loads(a.attend("status", "--json").stdout)
    peers = json.loads(a.attend("peers", "--json").stdout)
    assert status["conduits"]["mcp"] is True
    assert [p["mcp"] for p in peers["peers"] if p["session_id"] == a.session_id] == [True]
    marker.remove()
    assert json.loads(a.attend("status", "--json").stdout)["conduits"]["mcp"] is False


def test_a_marker_whose_process_is_gone_reads_as_absent(world: World, tmp_path: Path) -> None:
    spool = world.spool
    gone = mcp_markers.Marker(pid=2**22 + 17)  # above the default pid_max, so never a live process
    gone.ensure(spool, "0f0f0f0f-aaaa-bbbb-cccc-000000000003")
    live = mcp_markers.Marker(pid=os.getpid())
    assert not mcp_markers.mcp_live(spool, "0f0f0f0f-aaaa-bbbb-cccc-000000000003")
    live.ensure(spool, "0f0f0f0f-aaaa-bbbb-cccc-000000000003")
    assert mcp_markers.mcp_live(spool, "0f0f0f0f-aaaa-bbbb-cccc-000000000003")
    live.remove()


async def test_a_marker_that_cannot_be_written_never_fails_the_call(world: World) -> None:
    a = world.session("proj")
    join_channel(world, a)
    folder = world.spool_root / "sessions" / a.session_id / "mcp"
    folder.write_text("a file where the marker folder should be")
    marker = mcp_markers.Marker()
    async with Client(build_server(lambda: world.context(a), marker), mode="legacy") as client:
        status = structured(await client.call_tool("status", {}))
        folder.unlink()
        again = structured(await client.call_tool("status", {}))
    assert status["session_id"] == a.session_id
    assert "presence marker" in (world.spool_root / "log" / "attend.log").read_text()
    assert again["conduits"]["mcp"] is True  # positive control: the next call writes it
    marker.remove()


def test_a_marker_removed_at_exit_is_not_written_back_by_a_call_still_in_flight(world: World) -> None:
    sid = "0f0f0f0f-aaaa-bbbb-cccc-000000000004"
    marker = mcp_markers.Marker()
    marker.ensure(world.spool, sid)
    assert mcp_markers.mcp_live(world.spool, sid)  # positive control
    marker.remove()  # the signal handler, on the main thread
    marker.ensure(world.spool, sid)  # a worker thread's call, finishing just after
    assert not mcp_markers.mcp_live(world.spool, sid)
    assert not (world.spool_root / "sessions" / sid / "mcp" / f"{os.getpid()}.json").exists()


def test_a_marker_carried_to_a_new_id_by_a_clear_is_still_removed_at_exit(world: World) -> None:
    from attend.identity import Identity

    a = world.session("proj")
    join_channel(world, a)
    marker = mcp_markers.Marker()
    marker.ensure(world.spool, a.session_id)
    new = Identity("agent", "0f0f0f0f-aaaa-bbbb-cccc-000000000005", str(a.cwd), "ancestry", True)
    sessions.move_session(world.spool, a.session_id, new)  # a loop or the drain saw the /clear first
    assert mcp_markers.mcp_live(world.spool, new.id)
    marker.remove()
    assert not mcp_markers.mcp_live(world.spool, new.id)
    assert mcp_markers.live_markers(world.spool, a.session_id) == []


def test_several_servers_of_one_session_each_keep_their_own_marker(world: World) -> None:
    a = world.session("proj")
    sid = a.session_id
    mine, subagents = mcp_markers.Marker(), mcp_markers.Marker(pid=a.pid)  # two live processes
    mine.ensure(world.spool, sid)
    subagents.ensure(world.spool, sid)
    assert sorted(m["pid"] for m in mcp_markers.live_markers(world.spool, sid)) == sorted([os.getpid(), a.pid])
    mine.remove()
    assert [m["pid"] for m in mcp_markers.live_markers(world.spool, sid)] == [a.pid]
    subagents.remove()
    assert not mcp_markers.mcp_live(world.spool, sid)
