"""The front of `attend mcp` (attend/mcp/front.py): the discovery requests answered without the SDK,
exactly as the SDK server answers them, and the wire handed over to the server after them."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from typing import Any

import pytest

from attend.mcp import discovery
from attend.mcp.front import Front
from attend.verbs import join as join_verb
from tests.support import RawServer, World, adopt

# The _meta Claude Code 2.1.332 puts on every request (recorded through a tee between it and attend mcp).
CLAUDE_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {
        "name": "claude-code",
        "title": "Claude Code",
        "version": "2.1.332",
        "description": "Anthropic's agentic coding tool",
        "websiteUrl": "https://claude.com/claude-code",
    },
    "io.modelcontextprotocol/clientCapabilities": {
        "roots": {"listChanged": True},
        "elicitation": {"form": {}, "url": {}},
    },
}
LISTEN = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}


def request(rid: int | str, method: str, **params: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()


def claude_start() -> list[bytes]:
    """What Claude Code sends at a session's start, in its order, before the first tool call."""
    return [
        request("server-discover-probe-1", "server/discover", _meta=CLAUDE_META),
        request("listen:0", "subscriptions/listen", _meta=CLAUDE_META, notifications=LISTEN),
        request(0, "server/discover", _meta=CLAUDE_META),
        request(1, "prompts/list", _meta=CLAUDE_META),
        request(2, "resources/list", _meta=CLAUDE_META),
        request(3, "tools/list", _meta=CLAUDE_META),
    ]


def classic_start(protocol: str) -> list[bytes]:
    info = {"name": "raw", "version": "0"}
    return [
        request(1, "initialize", protocolVersion=protocol, capabilities={}, clientInfo=info),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
        request(2, "tools/list"),
        request(3, "ping"),
        request(4, "prompts/list"),
    ]


def over_stdio(world: World, frames: list[bytes]) -> tuple[RawServer, list[dict[str, Any]]]:
    server = RawServer(world)
    answers = []
    for raw in frames:
        server.send_bytes(raw)
        if b'"id"' in raw:
            answers.append(server.answer())
    return server, answers


@pytest.mark.parametrize("start", ["claude", "classic"])
def test_the_front_itself_answers_every_discovery_frame_with_the_sdks_answer(start: str) -> None:
    frames = claude_start() if start == "claude" else classic_start("2025-11-25")
    out = io.BytesIO()
    taken = Front(out)
    assert [taken.take(raw) for raw in frames] == [True] * len(frames)
    assert [json.loads(line) for line in out.getvalue().splitlines()] == discovery.sdk_answers(frames)
    assert taken.take(request(9, "tools/call", name="status", arguments={})) is False


def test_the_recorded_answers_are_what_the_sdk_server_answers_now() -> None:
    # A tool, a description or the SDK changed without `python -m attend.mcp.discovery --write`.
    assert discovery.TARGET.read_text() == discovery.render(discovery.record())


def test_the_front_answers_claude_codes_start_as_the_sdk_does_then_hands_the_wire_over(world: World) -> None:
    adopt(world)
    join_verb.run(world.context(), join_verb.JoinRequest("crew"))  # this process's session, enrolled
    frames = claude_start()
    server, answers = over_stdio(world, frames)
    call = server.request("tools/call", {"name": "status", "arguments": {}, "_meta": CLAUDE_META})
    listed_again = server.request("tools/list", {"_meta": CLAUDE_META})  # now the SDK's own answer
    rc, rest, err = server.close()
    assert answers == discovery.sdk_answers(frames)
    assert call["result"]["isError"] is False and call["result"]["structuredContent"]["enrolled"] is True
    assert listed_again["result"] == answers[-1]["result"]
    # The server's own acknowledgement of the replayed listen never reached the wire: nothing but
    # the answers above did, and the listen stream ended with the server.
    assert rc == 0 and all(json.loads(line).get("id") == "listen:0" for line in rest.splitlines()), rest
    assert "Traceback" not in err and "no answer to the replayed" not in err


@pytest.mark.parametrize("protocol", ["2025-11-25", "2025-06-18", "2099-01-01"])
def test_the_front_answers_a_classic_handshake_as_the_sdk_does_then_hands_the_wire_over(
    world: World, protocol: str
) -> None:
    frames = classic_start(protocol)
    server, answers = over_stdio(world, frames)
    call = server.request("tools/call", {"name": "status", "arguments": {}})
    rc, rest, err = server.close()
    assert answers == discovery.sdk_answers(frames)
    assert answers[0]["result"]["protocolVersion"] == (protocol if protocol != "2099-01-01" else "2025-11-25")
    assert call["result"]["structuredContent"]["kind"] == "human"
    assert rc == 0 and rest == "" and "Traceback" not in err


def test_what_the_front_does_not_know_goes_to_the_sdk_server(world: World) -> None:
    # A list with a cursor, then a second initialize: the SDK decides both, after the replay.
    again = request(
        3, "initialize", protocolVersion="2025-11-25", capabilities={}, clientInfo={"name": "a", "version": "0"}
    )
    frames = [*classic_start("2025-11-25")[:2], request(2, "tools/list", cursor="x"), again]
    server, answers = over_stdio(world, frames)
    rc, rest, _ = server.close()
    assert answers == discovery.sdk_answers(frames)
    assert rc == 0 and rest == ""
    early = [request(1, "tools/list")]  # before any handshake: the SDK's refusal, not a list
    server, answers = over_stdio(world, early)
    server.close()
    assert answers == discovery.sdk_answers(early) and answers[0]["error"]["code"] == -32602


def test_the_front_imports_neither_the_sdk_nor_pydantic_nor_the_verbs() -> None:
    probe = (
        "import sys; import attend.mcp.front\n"
        "heavy = ('mcp', 'mcp_types', 'pydantic', 'anyio', 'attend.verbs', 'attend.domain', 'attend.mcp.server')\n"
        "print([m for m in sys.modules if m.startswith(heavy)])"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
