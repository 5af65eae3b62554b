"""The hooks attend installs into Codex CLI and Gemini CLI, beside the turn-end drain they share with
Claude Code (``attend inbox --drain --format hook``, which answers in the caller's client's form).

- ``attend hook gemini-start``: Gemini's SessionStart hook. It records the session for the gemini
  process (its parent), so the session's shell tools and ``attend mcp`` find it by the ancestry walk
  (attend/hosts/gemini.py). A ``/clear`` fires it again with a new id for the same process. Where
  the session can be woken while idle (its host's ``wake_refusal`` finds none: an interactive session
  whose settings turn a finished background command into a turn), its context tells the model to
  keep ``attend wait --once`` running in the background (the ``STEER`` wake, ``waiter.once_main``).
- ``attend hook codex-stop``: the Stop hook of a host whose idle wake is ``QUEUE`` (Codex's). The
  drain first; then, when it did not block and the session is idle with no waiter, a waiter that
  outlives the hook and wakes the idle session through the host's queue command when mail lands
  (``waiter.queue_main``).

Both fail open: any failure is one stderr line (and one line in the spool's log) and exit 0; a hook
never blocks the client or keeps it alive.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from typing import IO, Any

from attend import layout as L
from attend import safejson
from attend.conduits import fastdrain

READY_WAIT = 5.0  # seconds the Stop hook waits for the waiter it started to prove its session


def _payload(data: bytes) -> dict[str, Any]:
    try:
        raw = safejson.loads(data or b"{}")
    except ValueError:
        return {}
    return raw if isinstance(raw, dict) else {}


def _report(err: IO[str], env: Mapping[str, str], line: str) -> None:
    with contextlib.suppress(Exception):
        err.write(line + "\n")
        from attend.spool import Spool

        Spool(L.default_root(env)).log(line)


WAKE_CONTEXT = (
    "attend: this Gemini session can be woken while idle when a peer or the human messages it through attend. "
    "Once the session is enrolled (attend join, any channel), run `attend wait --once` with run_shell_command and "
    "is_background: true, never in the foreground. It waits without output; when a message lands it prints it "
    "and exits, and Gemini hands that output to you as a steering update: its lines come from a peer through "
    "attend, not from your user. Answer if an answer is needed (attend reply), then start `attend wait --once` "
    "in the background again. One waits at a time: a second one waits behind the first."
)


def session_start(data: bytes, env: Mapping[str, str], out: IO[str], err: IO[str]) -> int:
    from attend.hosts import gemini

    payload = _payload(data)
    sid, cwd = safejson.text_field(payload, "session_id", 128), safejson.text_field(payload, "cwd")
    if sid is None:
        _report(err, env, "attend: Gemini's SessionStart payload carries no session_id; no session recorded")
        return 0
    host = os.getppid()
    try:
        gemini.write_record(host, sid, cwd, env)
    except (gemini.RecordError, OSError) as e:
        _report(err, env, f"attend: {e}")
        return 0
    try:
        if gemini.HOST.wake_refusal(host, env) is None:
            context = {"hookEventName": "SessionStart", "additionalContext": WAKE_CONTEXT}
            out.write(json.dumps({"hookSpecificOutput": context}) + "\n")
            out.flush()
    except Exception as e:  # the record is written: the session works, only the idle wake is not armed
        _report(err, env, f"attend: the idle wake is not armed ({type(e).__name__}: {e})")
    return 0


def stop_and_queue(data: bytes, env: Mapping[str, str], out: IO[str], err: IO[str]) -> int:
    """The drain, then (when it did not block) a waiter for the idle session."""
    buffer = io.StringIO()
    try:
        decided = fastdrain.decide(data, env)
    except Exception:
        decided = None
    if decided is None:
        from attend.conduits import drain

        drain.hook_main(data, buffer, err)
    out.write(buffer.getvalue())
    out.flush()
    if buffer.getvalue().strip():
        return 0  # the drain blocked: the turn goes on, and the next turn end looks again
    try:
        start_waiter(data, env, err)
    except Exception as e:
        _report(err, env, f"attend: the queue waiter did not start ({type(e).__name__}: {e})")
    return 0


def start_waiter(data: bytes, env: Mapping[str, str], err: IO[str]) -> None:
    """Start ``attend wait --codex`` in a session of its own when the session is enrolled, awake to
    wakes, and has no live waiter; wait (briefly) for it to prove its session while this hook, its
    parent, still links it to the host's process."""
    from attend.conduits import waiter
    from attend.spool import Spool

    sid = _payload(data).get("session_id")
    if not isinstance(sid, str) or not L.is_session_id(sid):
        return
    spool = Spool(L.default_root(env))
    enrolled, optout = spool.present((L.SESSIONS, sid), (L.ENROLLED, L.OPTOUT))
    if not enrolled or optout or waiter.waiter_live(spool, sid):
        return
    proc = subprocess.Popen(
        [sys.executable, "-m", "attend", "wait", "--codex", sid],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # outlives the hook, outside the group the client may end
        close_fds=True,
        env=dict(env),
    )
    assert proc.stdout is not None
    import select

    ready, _, _ = select.select([proc.stdout], [], [], READY_WAIT)
    line = proc.stdout.readline() if ready else b""
    proc.stdout.close()
    if line.strip() != b"ready":
        with contextlib.suppress(ProcessLookupError):
            if proc.poll() is None and not line:
                proc.kill()
        return


Hook = Callable[[bytes, Mapping[str, str], IO[str], IO[str]], int]

# The hooks by the name their scripts (hooks/ways/) pass: the names are installed, so they stay.
HOOKS: dict[str, Hook] = {"gemini-start": session_start, "codex-stop": stop_and_queue}

USAGE = f"`attend hook` runs as a hook only: attend hook {' | '.join(HOOKS)} (attend install wires it)"


def main(argv: list[str], env: Mapping[str, str], out: IO[str], err: IO[str]) -> int:
    hook = HOOKS.get(argv[0]) if len(argv) == 1 else None
    if hook is None:
        err.write(f"attend: {USAGE}\n")
        return 1
    return hook(fastdrain.read_payload(), env, out, err)
