"""The stdio transport of `attend mcp`, in place of the SDK's ``mcp.server.stdio.stdio_server``.

The SDK's transport (mcp 2.3.0) has three faults this one does not (docs/architecture/mcp.md):
- it decodes stdin with ``errors="replace"``, so invalid UTF-8 reaches a tool as U+FFFD;
- a frame its JSON parser refuses is handed on as an exception that the dispatcher drops, so a
  request holding ``"\\ud800"`` (legal JSON; pydantic-core refuses lone surrogates) is never answered
  and the client waits forever;
- an answer holding a lone surrogate (a path from a folder whose name is not UTF-8) fails to
  serialize inside the writer task, and the server dies with a traceback.

Here every frame is bytes until it is known to be UTF-8; a refused request with a readable id gets
a JSON-RPC error for that id; an answer that cannot be encoded is sent with its undecodable bytes
shown as ``\\xNN`` text. The wire is the pair of descriptors ``attend.mcp.front`` claimed (fd 0 and
fd 1 point at /dev/null and stderr while serving, as with the SDK), with the frames the front
answered replayed first.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator, Sequence
from typing import IO, Any

import anyio
import anyio.to_thread
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from attend import safejson

SUBSCRIPTION_META = "io.modelcontextprotocol/subscriptionId"
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602

# A refusal to write back: (request id, code, message). The id is None when the frame's id cannot be
# read (not JSON, an id that is a float or null, a batch): JSON-RPC answers those with a null id.
Reply = tuple[int | str | None, int, str]
BAD_ID = "not a valid JSON-RPC request: its id must be a string or an integer"
DEPTH = 64  # nesting a frame may have: the SDK's own parser stops near 255; no MCP message needs 64


def screen(raw: bytes) -> types.JSONRPCMessage | Reply | list[Reply] | str:
    """One frame off the wire: the message, the refusals to answer (a list for a batch), or (a bad
    notification or response, which nobody waits on) a line for stderr."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        # Read the id through the bad bytes, so the refusal reaches the request that is waiting for it.
        surrogated = raw.decode("utf-8", "surrogateescape")
        what = f"the frame is not valid UTF-8 (byte 0x{raw[e.start]:02x} at offset {e.start})"
        if _unanswered(surrogated):
            return f"attend mcp: refused a frame with no request id: {what}"
        rid = _request_id(surrogated)
        return (rid, PARSE_ERROR, f"{what}; attend refuses it rather than guess: send it again as UTF-8")
    try:
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValueError as e:
        refused = e
    else:
        if not isinstance(message, types.JSONRPCNotification) or '"id"' not in text:
            return message
        # The SDK reads a request whose id is a float or null as a notification, and answers nothing.
        parsed = safejson.loads(text)
        if not (isinstance(parsed, dict) and "id" in parsed):
            return message
        return (None, INVALID_REQUEST, BAD_ID)
    try:
        parsed = safejson.loads(text)
    except ValueError as e:
        return (None, PARSE_ERROR, f"not JSON: {_first_line(e)}")
    if not safejson.within(parsed, DEPTH):
        return (_request_id(parsed), INVALID_REQUEST, f"the frame nests deeper than {DEPTH} levels")
    if isinstance(parsed, list):
        return _batch(parsed)
    where = _lone_surrogate(parsed)
    if where is not None:
        path, char = where
        what = f"{path or 'the frame'} holds a lone surrogate ({char}), which is not Unicode text"
        if _unanswered(parsed):
            return f"attend mcp: refused a frame with no request id: {what}"
        return (_request_id(parsed), INVALID_PARAMS, f"{what}; attend takes UTF-8 text only: send it again without it")
    if _unanswered(parsed):
        return f"attend mcp: refused a frame that is not a JSON-RPC message: {_first_line(refused)}"
    rid = _request_id(parsed)
    if rid is None:
        return (None, INVALID_REQUEST, BAD_ID)
    return (rid, INVALID_REQUEST, f"not a valid JSON-RPC request: {_first_line(refused)}")


def _batch(frames: list[object]) -> list[Reply]:
    """A batch (a JSON array) is refused whole: MCP dropped JSON-RPC batching. Each request in it gets
    its own error, so nobody waits on an id; no request with a readable id, one error with a null id."""
    what = "a batch (a JSON array) is not served: send each message as its own line"
    replies: list[Reply] = [
        (rid, INVALID_REQUEST, what) for f in frames if not _unanswered(f) and (rid := _request_id(f)) is not None
    ]
    return replies or [(None, INVALID_REQUEST, what)]


def _unanswered(frame: object) -> bool:
    """A frame nobody waits on, so no error is sent for it (JSON-RPC answers no notification and no
    response): an object with a method and no id, or with a result or an error."""
    if isinstance(frame, str):
        try:
            frame = safejson.loads(frame)
        except ValueError:
            return False
    if not isinstance(frame, dict):
        return False
    return ("method" in frame and "id" not in frame) or (
        "method" not in frame and ("result" in frame or "error" in frame)
    )


def _request_id(frame: object) -> int | str | None:
    """The id of a request that can be echoed back (a number, or a string that is Unicode), else None:
    a frame whose id cannot be read."""
    if isinstance(frame, str):
        try:
            frame = safejson.loads(frame)
        except ValueError:
            return None
    if not isinstance(frame, dict) or "method" not in frame:
        return None
    rid = frame.get("id")
    if isinstance(rid, bool) or not isinstance(rid, int | str):
        return None
    if isinstance(rid, str) and _lone_surrogate(rid) is not None:
        return None
    return rid


def _lone_surrogate(value: object, path: str = "") -> tuple[str, str] | None:
    """Where the first lone surrogate sits (a dotted path, the character escaped), or None."""
    if isinstance(value, str):
        for ch in value:
            if "\ud800" <= ch <= "\udfff":
                return path, f"\\u{ord(ch):04x}"
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            found = _lone_surrogate(k, path) or _lone_surrogate(v, f"{path}.{k}" if path else str(k))
            if found:
                return found
    if isinstance(value, list):
        for i, v in enumerate(value):
            found = _lone_surrogate(v, f"{path}[{i}]")
            if found:
                return found
    return None


def _first_line(e: ValueError) -> str:
    """pydantic's first complaint, without its union-by-union listing and documentation links."""
    errors = e.errors() if isinstance(e, ValidationError) else []
    if not errors:
        return str(e).splitlines()[0] if str(e) else type(e).__name__
    where = ".".join(str(p) for p in errors[0]["loc"] if not str(p).startswith("JSONRPC"))
    return f"{where}: {errors[0]['msg']}" if where else str(errors[0]["msg"])


def encode(message: types.JSONRPCMessage) -> bytes:
    """One frame for the wire. Text that is not Unicode (a surrogate-escaped byte from a folder name
    that is not UTF-8) cannot be encoded; it goes out as visible ``\\xNN`` / ``\\uXXXX`` text."""
    try:
        text = message.model_dump_json(by_alias=True, exclude_unset=True)
    except PydanticSerializationError:
        data = _visible(message.model_dump(mode="python", by_alias=True, exclude_unset=True))
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8") + b"\n"


def _visible(value: Any) -> Any:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            pass
        try:  # bytes a surrogateescape decode kept (os.getcwd() in such a folder): shown as \xNN
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_visible(k): _visible(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_visible(v) for v in value]
    return value


def _refusal(rid: int | str | None, code: int, message: str) -> SessionMessage:
    error = types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=message))
    return SessionMessage(error)


Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
Replay = tuple[bytes, "tuple[str, int | str] | None"]  # as attend.mcp.front hands them over

REPLAY_WAIT = 10.0  # seconds the server may take to answer a replayed frame before the rest goes on
OWED_WAIT = 30.0  # seconds, once stdin closes, for the answers still owed (`attend mcp < requests.jsonl`)


@contextlib.asynccontextmanager
async def transport(wire_in: IO[bytes], wire_out: IO[bytes], replay: Sequence[Replay] = ()) -> AsyncIterator[Streams]:
    """The read and write streams the SDK's server loop runs on, over the wire the front claimed.

    ``replay`` comes first: the frames the front answered that set state (an initialize, a listen),
    then the frame it handed over. The server's own answer to a replayed frame is dropped (the client
    has its answer), and the next frame waits for it, so the server is in that state before it goes on.
    """
    to_server, from_wire = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_wire, from_server = anyio.create_memory_object_stream[SessionMessage](0)
    # Refusals and answers share one writer, so frames never interleave on the pipe.
    refusals = to_wire.clone()
    drops: dict[tuple[str, int | str], anyio.Event] = {}
    # Requests read but not yet answered. Closing the server's stream cancels whatever is in flight,
    # so at end of input the reader waits for these first: a piped batch gets its last answers.
    owed: set[int | str] = set()
    settled: list[anyio.Event] = []  # set once owed empties after the end of input

    async def handle(raw: bytes) -> None:
        verdict = screen(raw)
        if isinstance(verdict, str):
            print(verdict, file=sys.stderr, flush=True)
        elif isinstance(verdict, tuple):
            await refusals.send(_refusal(*verdict))
        elif isinstance(verdict, list):
            for reply in verdict:
                await refusals.send(_refusal(*reply))
        else:
            if isinstance(verdict, types.JSONRPCRequest) and not _waits(verdict):
                owed.add(verdict.id)
            await to_server.send(SessionMessage(verdict))

    async def reader() -> None:
        async with to_server, refusals:
            for raw, drop in replay:
                if drop is not None:
                    drops[drop] = anyio.Event()
                await handle(raw)
                if drop is not None:
                    with anyio.move_on_after(REPLAY_WAIT) as waited:
                        await drops[drop].wait()
                    if waited.cancelled_caught:
                        print(f"attend mcp: no answer to the replayed {drop[0]} {drop[1]!r}", file=sys.stderr)
            while True:
                # Abandoned on cancel: a blocked read must not hold up shutdown (the fd is never closed).
                raw = await anyio.to_thread.run_sync(wire_in.readline, abandon_on_cancel=True)
                if not raw:
                    if owed:
                        settled.append(anyio.Event())
                        with anyio.move_on_after(OWED_WAIT):
                            await settled[0].wait()
                    return
                if raw.strip():
                    await handle(raw)

    async def writer() -> None:
        gone = False
        async with from_server:
            async for item in from_server:
                if gone:
                    continue  # the client closed its end; take the rest and drop it, as the reader ends
                if owed and isinstance(item.message, types.JSONRPCResponse | types.JSONRPCError):
                    owed.discard(item.message.id)
                    if not owed and settled:
                        settled[0].set()
                if drops and _drop(item.message, drops):
                    continue
                try:
                    await anyio.to_thread.run_sync(_write, wire_out, encode(item.message))
                except OSError:
                    gone = True

    def _write(out: IO[bytes], frame: bytes) -> None:
        out.write(frame)
        out.flush()

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        yield from_wire, to_wire


def _waits(request: types.JSONRPCRequest) -> bool:
    """Whether ``request`` is not owed an answer at end of input: a ``subscriptions/listen`` is a
    stream that ends with the server, and an ``inbox_wait`` is cancelled, since a wait nobody will
    read must not take deliveries (it would hold up to a minute)."""
    params = request.params or {}
    if request.method == "subscriptions/listen":
        return True
    return request.method == "tools/call" and params.get("name") == "inbox_wait"


def _drop(message: types.JSONRPCMessage, drops: dict[tuple[str, int | str], anyio.Event]) -> bool:
    """Whether ``message`` is the server's answer to a replayed frame (then its event is set)."""
    data = message.model_dump(by_alias=True, exclude_unset=True)
    key: tuple[str, Any]
    if "result" in data or "error" in data:
        key = ("id", data.get("id"))
    elif data.get("method") == "notifications/subscriptions/acknowledged":
        key = ("ack", ((data.get("params") or {}).get("_meta") or {}).get(SUBSCRIPTION_META))
    else:
        return False
    event = drops.pop(key, None)
    if event is None:
        return False
    event.set()
    return True
