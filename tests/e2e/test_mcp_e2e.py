"""Issues 5 and 6, the MCP frontend with the real client: attend registered through `--mcp-config`
sends as the calling session (From-Kind agent, the client's own session id), its thirteen tools reach the
model under 6,000 bytes, mute and unmute work from the model, a call without an allow entry is refused
in `-p` mode and sends nothing, and a reply to a message the session sent shows once as an attention
item on its next tool result.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.e2e.fake_api import Entry, Reply, Request, bash, call, done, tool_search
from tests.e2e.harness import E2EWorld, after_ok, deferred_tools, expect_ok, structured, tools_size

pytestmark = pytest.mark.e2e

TOOLS_BUDGET = 6000  # bytes of {name, description, input_schema} for every attend tool, as the model gets them


def settings(*allow: str) -> dict[str, Any]:
    return {"permissions": {"allow": ["Bash(attend:*)", *allow]}}


def test_an_mcp_send_lands_in_the_spool_as_the_calling_session(e2e: E2EWorld) -> None:
    e2e.settings(settings("mcp__attend__send", "mcp__attend__inbox"))
    body = f"via mcp {uuid.uuid4().hex[:8]}"
    human_body = f"from the human {uuid.uuid4().hex[:8]}"
    seen: dict[str, Any] = {}

    def human_sends_then_inbox(req: Request) -> Reply:
        seen["sent"] = structured(req, "mcp__attend__send")
        e2e.human_send(human_body)
        return call("mcp__attend__inbox", {})

    def read_inbox(req: Request) -> Reply:
        seen["inbox"] = structured(req, "mcp__attend__inbox")
        return done("Sent and read.")

    script: list[Entry] = [
        bash("attend join e2e"),
        after_ok("attend join", tool_search("mcp__attend__send", "mcp__attend__inbox")),
        call("mcp__attend__send", {"message": body}),
        human_sends_then_inbox,
        read_inbox,
    ]
    run = e2e.claude(script, mcp_config=e2e.mcp_config())

    assert run.rc == 0 and not run.timed_out, run.explain()
    assert not run.api.errors, run.explain()
    sid = run.session_id
    assert sid
    mine = [s for s in e2e.signals() if s.body == body]
    assert len(mine) == 1, run.explain()
    assert mine[0].from_kind == "agent"
    assert mine[0].from_id == sid
    assert seen["sent"]["id"] == mine[0].id
    assert seen["sent"]["from_kind"] == "agent" and seen["sent"]["from_id"] == sid
    assert human_body in [m["body"] for m in seen["inbox"]["messages"]]


def test_without_an_allow_entry_an_mcp_send_is_refused_and_nothing_is_sent(e2e: E2EWorld) -> None:
    e2e.settings(settings("mcp__attend__inbox"))
    body = f"not allowed {uuid.uuid4().hex[:8]}"
    before: dict[str, Any] = {}

    def send_after_snapshot(req: Request) -> Reply:
        expect_ok(req, "ToolSearch")
        before["files"] = e2e.spool_files()
        return call("mcp__attend__send", {"message": body})

    script: list[Entry] = [
        bash("attend join e2e"),
        after_ok("attend join", tool_search("mcp__attend__send", "mcp__attend__inbox")),
        send_after_snapshot,
        call("mcp__attend__inbox", {}),  # positive control: an allowed tool of the same server runs
        done("Refused."),
    ]
    run = e2e.claude(script, mcp_config=e2e.mcp_config())

    assert run.rc == 0 and not run.timed_out, run.explain()
    assert not run.api.errors, run.explain()
    [send] = run.tool_results("mcp__attend__send")
    assert send.is_error, run.explain()
    assert "permission" in send.text.lower(), run.explain()
    assert e2e.spool_files() == before["files"]
    assert not [s for s in e2e.signals() if s.body == body]
    [inbox] = run.tool_results("mcp__attend__inbox")
    assert not inbox.is_error, run.explain()


def attend_tools_as_received(e2e: E2EWorld) -> list[dict[str, Any]]:
    """Load every attend MCP tool with ToolSearch; return them as the next request carries them."""
    got: dict[str, Any] = {}

    def select_all(req: Request) -> Reply:
        got["deferred"] = [n for n in deferred_tools(req) if n.startswith("mcp__attend__")]
        if not got["deferred"]:
            raise AssertionError("no mcp__attend__ tools among the deferred tools")
        return tool_search(*got["deferred"])

    def capture(req: Request) -> Reply:
        got["tools"] = [t for t in req.tools if str(t.get("name", "")).startswith("mcp__attend__")]
        return done("Loaded.")

    e2e.settings(settings())
    run = e2e.claude([select_all, capture], mcp_config=e2e.mcp_config())
    assert run.rc == 0 and not run.api.errors, run.explain()
    assert sorted(t["name"] for t in got["tools"]) == sorted(got["deferred"]), run.explain()
    tools: list[dict[str, Any]] = got["tools"]
    return tools


def test_the_attend_tools_reach_the_model_under_five_thousand_bytes(e2e: E2EWorld) -> None:
    tools = attend_tools_as_received(e2e)
    size = tools_size(tools)
    print(f"attend MCP tools as the model receives them: {len(tools)} tools, {size} bytes")
    for t in sorted(tools, key=lambda t: t["name"]):
        print(f"  {t['name']}: {tools_size([t])} bytes")
    assert {"mcp__attend__send", "mcp__attend__inbox", "mcp__attend__mute", "mcp__attend__unmute"} <= {
        t["name"] for t in tools
    }
    assert all(t.get("defer_loading") for t in tools)
    assert size < TOOLS_BUDGET


def test_a_reply_to_a_message_sent_through_mcp_shows_once_as_an_attention_item(e2e: E2EWorld) -> None:
    e2e.settings(settings("mcp__attend__send", "mcp__attend__status"))
    body = f"anyone? {uuid.uuid4().hex[:8]}"
    answer = f"yes, me {uuid.uuid4().hex[:8]}"
    seen: dict[str, Any] = {}

    def human_replies_then_status(req: Request) -> Reply:
        seen["sent"] = structured(req, "mcp__attend__send")
        seen["reply"] = e2e.human_send("--to", seen["sent"]["id"], answer, verb="reply")
        return call("mcp__attend__status", {})

    def status_again(req: Request) -> Reply:
        seen["first"] = structured(req, "mcp__attend__status")
        return call("mcp__attend__status", {})

    def finish(req: Request) -> Reply:
        seen["second"] = structured(req, "mcp__attend__status")
        return done("Seen.")

    script: list[Entry] = [
        bash("attend join e2e"),
        after_ok("attend join", tool_search("mcp__attend__send", "mcp__attend__status")),
        call("mcp__attend__send", {"message": body}),
        human_replies_then_status,
        status_again,
        finish,
    ]
    run = e2e.claude(script, mcp_config=e2e.mcp_config())

    assert run.rc == 0 and not run.timed_out, run.explain()
    assert not run.api.errors, run.explain()
    reply_id = seen["reply"]["id"]
    assert seen["reply"]["re"] == seen["sent"]["id"]

    def attention(result: dict[str, Any]) -> list[dict[str, Any]]:
        pending = (result.get("notifications") or {}).get("pending") or []
        return [i for i in pending if i.get("source") == "attention" and i.get("id") == reply_id]

    first = attention(seen["first"])
    assert len(first) == 1, run.explain()
    assert len(first[0]["title"]) <= 80 and "\n" not in first[0]["title"]
    assert attention(seen["second"]) == [], run.explain()


def test_the_model_mutes_and_unmutes_a_channel_through_the_mcp_tools(e2e: E2EWorld) -> None:
    e2e.settings(settings("mcp__attend__mute", "mcp__attend__unmute", "mcp__attend__status"))
    seen: dict[str, Any] = {}

    def status_after_mute(req: Request) -> Reply:
        seen["muted"] = structured(req, "mcp__attend__mute")
        return call("mcp__attend__status", {})

    def unmute_after_status(req: Request) -> Reply:
        seen["status"] = structured(req, "mcp__attend__status")
        return call("mcp__attend__unmute", {"target": "#open"})

    def finish(req: Request) -> Reply:
        seen["unmuted"] = structured(req, "mcp__attend__unmute")
        return done("Muted and unmuted.")

    script: list[Entry] = [
        tool_search("mcp__attend__mute", "mcp__attend__unmute", "mcp__attend__status"),
        after_ok("ToolSearch", call("mcp__attend__mute", {"target": "#open", "duration": "30m"})),
        status_after_mute,
        unmute_after_status,
        finish,
    ]
    run = e2e.claude(script, mcp_config=e2e.mcp_config())

    assert run.rc == 0 and not run.timed_out, run.explain()
    assert not run.api.errors, run.explain()
    assert seen["muted"]["key"] == "room:open" and seen["muted"]["until"], run.explain()
    assert [m.split(" until ")[0] for m in seen["status"]["mutes"]] == ["#open"]
    assert seen["status"]["session_id"] == run.session_id
    assert seen["unmuted"]["mutes"] == []
