"""Run the real Claude Code client (`claude -p`) against the scripted fake API, in a private HOME.

Invariant: a run touches nothing outside its temporary tree and loopback. HOME, the spool and the
Claude config folder all live under the test's ``tmp_path``; the client talks only to the fake API
(``ANTHROPIC_BASE_URL``) and is told not to send telemetry or other non-essential traffic.

What a test gets back (``Run``) is the client's exit code and output, every request the fake API
recorded, and the session records the client wrote while it ran (it deletes
``~/.claude/sessions/<pid>.json`` on exit, so the harness snapshots that folder at every model
request and on a short poll).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from attend.domain.core import envelope
from tests.e2e.fake_api import Entry, FakeAPI, Reply, Request
from tests.support import SCRUB, World

E2E_DIR = Path(__file__).resolve().parent
VENV_BIN = Path(sys.executable).parent
ATTEND_BIN = shutil.which("attend", path=str(VENV_BIN)) or str(VENV_BIN / "attend")
RUN_TIMEOUT = 120.0  # seconds; a hung client fails the test instead of hanging CI
SCRIPT_FAILURE_GRACE = 5.0  # seconds a client may go on after a script step failed, before it is ended

# Keep the client on loopback and quiet: no telemetry, error reports, update checks or other
# non-essential traffic (all read by 2.1.332).
QUIET_ENV = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
}

# Besides tests.support.SCRUB: anything that would point the client at a real account or model.
SCRUB_PREFIXES = ("ANTHROPIC_", "CLAUDE_", "AWS_BEARER_TOKEN_BEDROCK", "VERTEX_", "OTEL_")


# ---------------------------------------------------------------------- binaries


def _binary(env_var: str, name: str) -> str:
    """The pinned binary from tests/e2e/node_modules, or the override; skip (or fail in CI) if absent."""
    path = os.environ.get(env_var) or str(E2E_DIR / "node_modules" / ".bin" / name)
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return path
    reason = f"{name} not found at {path}: run `npm ci --prefix tests/e2e` (or set {env_var} to the binary)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def claude_bin() -> str:
    return _binary("ATTEND_CLAUDE_BIN", "claude")


def inspector_bin() -> str:
    return _binary("ATTEND_INSPECTOR", "mcp-inspector")


# ---------------------------------------------------------------------- reading what reached the model


@dataclass(frozen=True)
class ToolUse:
    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class ToolResult:
    tool_use_id: str
    name: str  # the tool the model called ("" when the call was not found)
    input: dict[str, Any]
    text: str  # the content, flattened to text
    is_error: bool

    def json(self) -> Any:
        """The content parsed as JSON (MCP structured results reach the model as JSON text)."""
        return json.loads(self.text)


@dataclass(frozen=True)
class Notification:
    task_id: str
    summary: str
    status: str
    events: tuple[str, ...]
    raw: str


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_content_text(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content)
    return "" if content is None else str(content)


def conversation(requests: Sequence[Request]) -> list[dict[str, Any]]:
    """The longest message list among the turn requests: the whole conversation the model saw."""
    best: list[dict[str, Any]] = []
    for r in requests:
        if len(r.messages) >= len(best):
            best = r.messages
    return best


def tool_uses(requests: Sequence[Request]) -> list[ToolUse]:
    seen: dict[str, ToolUse] = {}
    for r in requests:
        for m in r.messages:
            if m.get("role") != "assistant" or not isinstance(m.get("content"), list):
                continue
            for b in m["content"]:
                if isinstance(b, dict) and b.get("type") == "tool_use":
                    seen.setdefault(b["id"], ToolUse(b["id"], b.get("name", ""), dict(b.get("input") or {})))
    return list(seen.values())


def tool_results(requests: Sequence[Request], name: str | None = None) -> list[ToolResult]:
    """Every tool_result the model received, in order, once each, with the call it answers."""
    calls = {u.id: u for u in tool_uses(requests)}
    seen: dict[str, ToolResult] = {}
    for r in requests:
        for m in r.messages:
            if m.get("role") != "user" or not isinstance(m.get("content"), list):
                continue
            for b in m["content"]:
                if not (isinstance(b, dict) and b.get("type") == "tool_result") or b.get("tool_use_id") in seen:
                    continue
                use = calls.get(b.get("tool_use_id", ""))
                seen[b["tool_use_id"]] = ToolResult(
                    b["tool_use_id"],
                    use.name if use else "",
                    use.input if use else {},
                    _content_text(b.get("content")),
                    bool(b.get("is_error")),
                )
    return [t for t in seen.values() if name is None or t.name == name]


def _texts(m: dict[str, Any]) -> list[str]:
    content = m.get("content")
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


def user_texts(requests: Sequence[Request]) -> list[str]:
    """Every text the client put before the model (prompt, reminders, hook feedback, task notifications):
    the text blocks of ``user`` and ``system`` role messages, once each.

    2.1.332 sends some of them as ``system`` role messages inside ``messages`` (the environment block,
    ``Stop hook blocking error from command: …``). Identical texts at different positions count once
    per position, so a repeated delivery shows.
    """
    seen: dict[tuple[int, int, str], str] = {}
    for r in requests:
        for i, m in enumerate(r.messages):
            if m.get("role") == "assistant":
                continue
            for j, t in enumerate(_texts(m)):
                seen.setdefault((i, j, t), t)
    return list(seen.values())


def latest_user_texts(req: Request) -> list[str]:
    """Texts after the model's last message in one request: what is new to the model in this turn."""
    out: list[str] = []
    for m in reversed(req.messages):
        if m.get("role") == "assistant":
            break
        out[:0] = _texts(m)
    return out


def latest_tool_result(req: Request) -> ToolResult | None:
    """The tool_result after the model's last message in ``req`` (for script callables)."""
    ids: list[str] = []
    for m in reversed(req.messages):
        if m.get("role") == "assistant":
            break
        if isinstance(m.get("content"), list):
            ids += [
                str(b.get("tool_use_id"))
                for b in m["content"]
                if isinstance(b, dict) and b.get("type") == "tool_result"
            ]
    for t in tool_results([req]):
        if t.tool_use_id in ids:
            return t
    return None


_NOTE = re.compile(r"<task-notification>(.*?)</task-notification>", re.S)


def _tag(name: str, s: str) -> str:
    m = re.search(rf"<{name}>(.*?)</{name}>", s, re.S)
    return m.group(1).strip() if m else ""


def task_notifications(requests: Sequence[Request]) -> list[Notification]:
    """Every ``<task-notification>`` (Monitor events, stream end) the model received, once each."""
    out = []
    for t in user_texts(requests):
        for m in _NOTE.finditer(t):
            body = m.group(1)
            events = tuple(e.strip() for e in re.findall(r"<event>(.*?)</event>", body, re.S))
            out.append(Notification(_tag("task-id", body), _tag("summary", body), _tag("status", body), events, body))
    return out


def monitor_events(requests: Sequence[Request]) -> list[str]:
    """The Monitor event lines the model received. The client may batch several stdout lines that
    arrive together into one ``<event>``; each line is one item here."""
    return [line for n in task_notifications(requests) for e in n.events for line in e.splitlines() if line.strip()]


STOP_BLOCK = "Stop hook blocking error from command:"


def stop_hook_blocks(requests: Sequence[Request]) -> list[str]:
    """The Stop-hook block texts the model received (``Stop hook blocking error from command: …``)."""
    return [t for t in user_texts(requests) if STOP_BLOCK in t]


STOP_ECHO = "Stop hook feedback:"


def deliveries(requests: Sequence[Request], needle: str) -> int:
    """How many times a conduit put ``needle`` before the model, counted across every request.

    2.1.332 shows one blocking Stop hook twice in the request that follows it: the block itself and a
    ``Stop hook feedback:`` reminder repeating it. That reminder is the same delivery, not a second one;
    a waiter's wake (the same words, with no block beside it) still counts.
    """
    echoes: set[tuple[int, int, str]] = set()
    for r in requests:
        found = [
            (i, j, t) for i, m in enumerate(r.messages) if m.get("role") != "assistant" for j, t in enumerate(_texts(m))
        ]
        if any(STOP_BLOCK in t and needle in t for _, _, t in found):
            echoes.update(k for k in found if STOP_ECHO in k[2] and STOP_BLOCK not in k[2] and needle in k[2])
    seen = {
        (i, j, t)
        for r in requests
        for i, m in enumerate(r.messages)
        if m.get("role") != "assistant"
        for j, t in enumerate(_texts(m))
        if needle in t
    }
    return len(seen - echoes)


def session_id_of(req: Request) -> str | None:
    """The client's session id, as it sends it in ``metadata.user_id`` (a JSON string)."""
    meta: Any = req.body.get("metadata") if isinstance(req.body, dict) else None
    try:
        return str(json.loads(meta["user_id"])["session_id"])
    except (TypeError, KeyError, ValueError):
        return None


def deferred_tools(req: Request) -> list[str]:
    """Names the system prompt lists as deferred tools (loaded with ToolSearch ``select:``)."""
    text = req.system_text() + "\n" + "\n".join(t for m in req.messages if m.get("role") == "system" for t in _texts(m))
    start = text.find("deferred tools are now available via ToolSearch")
    if start < 0:
        return []
    lines = text[start:].split("\n")[1:]
    names: list[str] = []
    for line in lines:
        line = line.strip()
        if not line:
            if names:
                break
            continue
        if not re.fullmatch(r"[A-Za-z0-9_\-]+", line):
            break
        names.append(line)
    return names


def tools_size(tools: Sequence[dict[str, Any]]) -> int:
    """Bytes of ``{name, description, input_schema}`` per tool, compact JSON, summed."""
    return sum(
        len(
            json.dumps(
                {k: t.get(k) for k in ("name", "description", "input_schema")},
                separators=(",", ":"),
                ensure_ascii=False,
            ).encode()
        )
        for t in tools
    )


# ---------------------------------------------------------------------- script steps


def expect_ok(req: Request, what: str) -> ToolResult:
    """The tool result the model just got; raise (failing the script, and so the test) if it failed."""
    result = latest_tool_result(req)
    if result is None or result.is_error:
        raise AssertionError(f"{what} failed: {result.text if result else 'no tool result in this request'}")
    return result


def structured(req: Request, what: str) -> dict[str, Any]:
    """An attend MCP tool's structured result, as the model received it (JSON text in the tool_result)."""
    data = expect_ok(req, what).json()
    assert isinstance(data, dict), data
    return data


def after_ok(what: str, then: Reply) -> Callable[[Request], Reply]:
    """A script step: check the previous tool call succeeded, then answer ``then``."""

    def step(req: Request) -> Reply:
        expect_ok(req, what)
        return then

    return step


# ---------------------------------------------------------------------- running the client


@dataclass
class Run:
    rc: int
    stdout: str
    stderr: str
    api: FakeAPI
    records: dict[int, dict[str, Any]]  # pid -> last content seen of ~/.claude/sessions/<pid>.json
    argv: list[str]
    pid: int
    timed_out: bool = False  # killed at the run's timeout
    aborted: bool = False  # killed soon after a script step failed

    @property
    def turns(self) -> list[Request]:
        return self.api.turns

    @property
    def session_id(self) -> str | None:
        for r in self.turns:
            if sid := session_id_of(r):
                return sid
        for rec in self.records.values():
            return str(rec.get("sessionId"))
        return None

    def tool_results(self, name: str | None = None) -> list[ToolResult]:
        return tool_results(self.turns, name)

    def user_texts(self) -> list[str]:
        return user_texts(self.turns)

    def task_notifications(self) -> list[Notification]:
        return task_notifications(self.turns)

    def monitor_events(self) -> list[str]:
        return monitor_events(self.turns)

    def stop_hook_blocks(self) -> list[str]:
        return stop_hook_blocks(self.turns)

    def deliveries(self, needle: str) -> int:
        return deliveries(self.turns, needle)

    def explain(self) -> str:
        """A readable account of the run, for assertion messages."""
        lines = [
            f"argv: {self.argv}",
            f"rc={self.rc} timed_out={self.timed_out} aborted after a script failure={self.aborted}",
            f"stdout: {self.stdout[-2000:]}",
            f"stderr: {self.stderr[-2000:]}",
            f"script consumed {self.api.consumed}/{len(self.api.script)}, exhausted {self.api.exhausted}",
            f"script errors: {self.api.errors}",
            f"side requests: {len(self.api.side_requests)}",
        ]
        for t in self.tool_results():
            lines.append(f"tool {t.name} {json.dumps(t.input)[:200]} -> error={t.is_error}: {t.text[:600]}")
        for text in self.user_texts():
            if not text.startswith("# Environment") and "Attribution for git commits" not in text[:200]:
                lines.append(f"user text: {text[:600]}")
        return "\n".join(lines)


class RecordWatch:
    """Keep the last content seen of each ``sessions/<pid>.json`` while the client runs."""

    def __init__(self, sessions_dir: Path) -> None:
        self.dir = sessions_dir
        self.records: dict[int, dict[str, Any]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="record-watch", daemon=True)

    def snap(self) -> None:
        try:
            names = os.listdir(self.dir)
        except OSError:
            return
        for n in names:
            if not n.endswith(".json") or not n[:-5].isdigit():
                continue
            try:
                self.records[int(n[:-5])] = json.loads((self.dir / n).read_text())
            except (OSError, ValueError):
                continue

    def _loop(self) -> None:
        while not self._stop.wait(0.05):
            self.snap()

    def __enter__(self) -> RecordWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


@dataclass
class Claude:
    """One client process under way (from ``E2EWorld.start``); ``wait()`` gives its ``Run``."""

    proc: subprocess.Popen[str]
    api: FakeAPI
    watch: RecordWatch
    argv: list[str]
    timeout: float
    started: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def say(self, text: str) -> None:
        """One more user message (a prompt, or a command such as ``/compact``) to a client started with
        ``stream_input``: its stdin takes stream-json user messages until ``wait`` closes it."""
        assert self.proc.stdin is not None, "started without stream_input"
        message = {"type": "user", "message": {"role": "user", "content": text}}
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def wait(self) -> Run:
        """Wait for the client to exit. Past its timeout, or a few seconds after a script step failed
        (the test has failed; a Monitor left running would otherwise hold ``-p`` open until it
        expires), end it and everything it started."""
        timed_out = aborted = False
        deadline = self.started + self.timeout
        try:
            while True:
                try:
                    out, err = self.proc.communicate(timeout=0.5)
                    break
                except subprocess.TimeoutExpired:
                    now = time.monotonic()
                    failed_at = self.api.first_error_at
                    if now > deadline or (failed_at is not None and now - failed_at > SCRIPT_FAILURE_GRACE):
                        timed_out, aborted = now > deadline, now <= deadline
                        _kill_group(self.proc)
                        out, err = self.proc.communicate(timeout=10)
                        break
        finally:
            self.watch.snap()
            self.watch.__exit__()
            self.api.close()
        run = Run(self.proc.returncode, out, err, self.api, dict(self.watch.records), self.argv, self.proc.pid)
        run.timed_out, run.aborted = timed_out, aborted
        dump(run)
        return run


def dump(run: Run) -> None:
    """With ATTEND_E2E_DUMP=<folder>, save every request of the run there, for a human to read."""
    folder = os.environ.get("ATTEND_E2E_DUMP")
    if not folder:
        return
    test = os.environ.get("PYTEST_CURRENT_TEST", "run").split(" ")[0]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", test)
    path = Path(folder) / f"{name}-{run.pid}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "argv": run.argv,
        "rc": run.rc,
        "stdout": run.stdout,
        "stderr": run.stderr,
        "records": run.records,
        "requests": [{"path": r.path, "side": r.side, "index": r.index, "body": r.body} for r in run.api.requests],
    }
    path.write_text(json.dumps(doc, indent=1))


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """End the client and everything it started (Monitor commands, MCP servers, hooks), even those
    that moved to a process group of their own."""
    import psutil

    try:
        tree = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        tree = []
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    for child in tree:
        with contextlib.suppress(psutil.Error):
            child.kill()


class E2EWorld(World):
    """A World (private HOME, spool, human `attend`) that can also run the real Claude Code client."""

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp)
        self.env = {k: v for k, v in self.env.items() if not k.startswith(SCRUB_PREFIXES) and k not in SCRUB}
        self.running: list[Claude] = []

    @property
    def claude_dir(self) -> Path:
        return self.home / ".claude"

    def settings(self, settings: dict[str, Any]) -> Path:
        """Write ``~/.claude/settings.json`` (hooks, permissions)."""
        path = self.claude_dir / "settings.json"
        path.write_text(json.dumps(settings, indent=2))
        return path

    def mcp_config(self, servers: dict[str, Any] | None = None) -> Path:
        """A ``--mcp-config`` file; by default registers ``attend mcp`` over stdio as server ``attend``."""
        servers = servers or {"attend": {"type": "stdio", "command": ATTEND_BIN, "args": ["mcp"]}}
        path = self.tmp / "mcp.json"
        path.write_text(json.dumps({"mcpServers": servers}, indent=2))
        return path

    def client_env(self, api: FakeAPI) -> dict[str, str]:
        return {**self.env, **QUIET_ENV, "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-test"}

    def start(
        self,
        script: Sequence[Entry],
        prompt: str = "go",
        *,
        project: str = "proj",
        mcp_config: Path | None = None,
        permission_mode: str | None = None,
        allowed_tools: Sequence[str] = (),
        args: Sequence[str] = (),
        timeout: float = RUN_TIMEOUT,
        api: FakeAPI | None = None,
        stream_input: bool = False,
    ) -> Claude:
        """Start ``claude -p <prompt>`` in a project folder, answering from ``script``. With
        ``stream_input`` the prompt is the first stream-json user message and ``Claude.say`` sends
        more (several turns, or ``/compact`` between them, in one process); ``wait`` ends the input."""
        binary = claude_bin()
        api = api or FakeAPI(list(script))
        watch = RecordWatch(self.claude_dir / "sessions")
        api.on_request = lambda _req: watch.snap()  # the record is gone after exit; catch it live
        api.__enter__()
        argv = [binary, "-p"] if stream_input else [binary, "-p", prompt]
        if stream_input:
            argv += ["--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]
        if mcp_config is not None:
            argv += ["--mcp-config", str(mcp_config)]
        if permission_mode:
            argv += ["--permission-mode", permission_mode]
        if allowed_tools:
            argv += ["--allowedTools", *allowed_tools]
        argv += list(args)
        watch.__enter__()
        proc = subprocess.Popen(
            argv,
            cwd=str(self.project(project)),
            env=self.client_env(api),
            stdin=subprocess.PIPE if stream_input else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group, so a timeout can end Monitor commands too
        )
        c = Claude(proc, api, watch, argv, timeout)
        self.running.append(c)
        if stream_input:
            c.say(prompt)
        return c

    def claude(self, script: Sequence[Entry], prompt: str = "go", **kw: Any) -> Run:
        """Run ``claude -p`` to completion (or its timeout) and return what happened."""
        return self.start(script, prompt, **kw).wait()

    def human_send(self, *args: str, verb: str = "send") -> dict[str, Any]:
        """``attend send --json …`` (or ``reply``) as the human at a terminal; the result document."""
        out = self.attend(verb, "--json", *args)
        assert out.returncode == 0, out.stdout + out.stderr
        sent: dict[str, Any] = json.loads(out.stdout)
        return sent

    def sensor_live(self, sid: str) -> bool:
        """``attend peers`` (as the human) shows session ``sid`` with its sensor loop running."""
        out = self.attend("peers", "--json")
        if out.returncode != 0:
            return False
        data = json.loads(out.stdout)
        peers = data.get("peers", []) if isinstance(data, dict) else data
        return any(p.get("session_id", p.get("id")) == sid and p.get("sensor") for p in peers)

    def signals(self) -> list[envelope.Signal]:
        """Every message in the spool, parsed, once: a record linked into several rooms (a reply to a
        human in #open is in its room h-<user> too) is one message."""
        spool = self.spool
        found = {n: room for room in spool.rooms() for n in spool.room_names(room)}
        return [envelope.parse(spool.read(spool.room_path(room, n))) for n, room in sorted(found.items())]

    def spool_files(self) -> list[Path]:
        """Every published room record (for 'the spool is unchanged' assertions)."""
        rooms = self.spool_root / "rooms"
        return sorted(p for p in rooms.glob("*/new/*") if p.is_file()) if rooms.is_dir() else []

    def close(self) -> None:
        for c in self.running:
            if c.proc.poll() is None:
                _kill_group(c.proc)
                c.proc.communicate(timeout=10)
            c.api.close()
        super().close()


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    """Poll ``predicate`` until it returns something truthy; raise with ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)
