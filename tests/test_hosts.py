"""Codex CLI and Gemini CLI behind the host seam, with real processes standing in for the clients
(the end-to-end tests run the real ones): a Codex thread is proved only by the writer lock its host
process holds, never by "the nearest codex process"; a Gemini session only by attend's own record
for the gemini process, which a process of another session cannot rewrite."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from attend import identity
from attend.errors import IdentityError
from attend.hosts import codex, gemini
from tests.support import T1, T2, World, as_codex

WHO = [
    sys.executable,
    "-c",
    "import json, os; from attend import identity; "
    "w = identity.resolve(payload_sid=os.environ.get('CLAIM') or None); print(json.dumps([w.kind, w.id, w.host]))",
]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path)
    yield w
    w.close()


def resolved(out: subprocess.CompletedProcess[str]) -> list[str | None]:
    assert out.returncode == 0, out.stderr
    result: list[str | None] = json.loads(out.stdout)
    return result


def test_a_codex_thread_is_the_one_its_host_process_holds_and_the_environment_names(world: World) -> None:
    assert resolved(as_codex(world, [T1, T2], WHO, {"CODEX_THREAD_ID": T2})) == ["agent", T2, "codex"]


def test_a_daemon_hosting_many_threads_is_never_taken_for_one_without_a_claim(world: World) -> None:
    out = as_codex(world, [T1, T2], WHO, {})
    assert out.returncode != 0 and "inside codex" in out.stderr and "no session of it is proved" in out.stderr, out


def test_a_thread_the_codex_process_does_not_hold_is_refused_not_the_human(world: World) -> None:
    out = as_codex(world, [T1], WHO, {"CODEX_THREAD_ID": T2})
    assert out.returncode != 0 and "CODEX_THREAD_ID" in out.stderr, out
    out = as_codex(world, [T1], WHO, {"CLAIM": T2})  # a hook payload, or an MCP call's threadId
    assert out.returncode != 0 and "not one of them" in out.stderr, out


def test_a_claim_is_accepted_only_for_a_thread_the_host_holds(world: World) -> None:
    assert resolved(as_codex(world, [T1, T2], WHO, {"CLAIM": T1})) == ["agent", T1, "codex"]


def test_the_variable_a_command_sets_for_itself_does_not_switch_threads(world: World) -> None:
    """The id comes from the environment of the process codex started, read from /proc: a child that
    sets CODEX_THREAD_ID to the other thread (held by the same daemon) is still the first thread."""
    inner = ["env", f"CODEX_THREAD_ID={T2}", *WHO]
    shell = ["/bin/sh", "-c", shlex.join(inner) + "; true"]
    assert resolved(as_codex(world, [T1, T2], shell, {"CODEX_THREAD_ID": T1})) == ["agent", T1, "codex"]


def test_codex_identity_does_not_stand_for_a_process(world: World) -> None:
    """One codex process may host many threads: the identity carries no pid (no /clear move by pid)."""
    code = "import json; from attend import identity as i; w = i.resolve(); print(json.dumps([w.claude_pid, w.host]))"
    out = as_codex(world, [T1], [sys.executable, "-c", code], {"CODEX_THREAD_ID": T1})
    assert json.loads(out.stdout) == [None, "codex"], out.stderr


# ---------------------------------------------------------------------- Gemini

# A process that looks like the Gemini CLI to /proc (argv[0] node, the bundle named after it) and
# runs the command after `--` as its child.
GEMINI = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)  # gemini"


def as_gemini(world: World, argv: list[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    node = world.tmp / "bin" / "node"  # the interpreter under the name the Gemini CLI runs as
    if not node.exists():
        node.parent.mkdir(exist_ok=True)
        node.symlink_to(os.path.realpath(sys.executable))
    return subprocess.run(
        [str(node), "-c", GEMINI, *argv],
        env=world.env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


HOOK = [sys.executable, "-m", "attend", "hook", "gemini-start"]


def test_the_session_start_record_names_the_gemini_process_and_a_clear_rewrites_it(world: World) -> None:
    code = (
        "import os, subprocess, sys\n"
        "from attend.hosts import gemini\n"
        "gemini.write_record(os.getppid(), 'g-one', '/tmp', os.environ)\n"  # SessionStart: startup
        "gemini.write_record(os.getppid(), 'g-two', '/tmp', os.environ)\n"  # SessionStart: clear
        f"print(subprocess.run({WHO!r}, capture_output=True, text=True).stdout, end='')\n"
    )
    assert resolved(as_gemini(world, [sys.executable, "-c", code])) == ["agent", "g-two", "gemini"]


def test_a_session_start_hook_run_by_a_tool_is_refused(world: World) -> None:
    """A shell tool's command is the gemini process's grandchild (under bash): it cannot record a session."""
    hook = " ".join(HOOK)
    out = as_gemini(world, ["bash", "-c", f'echo \'{{"session_id": "g-x"}}\' | {hook}; echo done'])
    assert "is not a Gemini CLI process" in out.stderr and not (world.home / ".gemini" / "attend").exists(), out


def test_a_session_start_cannot_claim_a_live_session_of_another_process(world: World) -> None:
    victim = world.session("victim")
    out = as_gemini(world, HOOK, stdin=json.dumps({"session_id": victim.session_id, "cwd": "/"}))
    assert f"session {victim.session_id} is held by the live process {victim.pid}" in out.stderr, out.stderr
    records = world.home / ".gemini" / "attend" / "sessions"
    assert not records.exists() or not [p for p in records.iterdir() if victim.session_id in p.read_text()]


def test_a_gemini_tool_resolves_through_the_record_and_is_never_the_human(world: World) -> None:
    code = (
        "import json, os, subprocess, sys\n"
        "from attend.hosts import gemini\n"
        "gemini.write_record(os.getppid(), 'g-three', '/tmp', os.environ)\n"  # as the SessionStart hook
        f"print(subprocess.run({WHO!r}, capture_output=True, text=True).stdout, end='')\n"
    )
    out = as_gemini(world, [sys.executable, "-c", code])
    assert resolved(out) == ["agent", "g-three", "gemini"]
    # Without a record (ACP mode fires no SessionStart), GEMINI_CLI=1 is never the human.
    bare = subprocess.run([*WHO], env={**world.env, "GEMINI_CLI": "1"}, capture_output=True, text=True, timeout=60)
    assert bare.returncode != 0 and "GEMINI_CLI" in bare.stderr, bare


def test_the_turn_end_form_is_each_clients_own() -> None:
    assert codex.HOST.turn_end("R") == {"decision": "block", "reason": "R"}
    assert gemini.HOST.turn_end("R") == {"decision": "deny", "reason": "R"}
    assert identity.HOSTS[0].turn_end("R") == {"decision": "block", "reason": "R"}


def test_a_gemini_record_of_an_ended_process_proves_nothing(world: World) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    folder = world.home / ".gemini" / "attend" / "sessions"
    folder.mkdir(parents=True)
    (folder / f"{proc.pid}.json").write_text(json.dumps({"pid": proc.pid, "sessionId": "g-dead", "procStart": "1"}))
    assert gemini.HOST.find(os.getpid(), world.env) is None
    with pytest.raises(IdentityError):
        identity.resolve(env={**world.env, "GEMINI_CLI": "1"})


# ---------------------------------------------------------------------- the client, where a human looks


def test_the_client_header_carries_the_senders_client_and_refuses_anything_but_a_token() -> None:
    from attend.domain.core import envelope

    sig = envelope.Signal("", "Kai", "agent", T1, "fixture-human", "h-fixture-human", "/p", "hi", 0.0, client="codex")
    named = sig.with_id("1796229836.M351515P18181Q0Rf6ac385b.vm", 0.0)
    data = envelope.render(named)
    assert b"\nClient: codex\n" in data
    assert envelope.parse(data).client == "codex"
    forged = data.replace(b"Client: codex", b"Client: Codex CLI")
    with pytest.raises(envelope.EnvelopeError):
        envelope.parse(forged)
    human = envelope.render(named._replace(client=None))
    assert b"Client:" not in human and envelope.parse(human).client is None


def test_an_empty_drain_of_a_codex_thread_is_decided_on_the_fast_path(world: World) -> None:
    """The turn-end drain's common case (nothing pending) costs about an interpreter start for a Codex
    thread too: the fast path proves the payload's thread by its writer lock, not only Claude's record."""
    from attend.domain.sessions import sessions
    from attend.identity import Identity

    sessions.enroll(world.spool, Identity("agent", T1, str(world.project("p")), "ancestry", True, host="codex"), "join")
    payload = json.dumps({"session_id": T1, "stop_hook_active": False})
    code = (
        "import os, sys\n"
        "from attend.conduits import fastdrain\n"
        "print(fastdrain.decide(sys.argv[1].encode(), os.environ))"
    )
    mine = as_codex(world, [T1], [sys.executable, "-c", code, payload], {})
    assert mine.stdout.strip() == "0", mine.stderr  # decided: nothing to show
    other = as_codex(world, [T2], [sys.executable, "-c", code, payload], {})
    assert other.stdout.strip() == "None", other.stderr  # another thread's process: the full path decides


def test_attend_mcp_under_codex_acts_only_as_a_thread_its_codex_process_holds(world: World) -> None:
    """``attend mcp`` gets no id in its environment under Codex: each ``tools/call`` names the thread in
    ``_meta.threadId``, checked against the writer locks of the codex process above the server."""
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "codex-mcp-client", "version": "0"},
    }
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *(
            {
                "jsonrpc": "2.0",
                "id": n,
                "method": "tools/call",
                "params": {"name": "join", "arguments": {"name": "crew"}, "_meta": {"threadId": thread}},
            }
            for n, thread in ((2, T1), (3, T2))
        ),
    ]
    stdin = "".join(json.dumps(f) + "\n" for f in frames)
    out = as_codex(world, [T1], [sys.executable, "-m", "attend", "mcp"], {}, stdin=stdin)
    answers = {m.get("id"): m for m in map(json.loads, out.stdout.splitlines()) if "id" in m}
    own, other = answers[2]["result"], answers[3]["result"]
    assert not own.get("isError") and own["structuredContent"]["enrolled"], own
    assert (world.spool_root / "sessions" / T1 / "enrolled").is_file()  # joined as the thread it holds
    assert other.get("isError") and "not one of them" in other["content"][0]["text"], other
    assert not (world.spool_root / "sessions" / T2).exists(), "nothing was written for the other thread"


def test_a_gemini_clear_moves_the_session_to_the_new_id(world: World) -> None:
    """``/clear`` fires SessionStart again with a new id for the same gemini process: the record is
    rewritten, and the spool's /clear move follows by that process, as for Claude Code."""
    attend = [sys.executable, "-m", "attend"]
    code = (
        "import os, subprocess, sys\n"
        "from attend.hosts import gemini\n"
        "gemini.write_record(os.getppid(), 'g-before', '/tmp', os.environ)\n"
        f"subprocess.run({[*attend, 'join', 'crew']!r}, check=True, capture_output=True)\n"
        "gemini.write_record(os.getppid(), 'g-after', '/tmp', os.environ)\n"
        f"subprocess.run({[*attend, 'join', 'other']!r}, check=True, capture_output=True)\n"
    )
    out = as_gemini(world, [sys.executable, "-c", code])
    assert out.returncode == 0, out.stderr
    sessions_dir = world.spool_root / "sessions"
    assert (sessions_dir / "g-before" / "moved-to").read_text().strip() == "g-after"
    assert (sessions_dir / "g-after" / "enrolled").is_file() and not (sessions_dir / "g-before" / "enrolled").exists()
