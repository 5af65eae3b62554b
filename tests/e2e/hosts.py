"""Run the real Codex CLI and Gemini CLI against their scripted fake model servers, in a private HOME.

The same invariant as ``harness.py``: a run touches nothing outside the test's temporary tree and
loopback. HOME, ``CODEX_HOME``, ``~/.gemini`` and the spool all live under ``tmp_path``; each client
talks only to its fake (Codex through a custom provider with websockets off, Gemini through
``GOOGLE_GEMINI_BASE_URL``), with update checks, analytics, telemetry and plugin sync off.

The base configs are what a user's own config would hold; what attend adds comes from ``attend
install`` itself (the tests run it), so a test proves install alone wires the session.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.e2e.fake_api import Entry, FakeAPI
from tests.e2e.fake_codex import FakeResponses
from tests.e2e.fake_gemini import FakeGemini
from tests.e2e.harness import RUN_TIMEOUT, E2EWorld, _binary, _kill_group, wait_for

CODEX_MODEL = "gpt-5.5"  # classic tools (exec_command); the default model is code-mode only

# Scrubbed from the client's environment besides the harness's own list: real accounts and ids.
HOST_SCRUB = ("CODEX_", "OPENAI_", "GEMINI_", "GOOGLE_")


def codex_bin() -> str:
    return _binary("ATTEND_CODEX_BIN", "codex")


def gemini_bin() -> str:
    return _binary("ATTEND_GEMINI_BIN", "gemini")


def codex_config(api: FakeAPI, sandbox: str = "danger-full-access") -> str:
    """The user's own config.toml: the fake provider, and nothing that leaves loopback."""
    return f"""# the user's own settings (a comment attend must keep)
model = "{CODEX_MODEL}"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "{sandbox}"
check_for_update_on_startup = false

[model_providers.fake]
name = "fake"
base_url = "{api.url}/v1"
wire_api = "responses"
env_key = "FAKE_OPENAI_API_KEY"
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
plugins = false
apps = false
"""


def gemini_settings(api: FakeAPI) -> dict[str, Any]:
    return {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    }


@dataclass
class HostRun:
    rc: int
    stdout: str
    stderr: str
    api: FakeAPI
    argv: list[str]
    timed_out: bool = False

    def explain(self) -> str:
        lines = [
            f"argv: {self.argv}",
            f"rc={self.rc} timed_out={self.timed_out}",
            f"stdout: {self.stdout[-2000:]}",
            f"stderr: {self.stderr[-3000:]}",
            f"script consumed {self.api.consumed}/{len(self.api.script)}, exhausted {self.api.exhausted}",
            f"script errors: {self.api.errors}",
        ]
        return "\n".join(lines)


class HostWorld(E2EWorld):
    """An E2EWorld that can also run Codex and Gemini."""

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp)
        self.env = {k: v for k, v in self.env.items() if not k.startswith(HOST_SCRUB)}
        self.codex_home = self.home / ".codex"
        self.gemini_dir = self.home / ".gemini"
        self.procs: list[subprocess.Popen[str]] = []

    # -- configs

    def codex_setup(self, api: FakeAPI, sandbox: str = "danger-full-access") -> Path:
        if sandbox != "danger-full-access" and Path(self.tmp).resolve().is_relative_to("/dev"):
            # bwrap gives the sandbox a /dev of its own: a spool under /dev/shm is not there.
            raise AssertionError(f"Codex's sandbox cannot see {self.tmp}: run with a --basetemp outside /dev")
        self.codex_home.mkdir(exist_ok=True)
        path = self.codex_home / "config.toml"
        path.write_text(codex_config(api, sandbox))
        return path

    def gemini_setup(self, api: FakeAPI) -> Path:
        self.gemini_dir.mkdir(exist_ok=True)
        path = self.gemini_dir / "settings.json"
        path.write_text(json.dumps(gemini_settings(api), indent=2) + "\n")
        return path

    def codex_env(self) -> dict[str, str]:
        return {**self.env, "CODEX_HOME": str(self.codex_home), "FAKE_OPENAI_API_KEY": "dummy"}

    def gemini_env(self, api: FakeAPI) -> dict[str, str]:
        return {
            **self.env,
            "GEMINI_API_KEY": "dummy",
            "GOOGLE_GEMINI_BASE_URL": api.url,
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }

    # -- runs

    def _run(self, argv: list[str], env: dict[str, str], api: FakeAPI, project: str, timeout: float) -> HostRun:
        api.__enter__()
        proc = subprocess.Popen(
            argv,
            cwd=str(self.project(project)),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.procs.append(proc)
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)  # type: ignore[arg-type]
            out, err = proc.communicate(timeout=10)
        finally:
            api.close()
        return HostRun(proc.returncode, out, err, api, argv, timed_out)

    def codex(
        self,
        script: list[Entry],
        prompt: str = "go",
        *,
        api: FakeResponses | None = None,
        project: str = "proj",
        trust_bypass: bool = False,
        timeout: float = RUN_TIMEOUT,
    ) -> HostRun:
        """``codex exec`` to completion. Hooks run only when trusted: ``attend install`` records the
        trust; ``trust_bypass`` passes the client's own bypass flag instead."""
        api = api or FakeResponses(list(script))
        argv = [codex_bin(), "exec", "--skip-git-repo-check"]
        if trust_bypass:
            argv.append("--dangerously-bypass-hook-trust")
        argv.append(prompt)
        return self._run(argv, self.codex_env(), api, project, timeout)

    def gemini(
        self,
        script: list[Entry],
        prompt: str = "go",
        *,
        api: FakeGemini | None = None,
        project: str = "proj",
        timeout: float = RUN_TIMEOUT,
    ) -> HostRun:
        api = api or FakeGemini(list(script))
        argv = [gemini_bin(), "--approval-mode", "yolo", "-p", prompt]
        return self._run(argv, self.gemini_env(api), api, project, timeout)

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                _kill_group(proc)  # type: ignore[arg-type]
                with contextlib.suppress(Exception):
                    proc.communicate(timeout=10)
        super().close()


class AppServer:
    """``codex app-server --listen stdio://`` driven over JSON-RPC, as an IDE drives it: a thread that
    stays loaded and idle between turns, with no TTY."""

    def __init__(self, world: HostWorld, api: FakeAPI, project: str = "proj") -> None:
        import threading

        api.__enter__()
        self.api = api
        self.cwd = str(world.project(project))
        self.proc = subprocess.Popen(
            [codex_bin(), "app-server", "--listen", "stdio://"],
            cwd=self.cwd,
            env=world.codex_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        world.procs.append(self.proc)
        self.messages: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._ids = iter(range(1, 10_000))
        threading.Thread(target=self._read, name="app-server", daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            with self._cond:
                self.messages.append(msg)
                self._cond.notify_all()

    def send(self, method: str, params: dict[str, Any] | None = None, notify: bool = False) -> Any:
        assert self.proc.stdin is not None
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        rid = None if notify else next(self._ids)
        if rid is not None:
            msg["id"] = rid
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        if rid is None:
            return None
        reply = self.wait(lambda m: m.get("id") == rid, 60, method)
        assert "error" not in reply, reply
        return reply.get("result")

    def wait(self, match: Any, timeout: float, what: str) -> dict[str, Any]:
        with self._cond:
            found: list[dict[str, Any]] = []

            def seen() -> bool:
                found[:] = [m for m in self.messages if match(m)]
                return bool(found)

            assert self._cond.wait_for(seen, timeout), f"timed out after {timeout:.0f}s waiting for {what}"
            return found[0]

    def count(self, method: str) -> int:
        with self._cond:
            return sum(1 for m in self.messages if m.get("method") == method)

    def wait_count(self, method: str, n: int, timeout: float) -> None:
        with self._cond:
            assert self._cond.wait_for(
                lambda: sum(1 for m in self.messages if m.get("method") == method) >= n, timeout
            ), f"timed out after {timeout:.0f}s waiting for {n} × {method}"

    def start_thread(self) -> str:
        self.send("initialize", {"clientInfo": {"name": "attend-e2e", "version": "1"}})
        self.send("initialized", notify=True)
        result = self.send(
            "thread/start", {"cwd": self.cwd, "approvalPolicy": "never", "sandbox": "danger-full-access"}
        )
        thread = result.get("thread", {}).get("id") if isinstance(result, dict) else None
        assert isinstance(thread, str), result
        return thread

    def turn(self, thread: str, text: str) -> None:
        self.send("turn/start", {"threadId": thread, "input": [{"type": "text", "text": text}]})

    def close(self) -> None:
        if self.proc.poll() is None:
            _kill_group(self.proc)  # type: ignore[arg-type]
            with contextlib.suppress(Exception):
                self.proc.communicate(timeout=10)
        self.api.close()


GEMINI_READY = "Type your message"  # the prompt's placeholder: the UI is drawn and takes input
SUBMIT_TIMEOUT = 120.0  # seconds of pressing Enter before typed text counts as never submitted
GEMINI_BUSY = "esc to cancel"  # the loading line while a turn is under way


class GeminiTUI:
    """``gemini --approval-mode yolo`` in its interactive UI, in a private tmux server (120x40), as
    ``tui.TUI`` runs Claude Code: an idle session sits at its prompt, as a person leaves it."""

    TERMINAL_TOOLS = ("tmux",)  # tests/conftest.py marks a test that names this class ``terminal``

    def __init__(self, hw: HostWorld, api: FakeGemini, project: str = "proj") -> None:
        self.hw, self.api = hw, api
        self.cwd = hw.project(project)
        from tests.e2e.tui import tmux_bin

        self.tmux = tmux_bin()
        self.server = f"attend-gemini-{uuid.uuid4().hex[:10]}"
        self.started = False

    def _tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.tmux, "-L", self.server, *args], capture_output=True, text=True, check=check, timeout=30
        )

    def start(self, ready_timeout: float = 180) -> GeminiTUI:
        self.api.__enter__()
        from tests.e2e.tui import launcher

        script = launcher(
            self.hw.tmp / f"gemini-{self.server}.sh",
            self.hw.gemini_env(self.api),
            self.cwd,
            [gemini_bin(), "--approval-mode", "yolo"],
        )
        self._tmux("-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "120", "-y", "40", str(script))
        self.started = True
        try:
            wait_for(lambda: GEMINI_READY in self.screen(), ready_timeout, "the Gemini prompt")
        except TimeoutError as e:
            raise TimeoutError(f"{e}; the screen:\n{self.screen()}") from None
        return self

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "t", check=False).stdout

    def type(self, text: str) -> None:
        """Type ``text`` as a prompt and submit it; return once the model was asked.

        Only the model's request counts as sent: a cleared input does not. A turn that has just ended
        in attend's hook can still be ending in the UI, and an input submitted then is queued or
        dropped, and has been seen put back in the input box. So this waits for the UI to stop
        responding before typing, and presses Enter again while the text sits in the input (an Enter
        on an empty input submits nothing)."""
        before = self.api.consumed
        wait_for(lambda: GEMINI_BUSY not in self.screen(), 120, "the UI to stop responding")
        self._tmux("send-keys", "-t", "t", "-l", text)
        # The placeholder goes once the typed text is drawn: an Enter sent before the UI has read the
        # text would submit nothing, and one glued to the text reads as a newline.
        wait_for(lambda: GEMINI_READY not in self.screen(), 60, f"{text!r} drawn in the input box")
        time.sleep(0.3)
        end = time.monotonic() + SUBMIT_TIMEOUT  # a loaded machine has ignored four Enters 10 s apart
        while True:
            if GEMINI_READY not in self.screen():
                self._tmux("send-keys", "-t", "t", "Enter")
            try:
                wait_for(lambda: self.api.consumed > before, 5, "the model asked")
                return
            except TimeoutError:
                if time.monotonic() > end:
                    raise TimeoutError(f"{text!r} never reached the model; the screen:\n{self.screen()}") from None

    def close(self) -> None:
        if not self.started:
            return
        self.started = False
        self._tmux("kill-server", check=False)
        folder = os.path.join(os.environ.get("TMUX_TMPDIR") or "/tmp", f"tmux-{os.getuid()}")
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, self.server))
        self.api.close()


E2E_BIN = Path(__file__).resolve().parent / "node_modules" / ".bin"


def install(hw: HostWorld, host: str) -> str:
    """``attend install --host <host>`` as the human, with the clients on PATH (Codex trusts the hook)."""
    out = hw.attend("install", "--host", host, env={"PATH": f"{E2E_BIN}:{hw.env['PATH']}"})
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout
