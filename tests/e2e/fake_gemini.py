"""A scripted stand-in for the Gemini API on 127.0.0.1, for driving the real Gemini CLI.

The same contract as ``fake_api.FakeAPI`` (every request recorded before it is answered; only turn
requests consume the script; a broken or exhausted script ends the turn), speaking what Gemini CLI
0.61.0 sends with ``GOOGLE_GEMINI_BASE_URL``: ``POST /v1beta/models/<model>:streamGenerateContent
?alt=sse``, answered by one SSE event holding a whole ``GenerateContentResponse``.

A turn request is one that carries ``tools``. The CLI also sends, with each prompt, a routing
classifier (``:generateContent``, no tools, JSON asked for) and may count tokens: both are answered
outside the script. A script entry is the fake's ``Reply``: a text block is a ``text`` part, a tool
block a ``functionCall`` part (``shell(cmd)`` calls ``run_shell_command``; an MCP tool is
``mcp_<server>_<tool>``).
"""

from __future__ import annotations

import json
import uuid
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.e2e.fake_api import FakeAPI, Reply, Request, call, done

MODEL = "gemini-3.8-flash"
# The routing classifier's answer: both strategies' fields, so neither logs a parse failure.
CLASSIFIER = {
    "reasoning": "scripted",
    "model_choice": "flash",
    "complexity_reasoning": "scripted",
    "complexity_score": 10,
}
UNTRUSTED = ("<untrusted_context>\n", "\n</untrusted_context>")


def shell(command: str) -> Reply:
    """One model turn that runs ``command`` with Gemini's shell tool."""
    return call("run_shell_command", {"command": command})


def mcp(server: str, tool: str, args: dict[str, Any] | None = None) -> Reply:
    return call(f"mcp_{server}_{tool}", args or {})


def _contents(req: Request) -> list[dict[str, Any]]:
    items = req.body.get("contents") if isinstance(req.body, dict) else None
    return [c for c in items or [] if isinstance(c, dict)]


def unwrap(text: str) -> str:
    """A tool's output without the ``<untrusted_context>`` wrapper the client puts around it."""
    if text.startswith(UNTRUSTED[0]) and text.endswith(UNTRUSTED[1]):
        return text[len(UNTRUSTED[0]) : -len(UNTRUSTED[1])]
    return text


def user_texts(requests: list[Request]) -> list[str]:
    """Every user text part the model received, once per position (a repeated delivery shows)."""
    seen: dict[tuple[int, int, str], str] = {}
    for r in requests:
        for i, c in enumerate(_contents(r)):
            if c.get("role") != "user":
                continue
            for j, part in enumerate(c.get("parts") or []):
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    seen.setdefault((i, j, part["text"]), part["text"])
    return list(seen.values())


def _response_text(part: dict[str, Any]) -> str:
    response = part["functionResponse"].get("response") or {}
    output = response.get("output", response.get("error", ""))
    return unwrap(output if isinstance(output, str) else json.dumps(output))


def tool_outputs(requests: list[Request]) -> list[tuple[str, str]]:
    """(tool name, output) of every tool result the model received, in order, once each."""
    seen: dict[str, tuple[str, str]] = {}
    for r in requests:
        for c in _contents(r):
            for part in c.get("parts") or []:
                if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
                    key = str(part["functionResponse"].get("id") or len(seen))
                    seen.setdefault(key, (str(part["functionResponse"].get("name")), _response_text(part)))
    return list(seen.values())


def latest_output(req: Request) -> str:
    """The output of the last tool call in ``req`` (for script callables)."""
    for c in reversed(_contents(req)):
        for part in reversed(c.get("parts") or []):
            if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
                return _response_text(part)
    return ""


def response_json(answer: Reply) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for b in answer.blocks:
        if b.kind == "text":
            parts.append({"text": b.text})
        else:
            parts.append({"functionCall": {"name": b.name, "args": b.input, "id": b.id}})
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": MODEL,
        "responseId": uuid.uuid4().hex[:16],
    }


def is_side_request(body: Any) -> bool:
    return not (isinstance(body, dict) and body.get("tools"))


class FakeGemini(FakeAPI):
    """Serve the script as the Gemini API; use as a context manager."""

    @property
    def turns(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if ":streamGenerateContent" in r.path and not r.side]

    def user_texts(self) -> list[str]:
        return user_texts(self.turns)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self
        base = super()._handler()

        class Handler(base):  # type: ignore[misc, valid-type]
            def do_POST(self) -> None:
                body = self._body()
                path = self.path.split("?", 1)[0]
                if path.endswith(":countTokens"):
                    with api._lock:
                        api.requests.append(Request("POST", self.path, body, side=True))
                    self._json(200, {"totalTokens": 10})
                    return
                if not path.endswith((":streamGenerateContent", ":generateContent")):
                    with api._lock:
                        api.requests.append(Request("POST", self.path, body, side=True))
                    self._json(404, {"error": {"code": 404, "message": path, "status": "NOT_FOUND"}})
                    return
                side = is_side_request(body)
                req = Request("POST", self.path, body, side=side)
                with api._lock:
                    api.requests.append(req)
                if api.on_request is not None and not side:
                    try:
                        api.on_request(req)
                    except Exception as e:
                        api.errors.append(f"on_request: {e}")
                answer = done(json.dumps(CLASSIFIER)) if side else api._take(req)
                doc = response_json(answer)
                if path.endswith(":generateContent"):
                    self._json(200, doc)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(f"data: {json.dumps(doc)}\r\n\r\n".encode())
                self.wfile.flush()
                self.close_connection = True

        return Handler


__all__ = ["FakeGemini", "Reply", "done", "mcp", "shell"]
