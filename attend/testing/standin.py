"""A stand-in Claude session: a real process with its own session record that runs commands as its
children, so identity resolves by the same ancestry walk a real session's tools go through.

``attend demo`` uses it for its two simulated sessions, and the tests use it for theirs. The host
reads one request at a time on stdin (``{"id": 1, "argv": [...], "env": {...}, "stdin": "..."}``) and
answers each, tagged with its id (``{"id": 1, "rc": 0, "stdout": "...", "stderr": "..."}``): each a
4-byte length and a ``marshal``-encoded dict, which the host reads without importing json
(attend/testing/standin_host.py). Requests run concurrently, as a real session's tools do: its Stop
hook drains while its Monitor loop is still running.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import marshal
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attend import identity
from attend.hosts import CLAUDE

HOST = Path(__file__).with_name("standin_host.py")


@dataclass
class Result:
    rc: int
    stdout: str
    stderr: str


def client_named(folder: Path, name: str) -> Path:
    """The interpreter under a client's name (``claude``, ``codex``, ``node``) in ``folder/clients``:
    the kernel shows a process by the name it was started as, and the identity rule looks for the
    client by it."""
    link = folder / "clients" / name
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # another stand-in made it meanwhile
            link.symlink_to(os.path.realpath(sys.executable))
    return link


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
            self.command(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=self.env,
            cwd=str(cwd),
        )
        self.pid = self.proc.pid
        # Requests run concurrently in the host; answers come back tagged and are handed out here.
        self._ids = itertools.count(1)
        self._write = threading.Lock()
        self._waiting: dict[int, queue.SimpleQueue[dict[str, Any]]] = {}
        self._reader = threading.Thread(target=self._read_answers, daemon=True)
        self._reader.start()
        self.name = name
        self.status = status
        self.write_record()

    def command(self) -> list[str]:
        """The stand-in process's command line. A stand-in for another client (a subclass) changes how
        the process looks in /proc (its name, its arguments)."""
        # The host imports only the standard library, started by path without site: one starts per
        # stand-in session, hundreds of them in a test run. The interpreter runs under the client's
        # name (the kernel names a process by the file it was started as), as Claude Code's is.
        return [str(client_named(self.home.parent, CLAUDE.name)), "-S", str(HOST)]

    def tool_env(self) -> dict[str, str]:
        """What the client sets in the environment of the session's shell tool."""
        return {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": self.session_id}

    @property
    def record_path(self) -> Path:
        return Path(CLAUDE.records_home(self.env)) / f"{self.pid}.json"

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

    def _read_answers(self) -> None:
        assert self.proc.stdout
        while (head := self.proc.stdout.read(4)) and len(head) == 4:
            answer = marshal.loads(self.proc.stdout.read(int.from_bytes(head, "big")))
            box = self._waiting.pop(answer.pop("id"), None)
            if box is not None:
                box.put(answer)
        for box in list(self._waiting.values()):  # the host is gone: nobody will answer
            box.put({"rc": 127, "stdout": "", "stderr": "the stand-in session exited"})

    def _request(self, request: dict[str, object]) -> dict[str, Any]:
        assert self.proc.stdin
        rid = next(self._ids)
        box: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        self._waiting[rid] = box
        with self._write:
            self._send({"id": rid, **request})
        if not self._reader.is_alive() and rid in self._waiting:
            return {"rc": 127, "stdout": "", "stderr": "the stand-in session exited"}
        return box.get()

    def _send(self, message: dict[str, object]) -> None:
        assert self.proc.stdin
        frame = marshal.dumps(message)
        self.proc.stdin.write(len(frame).to_bytes(4, "big") + frame)
        self.proc.stdin.flush()

    def run(
        self,
        argv: Sequence[str],
        stdin: str = "",
        env: Mapping[str, str] | None = None,
        unset: Sequence[str] = (),
        cwd: Path | None = None,
        timeout: float = 120,
    ) -> Result:
        request: dict[str, object] = {
            "argv": list(argv),
            "stdin": stdin,
            "env": dict(env or {}),
            "unset": list(unset),
            "cwd": str(cwd or self.cwd),
            "timeout": timeout,
        }
        answer = self._request(request)
        return Result(answer["rc"], answer["stdout"], answer["stderr"])

    def spawn(self, argv: Sequence[str], stdout_path: Path, env: Mapping[str, str] | None = None) -> int:
        """Start a long-running child of this session, its output going to ``stdout_path``; returns its pid."""
        request: dict[str, object] = {
            "argv": list(argv),
            "env": dict(env or {}),
            "cwd": str(self.cwd),
            "background": True,
            "stdout_path": str(stdout_path),
        }
        return int(self._request(request)["stdout"])

    def attend(self, *args: str, stdin: str = "", env: Mapping[str, str] | None = None) -> Result:
        exe = shutil.which("attend", path=self.env.get("PATH")) or "attend"
        return self.run([exe, *args], stdin=stdin, env=env)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin
                with self._write:
                    self._send({"argv": None})
                    self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self._reader.join(5)  # it ends at the host's end of file
        if self.proc.stdout:
            self.proc.stdout.close()
        self.record_path.unlink(missing_ok=True)

    def __enter__(self) -> StandIn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
