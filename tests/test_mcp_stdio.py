"""`attend mcp` over real stdio: the SDK's stdio client, raw JSON-RPC lines, signals, and a
third-party client (the MCP Inspector CLI) started as a child of a stand-in session."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import mcp.client.stdio
import pytest
from mcp import ClientSession, stdio_client

from attend.domain.core import envelope
from attend.domain.sessions import mcp_markers
from tests.support import RawServer, World, adopt, error_text, join_channel, stdio_params, structured, wait_until

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parent.parent
INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}


def markers(world: World, sid: str) -> list[str]:
    folder = world.spool_root / "sessions" / sid / "mcp"
    return sorted(os.listdir(folder)) if folder.is_dir() else []


async def test_over_stdio_the_server_sends_as_the_session_that_spawned_it(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The SDK gives a server 2 s to exit once its stdin closes, then signals it: on a busy machine that
    # would make the marker's removal a race against the signal path. Wait for the server itself.
    monkeypatch.setattr(mcp.client.stdio, "PROCESS_TERMINATION_TIMEOUT", 60.0)
    sid = adopt(world)
    enroll_ctx = world.context()
    from attend.verbs import join as join_verb

    join_verb.run(enroll_ctx, join_verb.JoinRequest("crew"))
    async with stdio_client(stdio_params(world)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name for t in (await session.list_tools()).tools}
        sent = structured(await session.call_tool("send", {"message": "over stdio"}))
        status = structured(await session.call_tool("status", {}))
        live = markers(world, sid)
    assert "send" in tools and "inbox_wait" in tools
    record = envelope.parse(world.spool.read(world.spool.room_path(sent["room"], sent["id"])))
    assert (record.from_kind, record.from_id, record.body) == ("agent", sid, "over stdio")
    assert status["session_id"] == sid and status["conduits"]["mcp"] is True
    assert len(live) == 1
    assert markers(world, sid) == []  # stdin closed: the marker went with the server


async def test_over_stdio_a_server_outside_any_session_refuses_to_send(world: World) -> None:
    async with stdio_client(stdio_params(world)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        refused = error_text(await session.call_tool("send", {"message": "from nowhere"}))
        status = structured(await session.call_tool("status", {}))
    assert "outside any agent session" in refused
    assert status["kind"] == "human"
    assert world.spool.rooms() == []


def test_the_server_answers_server_discover_and_the_classic_initialize(world: World) -> None:
    modern = RawServer(world)
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    discover = modern.request("server/discover", {"_meta": meta})
    modern_call = modern.request("tools/call", {"name": "status", "arguments": {}, "_meta": meta})
    rc, rest, _ = modern.close()
    assert "2026-07-28" in discover["result"]["supportedVersions"]
    assert modern_call["result"]["structuredContent"]["kind"] == "human"
    assert rc == 0 and rest == ""

    classic = RawServer(world)
    init = classic.initialize()
    listed = classic.request("tools/list")
    rc, rest, _ = classic.close()
    assert init["result"]["protocolVersion"] == "2025-11-25"
    assert init["result"]["serverInfo"]["name"] == "attend"
    assert len(listed["result"]["tools"]) == 15
    assert rc == 0 and rest == ""  # nothing but protocol ever reached stdout


# ---------------------------------------------------------------------- frames no client library sends


def call_frame(rid: int, message: bytes) -> bytes:
    """A tools/call of send, written by hand: ``message`` goes on the wire as these exact bytes."""
    head = b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"send","arguments":{"message":"' % rid
    return head + message + b'"}}}'


def test_a_lone_surrogate_in_a_tool_argument_is_refused_with_an_error_for_its_request(world: World) -> None:
    adopt(world)
    join_channel_here(world)
    server = RawServer(world)
    server.initialize()
    server.send_bytes(call_frame(7, rb"\ud800"))  # legal JSON; no Unicode character
    refused = server.answer()
    still = server.request("tools/call", {"name": "status", "arguments": {}})
    rc, rest, _ = server.close()
    assert refused["id"] == 7 and refused["error"]["code"] == -32602
    assert "params.arguments.message holds a lone surrogate (\\ud800)" in refused["error"]["message"]
    assert still["result"]["isError"] is False
    assert world.spool.room_names("open") == []
    assert rc == 0 and rest == ""


def test_invalid_utf8_on_the_wire_is_refused_not_replaced(world: World) -> None:
    adopt(world)
    join_channel_here(world)
    server = RawServer(world)
    server.initialize()
    server.send_bytes(call_frame(8, b"caf\xe9"))  # Latin-1, not UTF-8
    refused = server.answer()
    rc, rest, _ = server.close()
    assert refused["id"] == 8 and refused["error"]["code"] == -32700
    assert "not valid UTF-8 (byte 0xe9 at offset" in refused["error"]["message"]
    assert world.spool.room_names("open") == []  # nothing sent as "caf\ufffd"
    assert rc == 0 and rest == ""


def test_a_bad_notification_is_one_stderr_line_and_the_server_goes_on(world: World) -> None:
    server = RawServer(world)
    server.initialize()
    server.send_bytes(b'{"jsonrpc":"2.0","method":"notifications/\xff"}')  # nobody waits on a notification
    still = server.request("tools/call", {"name": "peers", "arguments": {}})
    rc, rest, err = server.close()
    assert still["result"]["isError"] is False
    assert "refused a frame with no request id: the frame is not valid UTF-8 (byte 0xff" in err
    assert "Traceback" not in err
    assert rc == 0 and rest == ""


@pytest.mark.parametrize(
    ("frame", "code", "says"),
    [
        (b"not json", -32700, "not JSON"),
        (b"caf\xe9 not json either", -32700, "not valid UTF-8"),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}', -32600, "its id must be a string or an integer"),
        (b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', -32600, "its id must be a string or an integer"),
        (b"[]", -32600, "a batch (a JSON array) is not served"),
        (b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":' + b"[" * 1000 + b"]" * 1000 + b"}", -32700, "deep"),
    ],
    ids=["not-json", "not-utf8", "float-id", "null-id", "empty-batch", "nested-1000-deep"],
)
def test_every_frame_a_client_waits_on_gets_an_answer_and_the_server_goes_on(
    world: World, frame: bytes, code: int, says: str
) -> None:
    server = RawServer(world)
    server.initialize()
    server.send_bytes(frame)
    refused = server.answer()
    still = server.request("tools/call", {"name": "peers", "arguments": {}})
    rc, rest, err = server.close()
    assert refused["id"] is None and refused["error"]["code"] == code and says in refused["error"]["message"]
    assert still["result"]["isError"] is False
    assert "Traceback" not in err and rc == 0 and rest == ""


@pytest.mark.parametrize("first", [True, False], ids=["as-the-first-frame", "after-the-handover"])
def test_a_batch_gets_an_error_for_each_request_in_it(world: World, first: bool) -> None:
    server = RawServer(world)
    server.initialize()
    if not first:
        server.request("tools/call", {"name": "peers", "arguments": {}})
    batch = [
        {"jsonrpc": "2.0", "id": 41, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "forty-two", "method": "tools/list"},
    ]
    server.send_bytes(json.dumps(batch).encode())
    answers = [server.answer(), server.answer()]
    still = server.request("ping")
    rc, rest, err = server.close()
    assert sorted(str(a["id"]) for a in answers) == ["41", "forty-two"]
    assert all(a["error"]["code"] == -32600 and "batch" in a["error"]["message"] for a in answers)
    assert "result" in still and rc == 0 and rest == "" and "Traceback" not in err


def test_a_deep_frame_as_the_first_frame_never_kills_the_server(world: World) -> None:
    server = RawServer(world)
    server.send_bytes(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":' + b"[" * 1000 + b"]" * 1000 + b"}")
    refused = server.answer()
    answer = server.initialize()
    rc, rest, err = server.close()
    assert refused["error"]["code"] == -32700 and "result" in answer
    assert "Traceback" not in err and rc == 0 and rest == ""


def test_a_server_in_a_folder_whose_name_is_not_utf8_answers_instead_of_dying(world: World) -> None:
    folder = os.path.join(os.fsencode(world.tmp), b"caf\xe9")
    os.mkdir(folder)
    server = RawServer(world, cwd=folder)
    server.initialize()
    status = server.request("tools/call", {"name": "status", "arguments": {}})
    rc, rest, err = server.close()
    assert status["result"]["structuredContent"]["origin_path"].endswith("caf\\xe9")  # the byte, shown
    assert rc == 0 and rest == "" and "Traceback" not in err


def join_channel_here(world: World) -> None:
    """Enroll the adopted test process, so a send from its server would land."""
    from attend.verbs import join as join_verb

    join_verb.run(world.context(), join_verb.JoinRequest("crew"))


def test_the_server_warns_on_stderr_when_the_settings_lack_its_allow_entries(world: World) -> None:
    bare = RawServer(world)
    bare.initialize()
    _, _, warned = bare.close()
    settings = Path(world.env["HOME"]) / ".claude" / "settings.json"
    settings.write_text(json.dumps({"permissions": {"allow": ["mcp__attend__*"]}}))
    allowed = RawServer(world)
    allowed.initialize()
    _, _, quiet = allowed.close()
    assert "mcp__attend__send" in warned
    assert "warning" not in quiet


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_the_marker_is_removed_when_a_signal_ends_the_server(world: World, signum: int) -> None:
    s = world.session("proj")
    join_channel(world, s)
    # A server that resolves as the stand-in: spawned by it, so its ancestry walk finds the record.
    fifo_dir = world.tmp / "fifo"
    fifo_dir.mkdir()
    # The pid is written once the server has answered initialize: by then its signal handlers are in
    # place (a signal in the moment between the marker's write and the handlers would find none).
    script = (
        "import json, subprocess, sys\n"
        "p = subprocess.Popen([sys.executable, '-m', 'attend', 'mcp'], stdin=subprocess.PIPE,\n"
        "                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)\n"
        "p.stdin.write(json.dumps({'jsonrpc': '2.0', 'id': 1, 'method': 'initialize', 'params': {\n"
        "    'protocolVersion': '2025-11-25', 'capabilities': {}, 'clientInfo': {'name': 'raw', 'version': '0'}}}))\n"
        "p.stdin.write('\\n')\n"
        "p.stdin.flush()\n"
        "p.stdout.readline()\n"
        f"open({str(fifo_dir / 'pid')!r}, 'w').write(str(p.pid))\n"
        "p.wait()\n"
    )

    result: dict[str, Any] = {}
    runner = threading.Thread(target=lambda: result.update(r=s.run([sys.executable, "-c", script], timeout=60)))
    runner.start()
    pid_file = fifo_dir / "pid"
    wait_until(
        lambda: pid_file.exists() and pid_file.read_text() and markers(world, s.session_id),
        "the server to answer initialize with its marker written",
    )
    assert len(markers(world, s.session_id)) == 1
    os.kill(int(pid_file.read_text()), signum)
    runner.join(timeout=30)
    assert markers(world, s.session_id) == []


# ---------------------------------------------------------------------- third-party client


def test_the_mcp_inspector_lists_the_tools_strictly_and_sends_only_from_inside_a_session(world: World) -> None:
    from tests.e2e.harness import inspector_bin

    exe = inspector_bin()  # skips locally without it; fails in CI
    server = [sys.executable, "-m", "attend", "mcp"]
    s = world.session("proj")
    join_channel(world, s)
    listed = s.run(
        [exe, "--cli", *server, "-e", f"ATTEND_HOME={world.spool_root}", "--method", "tools/list", "--strict"]
    )
    assert listed.rc == 0, listed.stderr
    assert len(json.loads(listed.stdout)["tools"]) == 15
    call = ["--method", "tools/call", "--tool-name", "send", "--tool-args-json", '{"message":"via inspector"}']
    sent = s.run([exe, "--cli", *server, "-e", f"ATTEND_HOME={world.spool_root}", *call, "--format", "json"])
    assert sent.rc == 0, sent.stderr
    record_id = json.loads(sent.stdout)["result"]["structuredContent"]["id"]
    record = envelope.parse(world.spool.read(world.spool.room_path("open", record_id)))
    assert (record.from_kind, record.from_id) == ("agent", s.session_id)

    outside = subprocess.run(
        [exe, "--cli", *server, "-e", f"ATTEND_HOME={world.spool_root}", *call, "--format", "json"],
        capture_output=True,
        text=True,
        env=world.env,
        timeout=60,
    )
    assert outside.returncode == 5, outside.stderr
    assert world.spool.room_names("open") == [record_id]
    assert not mcp_markers.live_markers(world.spool, s.session_id)


def inotify_handles(pid: int) -> int:
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            count += os.readlink(f"/proc/{pid}/fd/{fd}") == "anon_inode:inotify"
        except OSError:
            continue
    return count


def test_stdin_closing_during_an_inbox_wait_ends_the_server_and_its_marker(world: World) -> None:
    from attend.verbs import join as join_verb

    sid = adopt(world)
    join_verb.run(world.context(), join_verb.JoinRequest("crew"))
    server = RawServer(world)
    server.initialize()
    server.send(
        {
            "jsonrpc": "2.0",
            "id": 99,
            "method": "tools/call",
            "params": {"name": "inbox_wait", "arguments": {"seconds": 60}},
        }
    )
    wait_until(lambda: inotify_handles(server.proc.pid), "the wait to watch the maildir")
    assert inotify_handles(server.proc.pid) == 1
    assert markers(world, sid)
    assert server.proc.stdin
    server.proc.stdin.close()
    # Well before the wait's own 60 s deadline: the server does not sit out a wait nobody will read.
    server.proc.wait(timeout=30)
    assert server.proc.returncode == 0
    assert markers(world, sid) == []


# ---------------------------------------------------------------------- mute and unmute


async def test_over_stdio_mute_hides_a_channel_from_status_to_unmute_and_inbox_keeps_its_mail(world: World) -> None:
    from attend.domain.attention import attention

    sid = adopt(world)
    join_channel_here(world)
    peer = world.session("other")
    join_channel(world, peer)
    mutes = world.spool_root / "sessions" / sid / attention.MUTES
    async with stdio_client(stdio_params(world)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        muted = structured(await session.call_tool("mute", {"target": "#open", "duration": "1h"}))
        listed = structured(await session.call_tool("status", {}))["mutes"]
        out = peer.attend("send", "while you were muted")
        assert out.rc == 0, out.stderr
        inbox = structured(await session.call_tool("inbox", {}))
        unmuted = structured(await session.call_tool("unmute", {"target": "#open"}))
        again = error_text(await session.call_tool("unmute", {"target": "#open"}))
    assert (muted["key"], muted["target"]) == ("room:open", "#open") and muted["until"]
    assert [m.split(" until ")[0] for m in listed] == ["#open"]
    assert "while you were muted" in [m["body"] for m in inbox["messages"]]
    assert unmuted["mutes"] == [] and json.loads(mutes.read_text()) == {}
    assert again == "#open is not muted (attend status lists mutes)"


async def test_over_stdio_bad_mute_input_is_one_line_with_is_error_and_writes_nothing(world: World) -> None:
    from attend.domain.attention import attention

    sid = adopt(world)
    join_channel_here(world)
    async with stdio_client(stdio_params(world)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        calls = {
            "bad channel": ("mute", {"target": "#no such"}),
            "bad duration": ("mute", {"target": "#open", "duration": "soon"}),
            "empty": ("mute", {"target": ""}),
            "unknown peer": ("mute", {"target": "nobody-by-that-name"}),
            "self": ("mute", {"target": sid}),
            "no target": ("mute", {}),
            "not muted": ("unmute", {"target": "#open"}),
        }
        errors = {what: error_text(await session.call_tool(tool, args)) for what, (tool, args) in calls.items()}
    for what, text in errors.items():
        assert text and "\n" not in text and "Traceback" not in text, what
    assert errors["bad duration"] == "'soon' is not a duration: give one such as 30m, 2h or 1d"
    assert errors["self"] == "that is this session; nothing to mute"
    assert errors["empty"].startswith("give whom to mute")
    assert errors["no target"].startswith("bad arguments for mute (")
    assert not (world.spool_root / "sessions" / sid / attention.MUTES).exists()


def test_a_batch_piped_on_stdin_gets_every_answer_before_the_server_exits(world: World, tmp_path: Path) -> None:
    # `attend mcp < requests.jsonl`, as its help shows: stdin ends right after the last call, and
    # closing the server's stream would cancel the calls still in flight.
    calls = [("status", {}), ("peers", {}), ("inbox", {}), ("peers", {}), ("status", {}), ("peers", {})]
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INITIALIZE},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    frames += [
        {"jsonrpc": "2.0", "id": 3 + i, "method": "tools/call", "params": {"name": name, "arguments": args}}
        for i, (name, args) in enumerate(calls)
    ]
    batch = tmp_path / "requests.jsonl"
    batch.write_text("".join(json.dumps(f) + "\n" for f in frames))
    with batch.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "attend", "mcp"],
            stdin=stdin,
            capture_output=True,
            env=world.env,
            cwd=world.project("proj"),
            timeout=120,
        )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0, done.stderr
    assert sorted(a["id"] for a in answers) == list(range(1, 3 + len(calls)))
    assert not [a for a in answers if "error" in a or a.get("result", {}).get("isError")]
