"""`attend mcp` starts here: the discovery phase answered on the standard library alone.

A client's first requests only ask what the server is (``initialize`` or ``server/discover``,
``subscriptions/listen``, ``tools/list``, ``prompts/list``, ``resources/list``, ``ping``). Importing
the SDK, pydantic and the verbs takes ~0.8 s, so the front answers those from the SDK's own answers,
recorded in ``attend/mcp/answers.py`` (``attend.mcp.discovery`` writes it; a test holds it current),
while a background thread writes the presence marker and then imports the server. The first frame
the front does not answer (a tool call, anything unusual, a malformed frame) hands the wire over:
the server gets the state-setting frames again (the ``initialize``, under a private id, and each
open ``subscriptions/listen``), its own answers to those are dropped, and then it serves the rest.

Only the standard library (and the generated table) is imported at module level: the SDK, the
verbs and the domain are loaded by name, in the background or at the handover.
"""

from __future__ import annotations

import fcntl
import importlib
import json
import os
import signal
import sys
import threading

from attend import __version__, safejson
from attend.mcp import answers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Any

PROTOCOL_META = "io.modelcontextprotocol/protocolVersion"
SUBSCRIPTION_META = "io.modelcontextprotocol/subscriptionId"
LIST_FLAGS = ("toolsListChanged", "promptsListChanged", "resourcesListChanged")
DEPTH = 64  # as attend.mcp.stdio.DEPTH: a deeper frame goes to the server, which refuses it
PRIVATE_ID = "attend-front-initialize"  # the replayed initialize's id: its answer never reaches the wire

# A frame to give the server again at the handover, and the answer of its own to drop:
# ("id", <request id>) for a response, ("ack", <subscription id>) for a listen's acknowledgement.
Replay = tuple[bytes, "tuple[str, int | str] | None"]

OUTSIDE_WARNING = (
    "attend mcp: warning: settings do not allow {}; a headless session cannot call those tools "
    "(attend permissions lists the baseline)"
)


class Front:
    """Answers the discovery requests it knows from the recorded table; anything else is handed over."""

    def __init__(self, out: IO[bytes], table: dict[str, Any] | None = None) -> None:
        self.out = out
        self.table = table if table is not None else safejson.loads(answers.ANSWERS)
        self.classic: str | None = None  # the version a classic initialize negotiated
        self.initialized = False
        self.replay: list[Replay] = []

    def take(self, raw: bytes) -> bool:
        """Answer ``raw`` and return True, or return False: the server must see it (and what follows)."""
        try:
            msg = safejson.loads(raw)
        except ValueError:  # not UTF-8, not JSON, nested too deep: the server's screen words the refusal
            return False
        if not safejson.within(msg, DEPTH):
            return False
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str):
            return False
        method, params = msg["method"], msg.get("params", {})
        if not isinstance(params, dict) or not isinstance(params.get("_meta", {}), dict):
            return False
        rest = {k: v for k, v in params.items() if k != "_meta"}
        era = params.get("_meta", {}).get(PROTOCOL_META)
        if "id" not in msg:
            if method == "notifications/initialized" and self.classic and not self.initialized and era is None:
                self.initialized = True
                self.replay.append((raw, None))
                return True
            return False
        rid = msg["id"]
        if isinstance(rid, bool) or not isinstance(rid, int | str) or not _text(rid) or rid == PRIVATE_ID:
            return False
        if era is None:
            return self._classic(rid, method, rest, msg)
        if era in self.table["modern_versions"] and self.classic is None:
            return self._modern(rid, method, rest, raw)
        return False

    def _classic(self, rid: int | str, method: str, rest: dict[str, Any], msg: dict[str, Any]) -> bool:
        if method == "initialize":
            if self.classic is not None or not _initialize_params(rest):
                return False
            results = self.table["initialize"]
            result = results.get(rest["protocolVersion"], results["*"])
            self.classic = result["protocolVersion"]
            again = json.dumps({**msg, "id": PRIVATE_ID}, ensure_ascii=False).encode()
            self.replay.append((again, ("id", PRIVATE_ID)))
            return self._answer(rid, result)
        if self.classic is None or rest or method not in self.table["classic"]:
            return False
        return self._answer(rid, self.table["classic"][method])

    def _modern(self, rid: int | str, method: str, rest: dict[str, Any], raw: bytes) -> bool:
        if method == "subscriptions/listen":
            wanted = rest.get("notifications")
            if set(rest) != {"notifications"} or not isinstance(wanted, dict) or not set(wanted) <= set(LIST_FLAGS):
                return False
            if not all(isinstance(v, bool) for v in wanted.values()):
                return False
            ack = safejson.loads(json.dumps(self.table["listen_ack"]))
            ack["params"]["_meta"][SUBSCRIPTION_META] = rid
            ack["params"]["notifications"] = {f: True for f in LIST_FLAGS if wanted.get(f)}
            self.replay.append((raw, ("ack", rid)))
            return self._write(ack)
        if rest or method not in self.table["modern"]:
            return False
        return self._answer(rid, self.table["modern"][method])

    def _answer(self, rid: int | str, result: dict[str, Any]) -> bool:
        return self._write({"jsonrpc": "2.0", "id": rid, "result": result})

    def _write(self, message: dict[str, Any]) -> bool:
        self.out.write(json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
        self.out.flush()
        return True


def _text(rid: int | str) -> bool:
    """An id that is Unicode text (a lone surrogate is not; the server's screen refuses it)."""
    return not isinstance(rid, str) or not any("\ud800" <= ch <= "\udfff" for ch in rid)


def _initialize_params(params: dict[str, Any]) -> bool:
    info = params.get("clientInfo")
    return (
        isinstance(params.get("protocolVersion"), str)
        and isinstance(params.get("capabilities"), dict)
        and isinstance(info, dict)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
    )


# ---------------------------------------------------------------------- the background start


class Startup(threading.Thread):
    """Presence first (the marker, the settings warning), then the server's imports."""

    def __init__(self) -> None:
        super().__init__(name="attend-mcp-startup", daemon=True)
        self.marker: Any = None
        self.conduit: Any = None  # the socket conduit (attend.conduits.inbox_socket), when it serves
        self.server: Any = None
        self.present = threading.Event()
        self.loaded = threading.Event()

    def run(self) -> None:
        try:
            self._presence()
        finally:
            self.present.set()
        try:
            self.server = importlib.import_module("attend.mcp.server")
        except BaseException:  # the handover imports it again, and reports
            pass
        finally:
            self.loaded.set()

    def _presence(self) -> None:
        try:
            missing = missing_allow_entries()
        except Exception:
            missing = []
        if missing:
            print(OUTSIDE_WARNING.format(", ".join(missing)), file=sys.stderr, flush=True)
        try:
            markers = importlib.import_module("attend.domain.sessions.mcp_markers")
            self.marker = markers.Marker(version=__version__)
            ctx = call_context()
            who = ctx.who()
            if who.is_agent:
                self.marker.ensure(ctx.spool, who.id)
                self._conduit(ctx, who)
        except Exception as e:  # an unresolvable caller, a spool that cannot be written: serve anyway
            print(f"attend mcp: {e}", file=sys.stderr, flush=True)

    def _conduit(self, ctx: Any, who: Any) -> None:
        """Start the socket conduit beside the server (a daemon thread asleep in inotify); a session
        it cannot serve is one log line, and the other conduits deliver."""
        config = importlib.import_module("attend.domain.settings.config")
        conduit = importlib.import_module("attend.conduits.inbox_socket")
        started = conduit.start(ctx.spool, os.environ, who, config.load(os.environ))
        if isinstance(started, str):
            ctx.spool.log(f"attend mcp: the socket conduit does not serve {who.id}: {started}")
            conduit.declined(ctx.spool, who.id, started)
        else:
            self.conduit = started

    def stop_conduit(self) -> None:
        """At the end: a post not yet confirmed stays unseen, for the next conduit."""
        if self.conduit is not None:
            self.conduit.stop()
            self.conduit.join(1.0)

    def remove_marker(self) -> None:
        if self.marker is not None:
            self.marker.remove()


def call_context() -> Any:
    """A context for this process, as each tool call makes one (``attend.mcp.server.default_context``)."""
    context = importlib.import_module("attend.domain.sessions.context")
    spool = importlib.import_module("attend.spool")
    root = {k: v for k, v in os.environ.items() if k in ("ATTEND_HOME", "XDG_CACHE_HOME", "HOME")}
    return context.Context(spool=spool.Spool.open(spool.default_root(root), create=False), env=os.environ)


def missing_allow_entries() -> list[str]:
    """Attend tools the user's settings do not allow (best effort): a headless session fails such calls."""
    context = importlib.import_module("attend.domain.sessions.context")
    permissions = importlib.import_module("attend.verbs.permissions")
    errors = importlib.import_module("attend.errors")
    try:
        report = permissions.run(context.Context.for_env(os.environ), permissions.PermissionsRequest())
    except (errors.AttendError, OSError):
        return []
    return [e for e in report.missing if e.startswith("mcp__attend__")]


# ---------------------------------------------------------------------- the wire


def claim(fd: int, diversion: int) -> int:
    """A private duplicate of ``fd`` for the wire; ``fd`` itself then points at ``diversion``, so a
    tool or a child process can neither read the wire nor write stray bytes onto it. The duplicate is
    never closed: a reader thread abandoned at shutdown may still block on it."""
    wire = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.dup2(diversion, fd)
    return wire


def main() -> None:
    """Serve over stdio until stdin closes or a signal ends it; the marker goes either way."""
    startup = Startup()

    def on_signal(signum: int, _frame: object) -> None:
        startup.remove_marker()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    # Handlers before the marker: a signal between the two would otherwise leave a stale marker.
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, on_signal)
    startup.start()
    null = os.open(os.devnull, os.O_RDONLY)
    wire_in = os.fdopen(claim(0, null), "rb", closefd=False)
    wire_out = os.fdopen(claim(1, 2), "wb", closefd=False)
    front = Front(wire_out)
    pending = b""
    for raw in iter(wire_in.readline, b""):
        if raw.strip() and not front.take(raw):
            pending = raw
            break
    try:
        if pending:
            startup.loaded.wait()
            server = startup.server or importlib.import_module("attend.mcp.server")
            startup.present.wait()
            server.serve(wire_in, wire_out, [*front.replay, (pending, None)], startup.marker)
        else:
            startup.present.wait()  # stdin closed in discovery: the marker (if written) goes
    finally:
        startup.stop_conduit()
        startup.remove_marker()
        sys.stderr.flush()
    # Interpreter teardown after stdin closes costs ~0.2 s and does nothing for us.
    os._exit(0)
