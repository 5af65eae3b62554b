"""Issue 18 and issue 14's re-presentation with the real client: the reheat reaches the model once,
at its first message through the sensor loop, worded for MCP when the server is connected and for
the CLI when not, and not again within the stretch; and a session shown a message, then compacted
(`/compact` between two stream-json turns), receives the unanswered thread and the reheat once."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import pytest

from attend.domain.attention import reheat
from tests.e2e.fake_api import Entry, Reply, Request, bash, call, done, tool_search
from tests.e2e.harness import E2EWorld, expect_ok, latest_user_texts, session_id_of, stop_hook_blocks, wait_for

pytestmark = pytest.mark.e2e

DRAIN = "attend inbox --drain --format hook"
RECALL = "attend recall --hook"


def decision(e2e: E2EWorld, sid: str) -> bool | None:
    """The loop's disclosure sensor's last decision on a shown message (sensors.json), if it made one."""
    try:
        state = json.loads((e2e.spool_root / "sessions" / sid / "sensors.json").read_text())["disclosure"]
    except (OSError, ValueError, KeyError):
        return None
    value = state.get("said")
    return value if isinstance(value, bool) else None


@pytest.mark.parametrize("mcp", [True, False], ids=["mcp-connected", "cli-only"])
def test_the_reheat_reaches_the_model_once_at_its_first_message_worded_by_the_mcp_marker(
    e2e: E2EWorld, mcp: bool
) -> None:
    allow = ["Bash(attend:*)", "mcp__attend__status"] if mcp else ["Bash(attend:*)"]
    e2e.settings({"permissions": {"allow": allow}})
    first, second = (f"{w} {uuid.uuid4().hex[:8]}" for w in ("first", "second"))
    state: dict[str, Any] = {}

    def loop_up_then_human_sends(req: Request) -> Reply:
        started = expect_ok(req, "Monitor attend run")
        state["task"] = re.search(r"task (\w+)", started.text).group(1)  # type: ignore[union-attr]
        state["sid"] = sid = session_id_of(req)
        assert sid
        wait_for(lambda: e2e.sensor_live(sid), 30, "attend run to be live")
        e2e.human_send(first)
        return done("Waiting.")

    def on_event(req: Request) -> Reply:
        if "stopped" in state:
            return done("Stopped.")
        events = "\n".join(re.findall(r"<event>(.*?)</event>", "\n".join(latest_user_texts(req)), re.S))
        state["seen"] = state.get("seen", "") + events
        sid = state["sid"]
        if second in events:
            # The sensor looked at the second message and said nothing: the stretch holds.
            wait_for(lambda: decision(e2e, sid) is False, 30, "the sensor's decision")
            state["stopped"] = True
            return call("TaskStop", {"task_id": state["task"]})
        if "said" not in state and first in state["seen"] and "sensor=disclosure" in state["seen"]:
            state["said"] = wait_for(lambda: decision(e2e, sid), 30, "the sensor's first decision")
            e2e.human_send(second)
        return done("Still waiting.")

    script: list[Entry] = [
        *([call("mcp__attend__status", {})] if mcp else []),  # the server is up and its marker written
        tool_search("Monitor", "TaskStop"),
        call("Monitor", {"command": "attend run", "description": "attend", "timeout_ms": 120000}),
        loop_up_then_human_sends,
        *[on_event] * 20,
    ]
    run = e2e.claude(script, mcp_config=e2e.mcp_config() if mcp else None)

    assert run.rc == 0 and not run.timed_out and not run.api.errors, run.explain()
    said = [e for e in run.monitor_events() if e.startswith("[attend sensor=disclosure ")]
    assert said == [f"[attend sensor=disclosure priority=low] {reheat.wording(mcp)}"], run.explain()
    other = reheat.wording(not mcp)
    assert not [t for t in run.user_texts() if other in t], run.explain()
    assert state.get("stopped"), run.explain()


def test_a_session_shown_a_message_then_compacted_receives_the_re_presentation_once(e2e: E2EWorld) -> None:
    e2e.settings(
        {
            "permissions": {"allow": ["Bash(attend:*)"]},
            "hooks": {
                "Stop": [{"hooks": [{"type": "command", "command": DRAIN, "timeout": 30}]}],
                "SessionStart": [{"matcher": "compact", "hooks": [{"type": "command", "command": RECALL}]}],
            },
        }
    )
    body = f"can you take the migration? {uuid.uuid4().hex[:8]}"
    sent: dict[str, Any] = {}

    def human_sends(req: Request) -> Reply:
        expect_ok(req, "attend join")
        sent.update(e2e.human_send(body))
        return done("Joined.")

    def drained(req: Request) -> Reply:
        if not any(body in b for b in stop_hook_blocks([req])):
            raise AssertionError(f"the drain did not show the message: {latest_user_texts(req)}")
        return done("Noted; later.")

    script: list[Entry] = [bash("attend join e2e"), human_sends, drained, done("Carrying on.")]
    client = e2e.start(script, "join attend", stream_input=True)
    assert client.api.wait_for_turns(3, 60), "the first prompt's three turns"
    client.say("/compact")  # queued behind the first prompt if it is still ending
    wait_for(lambda: _compacted(e2e), 60, "the compact hook to run")
    client.say("carry on")
    assert client.api.wait_for_turns(4, 60), "the turn after the compaction"
    run = client.wait()

    assert run.rc == 0 and not run.timed_out and not run.api.errors, run.explain()
    assert len(run.api.compactions) >= 1, run.explain()
    after = run.turns[-1]
    texts = [t for m in after.messages for t in _texts(m)]
    assert any("This session is being continued from a previous conversation" in t for t in texts)
    recalled = [t for t in run.user_texts() if "SessionStart hook additional context:" in t]
    assert len(recalled) == 1, run.explain()
    line = f"- {sent['id']} {e2e.env['USER']}: {body}"
    assert recalled[0].count(line) == 1 and recalled[0].count(f"[attend reheat] {reheat.wording(False)}") == 1
    assert sum(t.count(sent["id"]) for t in run.user_texts() if "additional context" in t) == 1


def _texts(m: dict[str, Any]) -> list[str]:
    content = m.get("content")
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


def _compacted(e2e: E2EWorld) -> bool:
    return any((e2e.spool_root / "sessions").glob("*/compacted"))
