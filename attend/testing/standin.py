"""A stand-in Claude session: a real process with its own session record that runs commands as its
children, so identity resolves by the same ancestry walk a real session's tools go through.

``attend demo`` uses it for its two simulated sessions, and the tests use it for theirs. The host
reads one JSON request per line on stdin (``{"argv": [...], "env": {...}, "stdin": "..."}``) and
answers one JSON line (``{"rc": 0, "stdout": "...", "stderr": "..."}``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from attend import identity


def _host() -> None:
    children: list[subprocess.Popen[bytes]] = []
    for line in sys.stdin:
        children = [c for c in children if c.poll() is None]  # reap finished background children
        request = json.loads(line)
        if request.get("argv") is None:
            break
        env = dict(os.environ)
        env.update(request.get("env") or {})
        for key in request.get("unset") or []:
            env.pop(key, None)
        if request.get("background"):
            # A long-running child (e.g. `attend run` under a stand-in Monitor): output to a file.
            with open(request["stdout_path"], "wb") as out:
                child = subprocess.Popen(
                    request["argv"],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=request.get("cwd"),
                )
            children.append(child)
            sys.stdout.write(json.dumps({"rc": 0, "stdout": str(child.pid), "stderr": ""}) + "\n")
            sys.stdout.flush()
            continue
        try:
            proc = subprocess.run(
                request["argv"],
                input=(request.get("stdin") or "").encode(),
                capture_output=True,
                env=env,
                cwd=request.get("cwd"),
                timeout=request.get("timeout", 120),
            )
            answer = {
                "rc": proc.returncode,
                "stdout": proc.stdout.decode("utf-8", "replace"),
                "stderr": proc.stderr.decode("utf-8", "replace"),
            }
        except (OSError, subprocess.SubprocessError) as e:
            answer = {"rc": 127, "stdout": "", "stderr": str(e)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


@dataclass
class Result:
    rc: int
    stdout: str
    stderr: str


class StandIn:
    """One stand-in session: start it, run commands under it, close it."""

    def __init__(
        self,
        home: Path,
        cwd: Path,
        env: Mapping[str, str],
        session_id: str | None = None,
        name: str | None = None,
        status: str = "idle",
    ) -> None:
        self.home = home
        self.cwd = cwd
        self.env = dict(env)
        self.session_id = session_id or str(uuid.uuid4())
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "attend.testing.standin"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=self.env,
            cwd=str(cwd),
            text=True,
        )
        self.pid = self.proc.pid
        self.name = name
        self.status = status
        self.write_record()

    @property
    def record_path(self) -> Path:
        return identity.claude_dir(self.env) / "sessions" / f"{self.pid}.json"

    def write_record(self, session_id: str | None = None, proc_start: str | None = None) -> None:
        """Write (or rewrite, as /clear does) this process's session record."""
        if session_id:
            self.session_id = session_id
        start = proc_start
        for _ in range(100):
            start = start or identity.proc_start(self.pid)
            if start:
                break
            time.sleep(0.01)
        record: dict[str, object] = {
            "pid": self.pid,
            "sessionId": self.session_id,
            "cwd": str(self.cwd),
            "startedAt": int(time.time() * 1000),
            "procStart": start,
            "version": "stand-in",
            "kind": "interactive",
            "status": self.status,
        }
        if self.name:
            record["name"] = self.name
        self.record_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.record_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record))
        tmp.replace(self.record_path)

    def run(
        self,
        argv: Sequence[str],
        stdin: str = "",
        env: Mapping[str, str] | None = None,
        unset: Sequence[str] = (),
        cwd: Path | None = None,
        timeout: float = 120,
    ) -> Result:
        assert self.proc.stdin and self.proc.stdout
        request = {
            "argv": list(argv),
            "stdin": stdin,
            "env": dict(env or {}),
            "unset": list(unset),
            "cwd": str(cwd or self.cwd),
            "timeout": timeout,
        }
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        return Result(answer["rc"], answer["stdout"], answer["stderr"])

    def spawn(self, argv: Sequence[str], stdout_path: Path, env: Mapping[str, str] | None = None) -> int:
        """Start a long-running child of this session, its output going to ``stdout_path``; returns its pid."""
        assert self.proc.stdin and self.proc.stdout
        request = {
            "argv": list(argv),
            "env": dict(env or {}),
            "cwd": str(self.cwd),
            "background": True,
            "stdout_path": str(stdout_path),
        }
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return int(json.loads(self.proc.stdout.readline())["stdout"])

    def attend(self, *args: str, stdin: str = "", env: Mapping[str, str] | None = None) -> Result:
        exe = shutil.which("attend", path=self.env.get("PATH")) or "attend"
        return self.run([exe, *args], stdin=stdin, env=env)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin
                self.proc.stdin.write(json.dumps({"argv": None}) + "\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        self.record_path.unlink(missing_ok=True)

    def __enter__(self) -> StandIn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if __name__ == "__main__":
    _host()
