"""The process of a stand-in session (attend.testing.standin): it reads one JSON request per line on
stdin and runs each as its child. Standard library only, run by path with ``python -S``, so a stand-in
starts in the time of a bare interpreter."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any


def _host() -> None:
    children: list[subprocess.Popen[bytes]] = []
    running: list[threading.Thread] = []
    answering = threading.Lock()

    def answer(rid: object, reply: dict[str, object]) -> None:
        with answering:
            sys.stdout.write(json.dumps({"id": rid, **reply}) + "\n")
            sys.stdout.flush()

    for line in sys.stdin:
        children = [c for c in children if c.poll() is None]  # reap finished background children
        running = [t for t in running if t.is_alive()]
        request = json.loads(line)
        if request.get("argv") is None:
            break
        env = dict(os.environ)
        env.update(request.get("env") or {})
        for key in request.get("unset") or []:
            env.pop(key, None)
        rid = request.get("id")
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
            answer(rid, {"rc": 0, "stdout": str(child.pid), "stderr": ""})
            continue
        thread = threading.Thread(target=_serve, args=(request, env, lambda reply, rid=rid: answer(rid, reply)))
        thread.start()
        running.append(thread)
    for thread in running:  # the host lives until what it runs has finished, as before
        thread.join()


def _serve(request: dict[str, Any], env: dict[str, str], reply: Callable[[dict[str, object]], None]) -> None:
    """Run one foreground request to its end and answer it."""
    try:
        proc = subprocess.run(
            request["argv"],
            input=(request.get("stdin") or "").encode(),
            capture_output=True,
            env=env,
            cwd=request.get("cwd"),
            timeout=request.get("timeout", 120),
        )
        reply(
            {
                "rc": proc.returncode,
                "stdout": proc.stdout.decode("utf-8", "replace"),
                "stderr": proc.stderr.decode("utf-8", "replace"),
            }
        )
    except (OSError, subprocess.SubprocessError) as e:
        reply({"rc": 127, "stdout": "", "stderr": str(e)})


if __name__ == "__main__":
    _host()
