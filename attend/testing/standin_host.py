"""The process of a stand-in session (attend.testing.standin): it reads one request at a time on stdin
and runs each as its child. Run by path with ``python -S`` and on built-in modules alone (no json,
subprocess or threading: their imports were most of its start), so a stand-in starts in the time of
a bare interpreter; hundreds start in a test run.

A message either way is a 4-byte big-endian length, then a ``marshal``-encoded dict (the two ends are
the same interpreter). Requests: ``{"id", "argv", "env", "unset", "cwd", "stdin", "timeout"}``, or a
background child's ``{"id", "argv", "env", "cwd", "background": True, "stdout_path"}``; ``{"argv":
None}`` ends the host. Answers: ``{"id", "rc", "stdout", "stderr"}`` (a background child's pid is its
``stdout``)."""

from __future__ import annotations

import _thread
import marshal
import os
import select
import sys
import time

TYPE_CHECKING = False  # collections.abc costs an import here; mypy reads this as true
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

SIGPIPE, SIGXFSZ, SIGKILL = 13, 25, 9  # Linux's numbers: the signal module imports enum


def _host() -> None:
    write = _thread.allocate_lock()  # one answer at a time on stdout
    spawn = _thread.allocate_lock()  # a spawn borrows the host's cwd: one at a time
    running: list[_thread.LockType] = []  # each foreground request's lock, held until it has answered
    background: list[int] = []

    def answer(rid: object, reply: dict[str, object]) -> None:
        frame = marshal.dumps({"id": rid, **reply})
        with write:
            _write_all(1, len(frame).to_bytes(4, "big") + frame)

    while True:
        request = _read_message(0)
        if request is None or request.get("argv") is None:
            break
        background = [pid for pid in background if not _reaped(pid)]
        env = dict(os.environ)
        env.update(request.get("env") or {})
        for key in request.get("unset") or []:
            env.pop(key, None)
        rid = request.get("id")
        if request.get("background"):
            # A long-running child (e.g. `attend run` under a stand-in Monitor): output to a file.
            opened: list[int] = []
            try:
                opened.append(os.open(os.devnull, os.O_RDONLY))
                opened.append(os.open(request["stdout_path"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
                pid = _spawn(spawn, request["argv"], env, request.get("cwd"), (opened[0], opened[1], opened[1]))
            except OSError as e:
                answer(rid, {"rc": 127, "stdout": "", "stderr": str(e)})
                continue
            finally:
                for fd in opened:
                    os.close(fd)
            background.append(pid)
            answer(rid, {"rc": 0, "stdout": str(pid), "stderr": ""})
            continue
        done = _thread.allocate_lock()
        done.acquire()
        running.append(done)
        _thread.start_new_thread(_serve, (request, env, spawn, answer, done))
    for done in running:  # the host lives until what it runs in the foreground has finished
        done.acquire()


def _serve(
    request: dict[str, Any],
    env: dict[str, str],
    spawn: _thread.LockType,
    answer: Callable[[object, dict[str, object]], None],
    done: _thread.LockType,
) -> None:
    """Run one foreground request to its end and answer it (as subprocess.run with capture_output)."""
    try:
        answer(request.get("id"), _run(request, env, spawn))
    except OSError as e:
        answer(request.get("id"), {"rc": 127, "stdout": "", "stderr": str(e)})
    finally:
        done.release()


def _run(request: dict[str, Any], env: dict[str, str], spawn: _thread.LockType) -> dict[str, object]:
    stdin_r, stdin_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        pid = _spawn(spawn, request["argv"], env, request.get("cwd"), (stdin_r, out_w, err_w))
    finally:
        for fd in (stdin_r, out_w, err_w):
            os.close(fd)
    data = (request.get("stdin") or "").encode()
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    poll = select.poll()
    for fd in chunks:
        poll.register(fd, select.POLLIN)
    live = set(chunks)
    if data:
        os.set_blocking(stdin_w, False)  # a full pipe takes what it can, and the outputs are read meanwhile
        poll.register(stdin_w, select.POLLOUT)
        live.add(stdin_w)
    else:
        os.close(stdin_w)
    timeout = float(request.get("timeout", 120))
    deadline = time.monotonic() + timeout
    try:
        while live:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, SIGKILL)
                os.waitpid(pid, 0)
                return {"rc": 127, "stdout": "", "stderr": f"timed out after {timeout:g} seconds"}
            for fd, _event in poll.poll(left * 1000):
                if fd == stdin_w:
                    try:
                        data = data[os.write(fd, data[:65536]) :]
                    except BlockingIOError:
                        continue
                    except BrokenPipeError:
                        data = b""
                    chunk = b"x" if data else b""
                else:
                    chunk = os.read(fd, 65536)
                    chunks[fd].append(chunk)
                if not chunk:  # an output's end, or all of stdin written
                    poll.unregister(fd)
                    os.close(fd)
                    live.discard(fd)
    finally:
        for fd in live:
            os.close(fd)
    status = os.waitpid(pid, 0)[1]
    return {
        "rc": os.waitstatus_to_exitcode(status),
        "stdout": b"".join(chunks[out_r]).decode("utf-8", "replace"),
        "stderr": b"".join(chunks[err_r]).decode("utf-8", "replace"),
    }


def _spawn(spawn: _thread.LockType, argv: list[str], env: dict[str, str], cwd: str | None, fds: tuple[int, ...]) -> int:
    """Start argv with ``fds`` as its stdin, stdout and stderr, in ``cwd``, in a session of its own
    with no terminal, as every client starts its shell tool: posix_spawn has no cwd of its own, so the
    host moves there for the spawn, under the lock. SIGPIPE and SIGXFSZ go back to their defaults, as
    subprocess's restore_signals does (python ignores them)."""
    actions = [(os.POSIX_SPAWN_DUP2, fd, n) for n, fd in enumerate(fds)]
    with spawn:
        here = os.getcwd()
        if cwd:
            os.chdir(cwd)
        try:
            return os.posix_spawnp(argv[0], argv, env, file_actions=actions, setsigdef=(SIGPIPE, SIGXFSZ), setsid=True)
        finally:
            os.chdir(here)


def _reaped(pid: int) -> bool:
    try:
        return os.waitpid(pid, os.WNOHANG)[0] != 0
    except ChildProcessError:
        return True


def _read_message(fd: int) -> dict[str, Any] | None:
    head = _read_exact(fd, 4)
    if head is None:
        return None
    body = _read_exact(fd, int.from_bytes(head, "big"))
    return None if body is None else marshal.loads(body)


def _read_exact(fd: int, n: int) -> bytes | None:
    parts: list[bytes] = []
    left = n
    while left:
        chunk = os.read(fd, left)
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def _write_all(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data) :]


if __name__ == "__main__":
    _host()
    sys.exit(0)
