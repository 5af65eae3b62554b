"""The Codex and Gemini fake model servers on their own (no client needed): the wire shapes each
client parses, side requests answered outside the script, and the views tests assert on."""

from __future__ import annotations

import json
from typing import Any

from tests.e2e.fake_api import done, post
from tests.e2e.fake_codex import FakeResponses, mcp, shell
from tests.e2e.fake_gemini import FakeGemini
from tests.e2e.fake_gemini import shell as gemini_shell


def sse_data(stream: str) -> list[dict[str, Any]]:
    return [json.loads(line[len("data: ") :]) for line in stream.splitlines() if line.startswith("data: ")]


def test_codex_fake_streams_items_and_sends_mcp_tools_in_the_namespaced_form() -> None:
    turn = {"model": "gpt-5.5", "stream": True, "tools": [], "input": []}
    with FakeResponses([shell("attend whoami"), mcp("attend", "send", {"body": "hi"}), done("ok")]) as api:
        first = sse_data(post(api, "/v1/responses", turn)[1])
        second = sse_data(post(api, "/v1/responses", turn)[1])
        third = sse_data(post(api, "/v1/responses", turn)[1])
    assert [e["type"] for e in first] == [
        "response.created",
        "response.output_item.added",
        "response.output_item.done",
        "response.completed",
    ]
    call = first[1]["item"]
    assert call["type"] == "function_call" and call["name"] == "exec_command"
    assert json.loads(call["arguments"])["cmd"] == "attend whoami"
    assert {k: second[1]["item"][k] for k in ("namespace", "name")} == {"namespace": "mcp__attend", "name": "send"}
    assert third[2] == {**third[2], "type": "response.output_text.delta", "delta": "ok"}
    assert api.consumed == 3


HOOKED = '<hook_prompt id="x">R</hook_prompt>'


def test_codex_fake_reads_hook_prompts_and_leaves_title_requests_out_of_the_script() -> None:
    title = {"input": [{"type": "message", "role": "user", "content": "Generate a concise, single-line task title"}]}
    hooked = {
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": HOOKED}]},
        ]
    }
    with FakeResponses([done("one")]) as api:
        post(api, "/v1/responses", title)
        post(api, "/v1/responses", hooked)
    assert api.consumed == 1 and len(api.side_requests) == 1
    assert api.hook_prompts() == ["R"]


def test_gemini_fake_answers_the_classifier_and_token_counts_outside_the_script() -> None:
    turn = {"contents": [{"role": "user", "parts": [{"text": "go"}]}], "tools": [{"functionDeclarations": []}]}
    with FakeGemini([gemini_shell("attend whoami"), done("ok")]) as api:
        status, body = post(api, "/v1beta/models/flash-lite:generateContent", {"contents": []})
        assert status == 200 and json.loads(json.loads(body)["candidates"][0]["content"]["parts"][0]["text"])
        assert post(api, "/v1beta/models/m:countTokens", {})[1] == '{"totalTokens": 10}'
        first = sse_data(post(api, "/v1beta/models/m:streamGenerateContent?alt=sse", turn)[1])
        second = sse_data(post(api, "/v1beta/models/m:streamGenerateContent?alt=sse", turn)[1])
    assert first[0]["candidates"][0]["content"]["parts"][0]["functionCall"]["args"] == {"command": "attend whoami"}
    assert second[0]["candidates"][0]["content"]["parts"] == [{"text": "ok"}]
    assert api.consumed == 2 and len(api.turns) == 2
