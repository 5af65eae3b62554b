"""The scripted fake API on its own (no client needed): one script entry per turn request, side
requests answered without consuming the script, the SSE stream in the order the client parses it,
and a broken or exhausted script ending the turn instead of hanging the client."""

from __future__ import annotations

import json
from typing import Any

from tests.e2e.fake_api import FakeAPI, Request, bash, done, post, reply, text, tool
from tests.e2e.harness import (
    deliveries,
    latest_tool_result,
    session_id_of,
    stop_hook_blocks,
    task_notifications,
    tool_results,
)

TURN = {"model": "m", "max_tokens": 32000, "stream": True, "tools": [{"name": "Bash"}], "messages": []}


def events(stream: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for chunk in stream.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in chunk.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_a_tool_use_reply_streams_as_sse_with_the_tool_use_stop_reason() -> None:
    with FakeAPI([reply(text("running"), tool("Bash", {"command": "attend whoami"}, id="toolu_1"))]) as api:
        status, stream = post(api, "/v1/messages?beta=true", TURN)
    assert status == 200
    seq = events(stream)
    assert [e for e, _ in seq] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert seq[5][1]["delta"] == {"type": "input_json_delta", "partial_json": '{"command": "attend whoami"}'}
    assert seq[4][1]["content_block"]["id"] == "toolu_1"
    assert seq[7][1]["delta"]["stop_reason"] == "tool_use"


def test_side_requests_and_count_tokens_do_not_consume_the_script() -> None:
    with FakeAPI([done("first"), done("second")]) as api:
        post(api, "/v1/messages", {"max_tokens": 32000, "stream": True, "messages": []})  # no tools: title
        post(api, "/v1/messages", {**TURN, "max_tokens": 1})  # quota probe
        status, body = post(api, "/v1/messages/count_tokens", {"messages": []})
        assert (status, json.loads(body)) == (200, {"input_tokens": 10})
        _, stream = post(api, "/v1/messages?beta=true", TURN)
        missing, _ = post(api, "/v1/elsewhere", {})
    assert "first" in stream
    assert api.consumed == 1 and len(api.side_requests) == 4 and len(api.turns) == 1
    assert missing == 404


def test_an_exhausted_or_failing_script_ends_the_turn_and_says_why() -> None:
    def broken(req: Request) -> str:
        raise ValueError("no such thing")

    with FakeAPI([broken]) as api:
        _, first = post(api, "/v1/messages", TURN)
        _, second = post(api, "/v1/messages", TURN)
    assert "end_turn" in first and "script entry 0 failed" in first
    assert "end_turn" in second and api.exhausted == 1
    assert api.errors == ["script entry 0: ValueError: no such thing"]


def test_the_readers_find_tool_results_hook_blocks_notifications_and_the_session_id() -> None:
    call = bash("attend whoami --machine").blocks[0]
    body = {
        **TURN,
        "metadata": {"user_id": json.dumps({"device_id": "d", "session_id": "sid-1"})},
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": call.id, "name": "Bash", "input": call.input}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "resolved=true"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
            {
                "role": "user",
                "content": "<task-notification><task-id>t1</task-id><summary>Monitor event</summary>"
                "<event>line one\nline two</event></task-notification>",
            },
            {"role": "system", "content": [{"type": "text", "text": 'Stop hook blocking error from command: "x": hi'}]},
        ],
    }
    req = Request("POST", "/v1/messages", body)
    [result] = tool_results([req])
    assert (result.name, result.text, result.is_error) == ("Bash", "resolved=true", False)
    assert latest_tool_result(req) is None  # the model has spoken since
    assert stop_hook_blocks([req]) == ['Stop hook blocking error from command: "x": hi']
    [note] = task_notifications([req])
    assert note.task_id == "t1" and note.events == ("line one\nline two",)
    assert session_id_of(req) == "sid-1"


def test_a_compaction_summary_request_gets_a_summary_and_leaves_the_script_alone() -> None:
    ask = "CRITICAL: Respond with TEXT ONLY.\n\nYour task is to create a detailed summary of the conversation so far"
    body = {**TURN, "messages": [{"role": "user", "content": [{"type": "text", "text": ask}]}]}
    with FakeAPI([done("the next turn")]) as api:
        _, stream = post(api, "/v1/messages?beta=true", body)
        _, after = post(api, "/v1/messages?beta=true", TURN)
    said = "".join(d["delta"].get("text", "") for e, d in events(stream) if e == "content_block_delta")
    assert "<summary>" in said and "</summary>" in said
    assert len(api.compactions) == 1 and api.consumed == 1
    assert "the next turn" in after


def test_a_blocking_stop_hook_and_the_clients_feedback_echo_of_it_count_as_one_delivery() -> None:
    def req(*texts: tuple[str, str]) -> Request:
        return Request(
            "POST",
            "/v1/messages",
            {"messages": [{"role": r, "content": [{"type": "text", "text": t}]} for r, t in texts]},
        )

    echoed = req(
        ("user", "go"),
        ("user", "<system-reminder>\nStop hook feedback:\n[attend] m1\n</system-reminder>"),
        ("system", 'Stop hook blocking error from command: "d": [attend] m1'),
    )
    assert deliveries([echoed], "m1") == 1
    woken = req(("user", "go"), ("user", "Stop hook feedback:\n[attend] m2"))  # a waiter's wake: no block beside it
    assert deliveries([woken, woken], "m2") == 1  # the same text at the same place in a later request
    twice = req(
        ("system", 'Stop hook blocking error from command: "d": m3'),
        ("user", "Stop hook feedback:\nm3"),
        ("system", 'Stop hook blocking error from command: "d": m3 again'),
    )
    assert deliveries([twice], "m3") == 2
