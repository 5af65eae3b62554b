"""A scripted stand-in for the Anthropic Messages API on 127.0.0.1, for driving the real Claude Code.

Invariant: every request the client makes is recorded (parsed JSON body) before it is answered, and
stamped (``answered``) once its answer is written whole; only *turn* requests (the ones that carry
the session's tool list) consume the script. Side requests the client makes on its own (title or
topic generation, quota probes: no ``tools``, or a tiny ``max_tokens``) get a short canned answer
without touching the script, and so does a compaction's summary request (``summary``;
docs/architecture/compaction.md), so a test's script lists exactly the model turns it means.

A script entry is a ``Reply``, a string (one text block, ``end_turn``), or a callable that gets the
request and returns one of those; a callable may block (it runs on the server's request thread), for
example until a file appears, with its own deadline. When the script is exhausted the fake ends the
turn with a text reply, so a client never hangs on a missing entry; ``exhausted`` counts those.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "claude-sonnet-4-5-20250929"


# ---------------------------------------------------------------------- replies


@dataclass(frozen=True)
class Block:
    kind: str  # "text" | "tool_use"
    text: str = ""
    name: str = ""
    input: dict[str, Any] = field(default_factory=dict)
    id: str = ""


@dataclass(frozen=True)
class Reply:
    blocks: tuple[Block, ...]

    @property
    def stop_reason(self) -> str:
        return "tool_use" if any(b.kind == "tool_use" for b in self.blocks) else "end_turn"


_ids = itertools.count(1)


def text(s: str) -> Block:
    return Block("text", text=s)


def tool(name: str, input: dict[str, Any] | None = None, id: str | None = None) -> Block:
    return Block(
        "tool_use", name=name, input=dict(input or {}), id=id or f"toolu_e2e{next(_ids):04d}{uuid.uuid4().hex[:12]}"
    )


def reply(*blocks: Block | str) -> Reply:
    return Reply(tuple(text(b) if isinstance(b, str) else b for b in blocks))


def call(name: str, input: dict[str, Any] | None = None, say: str | None = None) -> Reply:
    """One model turn that calls one tool (optionally saying something first)."""
    return reply(*([text(say)] if say else []), tool(name, input))


def bash(command: str, description: str = "run a command") -> Reply:
    return call("Bash", {"command": command, "description": description})


def tool_search(*names: str) -> Reply:
    """Load deferred tools (Monitor, TaskStop, mcp__…) by name, as the model does before calling them."""
    return call("ToolSearch", {"query": "select:" + ",".join(names), "max_results": len(names) + 5})


def done(s: str = "Done.") -> Reply:
    return reply(text(s))


# ---------------------------------------------------------------------- requests


@dataclass
class Request:
    method: str
    path: str
    body: Any
    side: bool = False  # answered without consuming the script
    index: int | None = None  # position in the script, for turn requests
    answered: float | None = None  # time.monotonic() once the whole answer was written and flushed

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or []) if isinstance(self.body, dict) else []

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.body.get("tools") or []) if isinstance(self.body, dict) else []

    def tool_names(self) -> list[str]:
        return [str(t.get("name")) for t in self.tools]

    def system_text(self) -> str:
        system = self.body.get("system") if isinstance(self.body, dict) else None
        if isinstance(system, str):
            return system
        return "\n".join(str(b.get("text", "")) for b in system or [] if isinstance(b, dict))


Entry = Reply | str | Callable[[Request], Reply | str]


COMPACT_PROMPT = "Your task is to create a detailed summary of the conversation so far"
SUMMARY = "<analysis>scripted</analysis>\n<summary>The user said go; the scripted model did as told.</summary>"


def is_compact_request(body: Any) -> bool:
    """The client's request for a compaction summary (``/compact``, or auto-compaction): a turn-shaped
    request (the session's tools, its ``max_tokens``) whose last user message asks for
    ``<analysis>`` and ``<summary>``. 2.1.332 asks once more, with an added line, when the reply has no
    ``<summary>`` block (docs/architecture/compaction.md)."""
    if not isinstance(body, dict) or not body.get("messages"):
        return False
    last = body["messages"][-1]
    content = last.get("content") if isinstance(last, dict) else None
    texts = [content] if isinstance(content, str) else [b.get("text", "") for b in content or [] if isinstance(b, dict)]
    return any(COMPACT_PROMPT in str(t) for t in texts)


def is_side_request(body: Any) -> bool:
    """A request the client makes beside the conversation (not a model turn of the session).

    Claude Code 2.1.332 sends every session turn with its full tool list; what it sends beside the
    turns (session title, quota probe) carries no tools, or a tiny ``max_tokens``.
    """
    if not isinstance(body, dict):
        return True
    if not body.get("tools") or is_compact_request(body):
        return True
    return int(body.get("max_tokens") or 0) <= 64


# ---------------------------------------------------------------------- server


class FakeAPI:
    """Serve the script on an ephemeral loopback port; use as a context manager."""

    def __init__(self, script: list[Entry] | None = None, side_reply: str = "Attend e2e") -> None:
        self.script: list[Entry] = list(script or [])
        self.side_reply = side_reply
        self.summary = SUMMARY  # the answer to a compaction's summary request
        self.requests: list[Request] = []
        self.errors: list[str] = []  # exceptions raised by script callables
        self.first_error_at: float | None = None  # time.monotonic() of the first one
        self.exhausted = 0
        self.on_request: Callable[[Request], None] | None = None  # called before each turn is answered
        self._closed = False
        self._started = False
        self._lock = threading.Lock()
        self._next = 0
        self._cond = threading.Condition(self._lock)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-api", daemon=True)

    # -- lifecycle

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> FakeAPI:
        if not self._started:
            self._started = True
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._started:
            self._server.shutdown()
        self._server.server_close()

    # -- views for assertions

    @property
    def turns(self) -> list[Request]:
        """The turn requests (those that consumed, or would have consumed, a script entry), in order."""
        with self._lock:
            return [
                r
                for r in self.requests
                if r.path.startswith("/v1/messages") and not r.side and "count_tokens" not in r.path
            ]

    @property
    def compactions(self) -> list[Request]:
        """The compaction summary requests (answered with ``summary``, outside the script)."""
        with self._lock:
            return [r for r in self.requests if r.side and is_compact_request(r.body)]

    @property
    def side_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.side]

    @property
    def consumed(self) -> int:
        with self._lock:
            return self._next

    @property
    def last_answered(self) -> float | None:
        """time.monotonic() when the last turn's answer was served whole (None before any)."""
        done = [r.answered for r in self.turns if r.answered is not None]
        return max(done) if done else None

    def wait_for_turns(self, n: int, timeout: float) -> bool:
        """Block until ``n`` turn requests have arrived (or ``timeout`` seconds pass)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._next >= n, timeout)

    # -- answering

    def _take(self, req: Request) -> Reply:
        with self._cond:
            index = self._next
            self._next += 1
            req.index = index
            self._cond.notify_all()
        if index >= len(self.script):
            with self._lock:
                self.exhausted += 1
            return done("(fake API: script exhausted)")
        entry = self.script[index]
        try:
            if callable(entry) and not isinstance(entry, Reply):
                entry = entry(req)
        except Exception as e:  # a broken script must end the turn, not hang the client
            with self._lock:
                self.errors.append(f"script entry {index}: {type(e).__name__}: {e}")
                self.first_error_at = self.first_error_at or time.monotonic()
            return done(f"(fake API: script entry {index} failed: {e})")
        return reply(entry) if isinstance(entry, str) else entry

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _body(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    return json.loads(raw) if raw else None
                except ValueError:
                    return {"_raw": raw.decode("utf-8", "replace")}

            def _json(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                req = Request("GET", self.path, None, side=True)
                with api._lock:
                    api.requests.append(req)
                self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": "not here"}})

            do_DELETE = do_GET

            def do_HEAD(self) -> None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                body = self._body()
                path = self.path.split("?", 1)[0]
                if path == "/v1/messages/count_tokens":
                    with api._lock:
                        api.requests.append(Request("POST", self.path, body, side=True))
                    self._json(200, {"input_tokens": 10})
                    return
                if path != "/v1/messages":
                    with api._lock:
                        api.requests.append(Request("POST", self.path, body, side=True))
                    self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
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
                if is_compact_request(body):
                    answer = done(api.summary)
                else:
                    answer = done(api.side_reply) if side else api._take(req)
                stream = isinstance(body, dict) and bool(body.get("stream"))
                if stream:
                    self._sse(answer, body)
                else:
                    self._json(200, message_json(answer, body))
                req.answered = time.monotonic()

            def _sse(self, answer: Reply, body: Any) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for event, data in sse_events(answer, body):
                    self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

        return Handler


def _model(body: Any) -> str:
    return str(body.get("model") or MODEL) if isinstance(body, dict) else MODEL


def message_json(answer: Reply, body: Any) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for b in answer.blocks:
        if b.kind == "text":
            content.append({"type": "text", "text": b.text})
        else:
            content.append({"type": "tool_use", "id": b.id, "name": b.name, "input": b.input})
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": _model(body),
        "content": content,
        "stop_reason": answer.stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def sse_events(answer: Reply, body: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    msg = message_json(answer, body)
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {**msg, "content": [], "stop_reason": None, "usage": {"input_tokens": 10, "output_tokens": 1}},
        },
    )
    for i, b in enumerate(answer.blocks):
        if b.kind == "text":
            yield (
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
            )
            yield (
                "content_block_delta",
                {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": b.text}},
            )
        else:
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": i,
                    "content_block": {"type": "tool_use", "id": b.id, "name": b.name, "input": {}},
                },
            )
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": i,
                    "delta": {"type": "input_json_delta", "partial_json": json.dumps(b.input)},
                },
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": answer.stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def post(api: FakeAPI, path: str, body: dict[str, Any]) -> tuple[int, str]:
    req = urllib.request.Request(
        api.url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
