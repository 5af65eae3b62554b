"""Shared fixtures: a private HOME with a Claude config folder, a spool, stand-in sessions that are
real processes with their own session records, and the installed `attend` run as a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from attend.domain.context import Context
from attend.spool import Spool
from attend.testing.standin import StandIn

ATTEND = shutil.which("attend", path=str(Path(sys.executable).parent)) or "attend"

# Variables a developer's own Claude Code session would leak into the tests.
SCRUB = (
    "CLAUDECODE",
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_PROJECT_DIR",
    "CLAUDE_PID",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_MESSAGING_SOCKET",
    "ATTEND_HOME",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "ATTEND_PAUSE_AT",
    "TMUX",
    "STY",
    "TERM_PROGRAM",
    "SSH_CONNECTION",
    "TERMINAL",
    "KITTY_PID",
    "ALACRITTY_SOCKET",
    "WEZTERM_PANE",
)


class World:
    """One test's machine: HOME, project folders, spool, and the sessions started in it."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.home = tmp / "home"
        (self.home / ".claude" / "sessions").mkdir(parents=True)
        self.env = {k: v for k, v in os.environ.items() if k not in SCRUB}
        self.env.update(
            HOME=str(self.home),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            USER="fixture-human",
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            PYTHONDONTWRITEBYTECODE="1",
        )
        self.spool_root = self.home / ".cache" / "attend"
        self.sessions: list[StandIn] = []

    def project(self, name: str) -> Path:
        path = self.tmp / "projects" / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def spool(self) -> Spool:
        return Spool.open(self.spool_root)

    def session(self, project: str = "proj", name: str | None = None, **kw: object) -> StandIn:
        s = StandIn(self.home, self.project(project), self.env, name=name, **kw)  # type: ignore[arg-type]
        self.sessions.append(s)
        return s

    def context(self, session: StandIn | None = None, cwd: Path | None = None) -> Context:
        """A library context acting as ``session`` (its pid is the ancestry start) or as the human."""
        pid = session.pid if session else os.getpid()
        return Context(spool=self.spool, env=self.env, cwd=str(cwd or self.project("proj")), pid=pid)

    def attend(
        self,
        *args: str,
        stdin: str = "",
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        """Run the installed `attend` as the human at a terminal (no session in its ancestry)."""
        return subprocess.run(
            [ATTEND, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**self.env, **(env or {})},
            cwd=str(cwd or self.project("proj")),
        )

    def close(self) -> None:
        for s in self.sessions:
            s.close()


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path)
    yield w
    w.close()
