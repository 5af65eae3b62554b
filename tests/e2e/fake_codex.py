"""A scripted stand-in for the OpenAI Responses API on 127.0.0.1, for driving the real Codex CLI.

The same contract as ``fake_api.FakeAPI`` (every request recorded before it is answered; only turn
requests consume the script; a broken or exhausted script ends the turn), speaking what Codex 0.171.0
sends to a custom provider with ``wire_api = "responses"``: ``POST …/responses`` with ``stream``,
answered by an SSE stream of ``response.created``, ``response.output_item.added``/``done`` per
item (with ``response.output_text.delta`` for a message) and ``response.completed``.

A script entry is the fake's ``Reply`` (built with ``fake_api``'s ``reply``, ``call``, ``done``): a
text block becomes an assistant ``message`` item, a tool block a ``function_call`` item. A tool named
``mcp__<server>__<tool>`` is sent as Codex's namespaced call (``namespace: mcp__<server>``, ``name:
<tool>``); the flat name is refused by the client. ``shell(cmd)`` is a call to ``exec_command``.

Side requests (the interactive client's title generation) get a short answer outside the script.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.e2e.fake_api import Block, FakeAPI, Reply, Request, call, done

TITLE_PROMPT = "Generate a concise, single-line task title"
USAGE = {
    "input_tokens": 10,
    "input_tokens_details": None,
    "output_tokens": 5,
    "output_tokens_details": None,
    "total_tokens": 15,
}


def shell(cmd: str) -> Reply:
    """One model turn that runs ``cmd`` with Codex's shell tool."""
    return call("exec_command", {"cmd": cmd, "yield_time_ms": 10000})


FREEFORM = "__freeform__"  # the input key of a call sent as a freeform (custom) tool's text


def patch(text: str) -> Reply:
    """One model turn that calls Codex's ``apply_patch``: a freeform tool, its input the patch's text."""
    return call("apply_patch", {FREEFORM: text})


def mcp(server: str, tool: str, args: dict[str, Any] | None = None) -> Reply:
    """One model turn that calls an MCP tool (Codex's namespaced form)."""
    return call(f"mcp__{server}__{tool}", args or {})


def _input(req: Request) -> list[dict[str, Any]]:
    items = req.body.get("input") if isinstance(req.body, dict) else None
    return [i for i in items or [] if isinstance(i, dict)]


def _item_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(str(c.get("text", "")) for c in content or [] if isinstance(c, dict))


def is_side_request(body: Any) -> bool:
    if not isinstance(body, dict):
        return True
    return any(TITLE_PROMPT in _item_text(i) for i in body.get("input") or [] if isinstance(i, dict))


def user_texts(requests: list[Request]) -> list[str]:
    """Every user-role text the model received, once per position (a repeated delivery shows)."""
    seen: dict[tuple[int, str], str] = {}
    for r in requests:
        for i, item in enumerate(_input(r)):
            if item.get("type") == "message" and item.get("role") == "user":
                seen.setdefault((i, _item_text(item)), _item_text(item))
    return list(seen.values())


def tool_outputs(requests: list[Request]) -> dict[str, str]:
    """call_id -> the text of the tool's output the model received (shell and MCP alike)."""
    out: dict[str, str] = {}
    for r in requests:
        for item in _input(r):
            if item.get("type") != "function_call_output":
                continue
            output = item.get("output")
            text = output if isinstance(output, str) else _item_text({"content": output})
            out.setdefault(str(item.get("call_id")), text)
    return out


def latest_output(req: Request) -> str:
    """The output of the last tool call in ``req`` (for script callables)."""
    for item in reversed(_input(req)):
        if item.get("type") in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            return output if isinstance(output, str) else _item_text({"content": output})
    return ""


def thread_id_of(req: Request) -> str | None:
    """The thread id Codex sends with every turn (``prompt_cache_key``)."""
    key = req.body.get("prompt_cache_key") if isinstance(req.body, dict) else None
    return key if isinstance(key, str) else None


def _items(answer: Reply) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for n, b in enumerate(answer.blocks):
        if b.kind == "text":
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "id": f"msg_{n}_{uuid.uuid4().hex[:8]}",
                    "content": [{"type": "output_text", "text": b.text, "annotations": []}],
                    "status": "completed",
                }
            )
            continue
        if FREEFORM in b.input:
            items.append(
                {
                    "type": "custom_tool_call",
                    "id": f"ctc_{n}_{uuid.uuid4().hex[:8]}",
                    "call_id": f"call_{b.id}",
                    "name": b.name,
                    "input": b.input[FREEFORM],
                    "status": "completed",
                }
            )
            continue
        item: dict[str, Any] = {
            "type": "function_call",
            "id": f"fc_{n}_{uuid.uuid4().hex[:8]}",
            "call_id": f"call_{b.id}",
            "name": b.name,
            "arguments": json.dumps(b.input),
            "status": "completed",
        }
        if b.name.startswith("mcp__") and b.name.count("__") >= 2:
            server, tool = b.name[len("mcp__") :].split("__", 1)
            item.update(namespace=f"mcp__{server}", name=tool)
        items.append(item)
    return items


def sse_events(answer: Reply) -> Iterator[dict[str, Any]]:
    rid = f"resp_{uuid.uuid4().hex[:16]}"
    yield {"type": "response.created", "response": {"id": rid}}
    for i, item in enumerate(_items(answer)):
        yield {"type": "response.output_item.added", "output_index": i, "item": item}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield {
                "type": "response.output_text.delta",
                "output_index": i,
                "content_index": 0,
                "item_id": item["id"],
                "delta": text,
            }
        yield {"type": "response.output_item.done", "output_index": i, "item": item}
    yield {"type": "response.completed", "response": {"id": rid, "usage": USAGE}}


class FakeResponses(FakeAPI):
    """Serve the script as the Responses API; use as a context manager."""

    @property
    def turns(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.path.split("?")[0].endswith("/responses") and not r.side]

    def user_texts(self) -> list[str]:
        return user_texts(self.turns)

    def hook_prompts(self) -> list[str]:
        """What a Stop hook's block handed the model: the text inside ``<hook_prompt …>…</hook_prompt>``."""
        out = []
        for t in self.user_texts():
            if t.startswith("<hook_prompt") and t.endswith("</hook_prompt>"):
                out.append(t[t.index(">") + 1 : -len("</hook_prompt>")])
        return out

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self
        base = super()._handler()

        class Handler(base):  # type: ignore[misc, valid-type]
            def do_GET(self) -> None:
                # The websocket upgrade the built-in provider tries first: refused, so it falls back.
                with api._lock:
                    api.requests.append(Request("GET", self.path, None, side=True))
                self._json(404, {"error": {"message": "not here", "type": "not_found"}})

            def do_POST(self) -> None:
                body = self._body()
                path = self.path.split("?", 1)[0]
                if not path.endswith("/responses"):
                    with api._lock:
                        api.requests.append(Request("POST", self.path, body, side=True))
                    self._json(404, {"error": {"message": path, "type": "not_found"}})
                    return
                side = is_side_request(body)
                req = Request("POST", self.path, body, side=side)
                with api._lock:
                    api.requests.append(req)
                if api.on_request is not None:
                    try:
                        api.on_request(req)
                    except Exception as e:
                        api.errors.append(f"on_request: {e}")
                answer = done(api.side_reply) if side else api._take(req)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for event in sse_events(answer):
                    self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

        return Handler


__all__ = ["Block", "FakeResponses", "Reply", "done", "mcp", "shell"]
