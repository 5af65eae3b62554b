"""Each host says where a session's transcript is (``Host.transcript``), and ``peers`` shows a Codex or
Gemini session working or waiting by it, as it shows a Claude Code session. Real processes stand in
for the clients (a process named ``codex`` holding its thread's writer lock; a ``node`` process that
is the Gemini CLI to /proc, with attend's SessionStart record); the files are where and as the real
clients write them: Codex's rollout ``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl``,
Gemini CLI 0.61's chat ``~/.gemini/tmp/<project>/chats/session-<minute>-<id8>.jsonl``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from attend.hosts import codex
from tests.support import ATTEND, World, as_codex

STALE = 600  # seconds: a transcript this old is a session waiting, not working


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path)
    yield w
    w.close()


def age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def peers_of(out: subprocess.CompletedProcess[str]) -> dict[str, dict[str, object]]:
    assert out.returncode == 0, out.stderr
    return {p["session_id"]: p for p in json.loads(out.stdout)["peers"]}


# ---------------------------------------------------------------------- Codex


def new_thread() -> str:
    """A thread id as Codex makes one: a UUIDv7, whose first 48 bits are the moment in milliseconds."""
    digits = f"{int(time.time() * 1000):012x}7{uuid.uuid4().hex[13:]}"
    digits = digits[:16] + "8" + digits[17:]  # the variant
    return str(uuid.UUID(digits))


def rollout(world: World, thread: str, cwd: Path) -> Path:
    """The thread's rollout, where Codex writes it: its local day's folder, named by its local time."""
    now = time.localtime()
    folder = world.home / ".codex" / "sessions" / time.strftime("%Y/%m/%d", now)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"rollout-{time.strftime('%Y-%m-%dT%H-%M-%S', now)}-{thread}.jsonl"
    meta = {"type": "session_meta", "payload": {"id": thread, "cwd": str(cwd), "originator": "codex_exec"}}
    path.write_text(json.dumps(meta) + "\n")
    return path


def codex_thread_joins(world: World, thread: str) -> None:
    out = as_codex(world, [thread], [ATTEND, "join", "crew"], {"CODEX_THREAD_ID": thread})
    assert out.returncode == 0, out.stderr
    stop = json.dumps({"session_id": thread, "hook_event_name": "Stop", "stop_hook_active": False})
    drained = as_codex(world, [thread], [ATTEND, "inbox", "--drain", "--format", "hook"], {}, stdin=stop)
    assert drained.returncode == 0, drained.stderr  # the turn end: a fresh heartbeat keeps it live


def test_peers_shows_a_codex_thread_working_while_its_rollout_is_written_and_waiting_after(world: World) -> None:
    thread = new_thread()
    path = rollout(world, thread, world.project("proj"))
    codex_thread_joins(world, thread)
    peer = peers_of(world.attend("peers", "--json"))[thread]
    assert (peer["client"], peer["status"]) == ("codex", "working"), peer
    age(path, STALE)
    peer = peers_of(world.attend("peers", "--json"))[thread]
    assert peer["status"] == "waiting", peer


def test_a_codex_thread_without_a_rollout_is_unknown_not_waiting(world: World) -> None:
    thread = new_thread()
    codex_thread_joins(world, thread)
    assert peers_of(world.attend("peers", "--json"))[thread]["status"] == "unknown"


def test_a_rollout_of_another_thread_in_the_days_folder_is_not_this_threads(world: World) -> None:
    thread, other = new_thread(), new_thread()
    rollout(world, other, world.project("proj"))
    assert codex.HOST.transcript(thread, None, world.env) is None
    assert codex.HOST.transcript(other, None, world.env) is not None


# A process named `codex` that holds a rollout file open (as the thread's host process does), outside
# the dated folders, until its stdin closes.
HOLDER = r"""
import ctypes, sys
ctypes.CDLL(None).prctl(15, b"codex", 0, 0, 0)
held = open(sys.argv[1], "a")
print("ready", flush=True)
sys.stdin.read()
"""


def test_the_rollout_a_codex_process_holds_open_is_its_threads_transcript(world: World, tmp_path: Path) -> None:
    thread = new_thread()
    dated = rollout(world, thread, world.project("proj"))
    held = tmp_path / "elsewhere" / f"rollout-2026-01-01T00-00-00-{thread}.jsonl"
    held.parent.mkdir()
    held.write_text("{}\n")
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(held)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        assert codex.HOST.transcript(thread, None, world.env, proc.pid) == str(held)
        assert codex.HOST.transcript(thread, None, world.env) == str(dated)  # no process: the dated folder
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=60)


# ---------------------------------------------------------------------- Gemini

# A process that looks like the Gemini CLI to /proc (argv[0] node, "gemini" among its first arguments)
# and runs the command after it as its child.
GEMINI = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)  # gemini"

# The gemini process's child: records the session for its parent as attend's SessionStart hook does,
# writes the chat as Gemini CLI 0.61 does (the project's registry, then tmp/<project>/chats/), and runs
# the command after its arguments.
SESSION = r"""
import json, os, subprocess, sys
from attend.hosts import gemini
sid, cwd, chat_for, stale = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
gemini.write_record(os.getppid(), sid, cwd, os.environ)
home = os.path.join(os.environ["HOME"], ".gemini")
with open(os.path.join(home, "projects.json"), "w") as f:
    json.dump({"projects": {cwd: "proj"}}, f)
chats = os.path.join(home, "tmp", "proj", "chats")
os.makedirs(chats, exist_ok=True)
chat = os.path.join(chats, f"session-2026-01-01T00-00-{sid[:8]}.jsonl")
with open(chat, "w") as f:
    f.write(json.dumps({"sessionId": chat_for, "projectHash": "0" * 64, "kind": "main"}) + "\n")
os.utime(chat, (os.path.getmtime(chat) - stale,) * 2)
sys.exit(subprocess.run(sys.argv[5:]).returncode)
"""


def gemini_peers(world: World, sid: str, chat_for: str, stale: float = 0) -> dict[str, object]:
    """``attend peers`` run from inside a Gemini session ``sid`` whose chat file names ``chat_for``."""
    node = world.tmp / "bin" / "node"  # the interpreter under the name the Gemini CLI runs as
    if not node.exists():
        node.parent.mkdir(exist_ok=True)
        node.symlink_to(os.path.realpath(sys.executable))
    cwd = str(world.project("proj"))
    session = [sys.executable, "-c", SESSION, sid, cwd, chat_for, str(stale), ATTEND, "peers", "--json"]
    out = subprocess.run(
        [str(node), "-c", GEMINI, *session], env=world.env, capture_output=True, text=True, timeout=60, cwd=cwd
    )
    return peers_of(out)[sid]


def test_peers_shows_a_gemini_session_working_by_its_chat_file_and_waiting_when_it_is_old(world: World) -> None:
    sid = str(uuid.uuid4())
    peer = gemini_peers(world, sid, sid)
    assert (peer["client"], peer["status"]) == ("gemini", "working"), peer
    assert gemini_peers(world, sid, sid, stale=STALE)["status"] == "waiting"


def test_a_gemini_chat_whose_first_line_names_another_session_is_not_this_ones(world: World) -> None:
    """The file name carries only the id's first 8 characters: the chat's own first line decides."""
    sid = str(uuid.uuid4())
    other = sid[:8] + str(uuid.uuid4())[8:]
    assert gemini_peers(world, sid, other)["status"] == "unknown"


def test_a_project_registry_naming_a_folder_outside_geminis_tmp_leads_to_no_transcript(world: World) -> None:
    from attend.hosts import gemini

    sid, cwd = str(uuid.uuid4()), str(world.project("proj"))
    home = world.home / ".gemini"
    name = f"session-2026-01-01T00-00-{sid[:8]}.jsonl"
    for folder in (home / "outside" / "chats", home / "tmp" / "proj" / "chats"):  # tmp/../outside, tmp/proj
        folder.mkdir(parents=True)
        (folder / name).write_text(json.dumps({"sessionId": sid}) + "\n")
    (home / "projects.json").write_text(json.dumps({"projects": {cwd: "../outside"}}))
    assert gemini.HOST.transcript(sid, cwd, world.env) is None
    (home / "projects.json").write_text(json.dumps({"projects": {cwd: "proj"}}))
    assert gemini.HOST.transcript(sid, cwd, world.env) == str(home / "tmp" / "proj" / "chats" / name)
