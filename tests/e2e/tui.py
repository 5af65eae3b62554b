"""Drive the real Claude Code TUI (no ``-p``) under a private tmux server, against the scripted model.

The interactive client is what a person runs; some behaviour exists only there (an idle session
sitting at its prompt, a permission prompt on screen). tmux gives it a terminal (120x40,
``TERM=xterm-256color``); keys go in with ``send-keys`` and the screen comes back with
``capture-pane -p``. Each TUI gets its own tmux server (``-L``), so closing it ends exactly what it
started. The client needs ``~/.claude.json`` to say onboarding is done, the test key is approved and
the project folder is trusted, or it stops at a dialog (or ``Not logged in``).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.e2e.fake_api import FakeAPI
from tests.e2e.harness import E2EWorld, RecordWatch, claude_bin, wait_for
from tests.support import require_tools

KEY = "sk-test"


def tmux_bin() -> str:
    """tmux, or the test fails saying what to install, as every terminal test does: a class that calls
    this declares ``TERMINAL_TOOLS``, so tests/conftest.py marks the tests that use it ``terminal``."""
    require_tools("tmux")
    return shutil.which("tmux") or "tmux"


# Markers a CI system sets. Gemini CLI runs headless when it sees one (CI=true, GITHUB_ACTIONS=true)
# and so never draws its prompt; a person's terminal has none of them.
CI_MARKERS = ("CI", "GITHUB_ACTIONS", "CONTINUOUS_INTEGRATION", "BUILD_NUMBER", "RUN_ID")


def launcher(path: Path, env: dict[str, str], cwd: Path, argv: Sequence[str]) -> Path:
    """A shell script at ``path`` that runs ``argv`` in ``cwd`` with ``env`` as a person's terminal has it:
    ``TERM`` set, and no tmux or CI variables of the test run."""
    dropped = ("TMUX", *CI_MARKERS)
    env = {k: v for k, v in {**env, "TERM": "xterm-256color"}.items() if k not in dropped and k.isidentifier()}
    # tmux hands its pane the environment of the process that started its server: unset, not just omit.
    unset = f"unset {' '.join(dropped)}\n"
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
    command = " ".join(shlex.quote(a) for a in argv)
    path.write_text(f"#!/bin/sh\n{unset}{exports}cd {shlex.quote(str(cwd))}\nexec {command}\n")
    path.chmod(0o755)
    return path


def trust(e2e: E2EWorld, project: Path, extra: dict[str, Any] | None = None) -> None:
    """``~/.claude.json`` as a user who finished onboarding, approved the key and trusts ``project``."""
    path = e2e.home / ".claude.json"
    data: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(path.read_text())
    data.update(
        hasCompletedOnboarding=True,
        theme="dark",
        customApiKeyResponses={"approved": [KEY[-20:]], "rejected": []},
        **(extra or {}),
    )
    projects = data.setdefault("projects", {})
    projects.setdefault(str(project), {}).update(hasTrustDialogAccepted=True, hasCompletedProjectOnboarding=True)
    path.write_text(json.dumps(data, indent=2))


class TUI:
    """One interactive client in tmux. ``start`` returns once its prompt is drawn."""

    TERMINAL_TOOLS = ("tmux",)

    def __init__(
        self,
        e2e: E2EWorld,
        api: FakeAPI,
        *,
        project: str = "proj",
        args: Sequence[str] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.e2e = e2e
        self.api = api
        self.cwd = e2e.project(project)
        self.args = list(args)
        self.extra_env = dict(env or {})
        self.tmux = tmux_bin()
        self.server = f"attend-e2e-{uuid.uuid4().hex[:10]}"
        self.watch = RecordWatch(e2e.claude_dir / "sessions")
        self.started = False

    def _tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.tmux, "-L", self.server, *args], capture_output=True, text=True, check=check, timeout=30
        )

    def start(self, ready_timeout: float = 90) -> TUI:
        trust(self.e2e, self.cwd)
        self.api.on_request = lambda _req: self.watch.snap()
        self.api.__enter__()
        script = launcher(
            self.e2e.tmp / f"tui-{self.server}.sh",
            {**self.e2e.client_env(self.api), **self.extra_env},
            self.cwd,
            [claude_bin(), *self.args],
        )
        self.watch.__enter__()
        self._tmux("-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "120", "-y", "40", str(script))
        self.started = True
        try:
            wait_for(lambda: "❯" in self.screen(), ready_timeout, "the TUI's prompt")
        except TimeoutError as e:
            raise TimeoutError(f"{e}; the screen:\n{self.screen()}") from None
        return self

    def screen(self) -> str:
        out = self._tmux("capture-pane", "-p", "-t", "t", check=False)
        return out.stdout

    def type(self, text: str) -> None:
        """Type ``text`` at the prompt and press Enter."""
        self._tmux("send-keys", "-t", "t", "-l", text)
        time.sleep(0.3)  # the TUI reads a paste and a keypress apart; Enter glued to the text is a newline
        self._tmux("send-keys", "-t", "t", "Enter")

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "t", *keys)

    def record(self) -> dict[str, Any] | None:
        """The client's session record (``~/.claude/sessions/<pid>.json``), once it is written."""
        self.watch.snap()
        for rec in self.watch.records.values():
            return rec
        return None

    @property
    def pid(self) -> int | None:
        rec = self.record()
        return int(rec["pid"]) if rec else None

    def close(self) -> None:
        if not self.started:
            return
        self.started = False
        pid = self.pid
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                wait_for(lambda: not os.path.exists(f"/proc/{pid}"), 10, "the TUI to exit")
        self._tmux("kill-server", check=False)
        folder = os.path.join(os.environ.get("TMUX_TMPDIR") or "/tmp", f"tmux-{os.getuid()}")
        with contextlib.suppress(OSError):  # the server's socket file outlives it
            os.unlink(os.path.join(folder, self.server))
        self.watch.__exit__()
        self.api.close()
