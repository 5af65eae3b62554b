"""attend mcp: the stdio MCP frontend. One tool per verb, from the verbs' own descriptions.

Invariants (docs/architecture/mcp.md):
- every call is a fresh invocation: a new Context, identity resolved now, enrollment checked now,
  nothing about the session kept for the next call (only this process's own presence marker);
- each tool calls the verb the CLI calls, and its structured result is the verb's ``--json``
  document, plus the optional ``notifications`` trailer on success;
- ``from_kind`` and ``from_id`` are never parameters; a server outside any session sends nothing;
- stdout belongs to the protocol (``attend.mcp.front`` moves fd 1 to stderr and answers the discovery
  requests; attend's stdio transport, ``attend.mcp.stdio``, serves the rest), and every frame that
  reaches it is answered or refused, never mangled;
- a verb's AttendError is one sentence with ``isError``; a crash is logged, never shown, and never
  ends the server.

This package (``server``, ``schema``, ``stdio``, ``discovery``) is the only place that imports ``mcp``;
``front`` and the generated ``answers`` import only the standard library.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import traceback
from collections.abc import Callable, Sequence
from typing import IO, Annotated, Any, Literal

from mcp.server.mcpserver import Context as ToolContext
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, TextContent, Tool, ToolAnnotations
from pydantic import Field, ValidationError

from attend import __version__
from attend.domain.attention import trailer
from attend.domain.sessions import mcp_markers, sessions
from attend.domain.sessions.context import Context
from attend.errors import AttendError, IdentityError
from attend.identity import Identity
from attend.mcp import schema as mcp_schema
from attend.mcp.front import Replay
from attend.spool import Spool, default_root
from attend.verbs import document
from attend.verbs import inbound as inbound_verb
from attend.verbs import inbox as inbox_verb
from attend.verbs import inbox_wait as wait_verb
from attend.verbs import join as join_verb
from attend.verbs import lease as lease_verb
from attend.verbs import leases as leases_verb
from attend.verbs import leave as leave_verb
from attend.verbs import mute as mute_verb
from attend.verbs import notify_subscribe as subscribe_verb
from attend.verbs import notify_unsubscribe as unsubscribe_verb
from attend.verbs import peers as peers_verb
from attend.verbs import release as release_verb
from attend.verbs import reply as reply_verb
from attend.verbs import search as search_verb
from attend.verbs import send as send_verb
from attend.verbs import status as status_verb
from attend.verbs import unmute as unmute_verb

log = logging.getLogger("attend.mcp")

SEND = send_verb.PARAMS
REPLY = reply_verb.PARAMS
INBOX = inbox_verb.PARAMS
WAIT = wait_verb.PARAMS
JOIN = join_verb.PARAMS
LEAVE = leave_verb.PARAMS
SUB = subscribe_verb.PARAMS
UNSUB = unsubscribe_verb.PARAMS
MUTE = mute_verb.PARAMS
UNMUTE = unmute_verb.PARAMS
LEASE = lease_verb.PARAMS
SEARCH = search_verb.PARAMS

# Read-only as docs/architecture/mcp.md defines it: no room, delivery, flag, membership or registration changes.
# The notify/ bookkeeping (cursors and subscriptions) is the one thing such a tool may write, so the
# two subscription tools are read-only too: they change what this session is nudged about, not the bus.
READ_ONLY = ToolAnnotations(read_only_hint=True)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False)

SENT = mcp_schema.result_model(send_verb.SentBrief)
INBOX_OUT = mcp_schema.result_model(inbox_verb.Inbox)
PEERS_OUT = mcp_schema.result_model(peers_verb.Peers)
STATUS_OUT = mcp_schema.result_model(status_verb.Status)
JOINED = mcp_schema.result_model(join_verb.Joined)
LEFT = mcp_schema.result_model(leave_verb.Left)
WAITED = mcp_schema.result_model(wait_verb.Waited)
SUBSCRIBED = mcp_schema.result_model(subscribe_verb.Subscribed)
UNSUBSCRIBED = mcp_schema.result_model(unsubscribe_verb.Unsubscribed)
MUTED = mcp_schema.result_model(mute_verb.Muted)
UNMUTED = mcp_schema.result_model(unmute_verb.Unmuted)
LEASE_OUT = mcp_schema.result_model(lease_verb.LeaseAnswer)
INBOUND = inbound_verb.PARAMS
INBOUND_OUT = mcp_schema.result_model(inbound_verb.Inbound)
SEARCHED = mcp_schema.result_model(search_verb.SearchResult)
MCP_SEARCH_LIMIT = 5  # headers and snippets, never bodies: five fit in 2 KB

OUTSIDE_SESSION = (
    "this MCP server runs outside any agent session, so it has no session identity and changes "
    "nothing on the bus; let Claude Code launch `attend mcp`, or act as a human with the attend CLI from a terminal"
)


class CallContext(Context):
    """A Context for one tool call: identity resolved once for the call, and a server with no session
    in its ancestry refuses to send (the human path stays with the CLI; docs/architecture/mcp.md)."""

    _who: Identity | None = None

    def who(self) -> Identity:
        if self._who is None:
            self._who = super().who()
        return self._who

    def sender(self) -> Identity:
        self.agent()
        self._who = None  # a /clear move may run inside; resolve again after it
        return super().sender()

    def agent(self) -> CallContext:
        """This context, once the caller is known to be a Claude session: the external (human) path
        that send, reply, join and leave offer stays with the CLI, never a model-driven server."""
        if not self.who().is_agent:
            raise IdentityError(OUTSIDE_SESSION)
        return self


# The session id the client handed this call (Codex: ``params._meta.threadId``): a claim, never an
# identity by itself; the identity rule accepts it only when the ancestry proves it (attend/hosts/codex.py).
OFFERED: contextvars.ContextVar[str | None] = contextvars.ContextVar("attend_offered_sid", default=None)


def offered_sid(context: Any) -> str | None:
    """``_meta.threadId`` of the call under way, when the client sent one (a plain string only)."""
    try:
        meta = context.request_context.meta
    except Exception:
        return None
    if meta is None:
        return None
    extra = meta if isinstance(meta, dict) else {**(getattr(meta, "model_extra", None) or {}), **vars(meta)}
    value = extra.get("threadId")
    return value if isinstance(value, str) and 0 < len(value) <= 128 else None


def call_context(base: Context) -> CallContext:
    payload_sid = base.payload_sid or OFFERED.get()
    if isinstance(base, CallContext):
        base.payload_sid = payload_sid
        return base
    return CallContext(spool=base.spool, env=base.env, cwd=base.cwd, payload_sid=payload_sid, pid=base.pid)


def default_context() -> CallContext:
    """A context for one call of the real server: its own environment, and its own pid to walk from."""
    # os.environ itself, not a copy (copying costs ~0.1 ms a call); nothing here writes to it.
    return CallContext(spool=Spool.open(default_root(_ROOT_ENV), create=False), env=os.environ)


# The spool root comes from ATTEND_HOME / XDG_CACHE_HOME / HOME, which a process cannot change
# from outside; only the variables the root depends on are copied.
_ROOT_ENV = {k: v for k, v in os.environ.items() if k in ("ATTEND_HOME", "XDG_CACHE_HOME", "HOME")}


class AttendServer(MCPServer[Any]):
    """MCPServer with attend's error sentences and compact tool schemas."""

    def __init__(self, context: Callable[[], Context], marker: mcp_markers.Marker | None) -> None:
        super().__init__("attend", version=__version__, log_level="WARNING")
        self.make_context = context
        self.marker = marker

    # ------------------------------------------------------------------ one call

    def invoke(self, tool: str, act: Callable[[CallContext], Any]) -> CallToolResult:
        """Fresh context, presence, the verb, the trailer. Runs in a worker thread."""
        ctx: CallContext | None = None
        try:
            ctx = call_context(self.make_context())
            self._presence(ctx)
            data = document(act(ctx))
        except AttendError as e:
            raise ToolError(str(e)) from None
        except Exception as e:
            # The model gets one sentence; the traceback goes to stderr and the diagnostic log.
            detail = traceback.format_exc()
            log.error("tool %s crashed:\n%s", tool, detail)
            if ctx is not None:
                ctx.spool.log(f"mcp tool {tool} crashed: {type(e).__name__}: {e}")
            raise ToolError(
                f"{tool} failed inside attend ({type(e).__name__}); the server is still running "
                "and the details are in attend's log"
            ) from None
        pending = trailer.trailer(ctx)
        if pending:
            data["notifications"] = {"pending": pending}
        text = json.dumps(data, ensure_ascii=False)
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)

    def _presence(self, ctx: CallContext) -> None:
        """Follow a /clear to the new id, and keep this server's marker under the id it serves now.

        Bookkeeping beside the call, never a reason to fail it: a failure here is one log line."""
        try:
            who = ctx.who()
        except AttendError:
            return  # the verb reports it
        if not who.is_agent:
            return
        try:
            if not sessions.is_enrolled(ctx.spool, who.id):
                sessions.follow_clear(ctx.spool, who)
            if self.marker is not None:
                self.marker.ensure(ctx.spool, who.id)
        except Exception as e:
            log.warning("presence marker for %s not kept: %s", who.id, e)
            ctx.spool.log(f"mcp: presence marker for {who.id} not kept: {type(e).__name__}: {e}")

    # ------------------------------------------------------------------ SDK seams

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """Errors as one sentence: the SDK prefixes 'Error executing tool …' and dumps pydantic text."""
        token = OFFERED.set(offered_sid(context))
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as e:
            cause = e.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(_arguments_sentence(name, cause)) from None
            if isinstance(cause, ToolError):
                raise ToolError(str(cause)) from None
            raise
        finally:
            OFFERED.reset(token)

    async def serve_wire(self, wire_in: IO[bytes], wire_out: IO[bytes], replay: Sequence[Replay]) -> None:
        """Serve on attend's own stdio transport (the SDK's drops or mangles frames it cannot parse),
        over the wire ``attend.mcp.front`` claimed, after the frames it answered are replayed."""
        from attend.mcp.stdio import transport

        low = self._lowlevel_server
        async with transport(wire_in, wire_out, replay) as (read, write):
            await low.run(read, write, low.create_initialization_options())

    async def list_tools(self) -> list[Tool]:
        """Schemas without pydantic's generated titles: the model reads every byte of them."""
        tools = await super().list_tools()
        for tool in tools:
            _drop_titles(tool.input_schema)
        return tools


def _drop_titles(schema: dict[str, Any]) -> None:
    """Compact an input schema: no titles, and an optional ``str | None = None`` published as a plain
    optional string (leaving it out means None; the call is still validated against the signature)."""
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        if not isinstance(prop, dict):
            continue
        prop.pop("title", None)
        alts = prop.get("anyOf")
        if "default" in prop and prop["default"] is None and isinstance(alts, list) and {"type": "null"} in alts:
            rest = [a for a in alts if a != {"type": "null"}]
            if len(rest) == 1 and isinstance(rest[0], dict):
                del prop["anyOf"], prop["default"]
                prop.update(rest[0])


def _arguments_sentence(tool: str, error: ValidationError) -> str:
    parts = []
    for err in error.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg'].lower()}")
    return f"bad arguments for {tool} ({'; '.join(parts)}); call it again with the parameters its schema lists"


# ---------------------------------------------------------------------- the tools

OptStr = str | None


def build_server(
    context: Callable[[], Context] | None = None, marker: mcp_markers.Marker | None = None
) -> AttendServer:
    """The server with its thirteen tools. ``context`` makes a fresh Context per call (tests pass one that
    resolves as a stand-in session); ``marker`` is this process's presence marker, if it keeps one."""
    app = AttendServer(context or Context.default, marker)

    @app.tool(name="send", description=send_verb.DESCRIPTION, annotations=WRITES)
    def send(
        message: Annotated[str, Field(description=SEND["message"])],
        to: Annotated[OptStr, Field(description=SEND["to"])] = None,
        channel: Annotated[OptStr, Field(description=SEND["channel"])] = None,
        broadcast: Annotated[bool, Field(description=SEND["broadcast"])] = False,
        on_behalf_of: Annotated[OptStr, Field(description=SEND["on_behalf_of"])] = None,
    ) -> Annotated[CallToolResult, SENT]:
        req = send_verb.SendRequest(message, to, channel, broadcast, None, on_behalf_of)
        return app.invoke("send", lambda ctx: send_verb.brief(send_verb.run(ctx, req)))

    @app.tool(name="reply", description=reply_verb.DESCRIPTION, annotations=WRITES)
    def reply(
        message: Annotated[str, Field(description=REPLY["message"])],
        re: Annotated[OptStr, Field(description=REPLY["re"])] = None,
        to: Annotated[OptStr, Field(description=REPLY["to"])] = None,
        channel: Annotated[OptStr, Field(description=REPLY["channel"])] = None,
        broadcast: Annotated[bool, Field(description=REPLY["broadcast"])] = False,
        on_behalf_of: Annotated[OptStr, Field(description=REPLY["on_behalf_of"])] = None,
    ) -> Annotated[CallToolResult, SENT]:
        req = reply_verb.ReplyRequest(message, re, to, channel, broadcast, on_behalf_of)
        return app.invoke("reply", lambda ctx: send_verb.brief(reply_verb.run(ctx, req)))

    @app.tool(name="inbox", description=inbox_verb.DESCRIPTION, annotations=READ_ONLY)
    def inbox(
        id: Annotated[OptStr, Field(description=INBOX["id"])] = None,
        limit: Annotated[int, Field(description=INBOX["limit"])] = 25,
        page: Annotated[int, Field(description=INBOX["page"])] = 1,
        before: Annotated[OptStr, Field(description=INBOX["before"])] = None,
        sent: Annotated[bool, Field(description=INBOX["sent"])] = False,
    ) -> Annotated[CallToolResult, INBOX_OUT]:
        req = inbox_verb.InboxRequest(id=id, limit=limit, page=page, before=before, sent=sent, mark_read=False)
        return app.invoke("inbox", lambda ctx: inbox_verb.run(ctx, req))

    @app.tool(name="peers", description=peers_verb.DESCRIPTION, annotations=READ_ONLY)
    def peers() -> Annotated[CallToolResult, PEERS_OUT]:
        return app.invoke("peers", lambda ctx: peers_verb.run(ctx, peers_verb.PeersRequest()))

    @app.tool(name="status", description=status_verb.DESCRIPTION, annotations=READ_ONLY)
    def status() -> Annotated[CallToolResult, STATUS_OUT]:
        return app.invoke("status", lambda ctx: status_verb.run(ctx, status_verb.StatusRequest()))

    @app.tool(name="join", description=join_verb.DESCRIPTION, annotations=WRITES)
    def join(
        name: Annotated[str, Field(description=JOIN["name"])],
        pin: Annotated[bool, Field(description=JOIN["pin"])] = False,
    ) -> Annotated[CallToolResult, JOINED]:
        req = join_verb.JoinRequest(name, pin)
        return app.invoke("join", lambda ctx: join_verb.run(ctx.agent(), req))

    @app.tool(name="leave", description=leave_verb.DESCRIPTION, annotations=WRITES)
    def leave(name: Annotated[str, Field(description=LEAVE["name"])]) -> Annotated[CallToolResult, LEFT]:
        req = leave_verb.LeaveRequest(name)
        return app.invoke("leave", lambda ctx: leave_verb.run(ctx.agent(), req))

    @app.tool(name="mute", description=mute_verb.DESCRIPTION, annotations=WRITES)
    def mute(
        target: Annotated[str, Field(description=MUTE["target"])],
        duration: Annotated[OptStr, Field(description=MUTE["duration"])] = None,
    ) -> Annotated[CallToolResult, MUTED]:
        req = mute_verb.MuteRequest(target, duration)
        return app.invoke("mute", lambda ctx: mute_verb.run(ctx.agent(), req))

    @app.tool(name="unmute", description=unmute_verb.DESCRIPTION, annotations=WRITES)
    def unmute(target: Annotated[str, Field(description=UNMUTE["target"])]) -> Annotated[CallToolResult, UNMUTED]:
        req = unmute_verb.UnmuteRequest(target)
        return app.invoke("unmute", lambda ctx: unmute_verb.run(ctx.agent(), req))

    @app.tool(name="notify_subscribe", description=subscribe_verb.DESCRIPTION, annotations=READ_ONLY)
    def notify_subscribe(
        kinds: Annotated[list[str], Field(description=SUB["kinds"])],
        project: Annotated[OptStr, Field(description=SUB["project"])] = None,
    ) -> Annotated[CallToolResult, SUBSCRIBED]:
        req = subscribe_verb.SubscribeRequest(tuple(kinds), project)
        return app.invoke("notify_subscribe", lambda ctx: subscribe_verb.run(ctx, req))

    @app.tool(name="notify_unsubscribe", description=unsubscribe_verb.DESCRIPTION, annotations=READ_ONLY)
    def notify_unsubscribe(
        subscription_id: Annotated[str, Field(description=UNSUB["subscription_id"])],
    ) -> Annotated[CallToolResult, UNSUBSCRIBED]:
        req = unsubscribe_verb.UnsubscribeRequest(subscription_id)
        return app.invoke("notify_unsubscribe", lambda ctx: unsubscribe_verb.run(ctx, req))

    @app.tool(name="inbox_wait", description=wait_verb.DESCRIPTION, annotations=READ_ONLY)
    async def inbox_wait(
        tool_ctx: ToolContext,
        seconds: Annotated[float, Field(description=WAIT["seconds"], ge=0, le=wait_verb.MAX_SECONDS)] = 30,
    ) -> Annotated[CallToolResult, WAITED]:
        import anyio.from_thread
        import anyio.to_thread

        def progress(done: float, total: float) -> None:
            # Sent from the worker thread through the event loop; a lost progress note is harmless.
            with contextlib.suppress(Exception):
                anyio.from_thread.run(tool_ctx.report_progress, done, total)

        stop = wait_verb.Stop()
        req = wait_verb.WaitRequest(seconds, progress, stop)
        try:
            # A sync tool's thread is shielded from cancellation: a cancelled call (Esc in the client,
            # or stdin closing) would keep waiting up to a minute, and take deliveries nobody sees.
            # Abandon the thread on cancel instead, and stop it: it wakes at once and takes nothing.
            return await anyio.to_thread.run_sync(
                lambda: app.invoke("inbox_wait", lambda ctx: wait_verb.run(ctx, req)),
                abandon_on_cancel=True,
            )
        finally:
            stop.set()

    # Leases on files: one tool for the three verbs (lease, release, leases), so the tool surface grows
    # by one schema, its parameters told in the tool's description (lease_verb.TOOL). No holder parameter:
    # releasing another session's lease is the human's, at a terminal.
    @app.tool(name="lease", description=lease_verb.TOOL, annotations=WRITES)
    def lease(
        action: Literal["take", "share", "release", "list"],
        globs: list[str] | None = None,
        reason: OptStr = None,
        ttl: OptStr = None,
    ) -> Annotated[CallToolResult, LEASE_OUT]:
        given = tuple(globs or ())

        def act(ctx: CallContext) -> Any:
            if action in ("take", "share"):
                req = lease_verb.LeaseRequest(given, reason, action == "share", ttl)
                return lease_verb.run(ctx.agent(), req)
            if action == "release":
                return release_verb.run(ctx.agent(), release_verb.ReleaseRequest(given))
            return leases_verb.run(ctx, leases_verb.LeasesRequest())

        return app.invoke("lease", act)

    @app.tool(name="inbound", description=inbound_verb.DESCRIPTION, annotations=WRITES)
    def inbound(
        action: Annotated[OptStr, Field(description=INBOUND["action"])] = None,
        id: Annotated[OptStr, Field(description=INBOUND["id"])] = None,
    ) -> Annotated[CallToolResult, INBOUND_OUT]:
        req = inbound_verb.InboundRequest(action, id)
        return app.invoke("inbound", lambda ctx: inbound_verb.run(ctx.agent(), req))

    @app.tool(name="search", description=search_verb.DESCRIPTION, annotations=READ_ONLY)
    def search(
        query: Annotated[str, Field(description=SEARCH["query"])],
        limit: Annotated[int, Field(description=SEARCH["limit"])] = MCP_SEARCH_LIMIT,
    ) -> Annotated[CallToolResult, SEARCHED]:
        req = search_verb.SearchRequest(query, limit)
        return app.invoke("search", lambda ctx: search_verb.run(ctx, req))

    return app


# ---------------------------------------------------------------------- running over stdio


def serve(wire_in: IO[bytes], wire_out: IO[bytes], replay: Sequence[Replay], marker: mcp_markers.Marker | None) -> None:
    """Serve the wire ``attend.mcp.front`` hands over until stdin closes (``front.main`` starts it)."""
    import anyio

    anyio.run(build_server(default_context, marker).serve_wire, wire_in, wire_out, replay)
