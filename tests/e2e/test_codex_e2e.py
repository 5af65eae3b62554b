"""The real Codex CLI (``codex exec``, pinned) against the scripted Responses API: ``attend install``
alone wires the session (MCP server, Stop hook, hook trust); the shell tool and ``attend mcp`` act as
the thread; a message the human sends reaches the model at its turn end exactly once, framed as a
peer's; and a process that claims another thread is refused."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.fake_api import Reply, Request, done
from tests.e2e.fake_codex import FakeResponses, latest_output, mcp, shell, thread_id_of
from tests.e2e.harness import ATTEND_BIN
from tests.e2e.hosts import HostWorld, codex_bin, install
from tests.support import enroll, maildir

ATTEND = ATTEND_BIN  # the shell tool runs `bash -lc`: a login shell resets PATH


@pytest.fixture
def hw(tmp_path: Path) -> Iterator[HostWorld]:
    codex_bin()
    w = HostWorld(tmp_path)
    yield w
    w.close()


def test_codex_install_alone_wires_mcp_send_and_turn_end_delivery_exactly_once(hw: HostWorld) -> None:
    api = FakeResponses([])
    hw.codex_setup(api)
    said = install(hw, "codex")
    assert "trusted attend's Codex hook" in said, said
    seen: dict[str, str] = {}

    def joined(req: Request) -> Reply:
        out = latest_output(req)
        assert "Process exited with code 0" in out and "joined" in out.lower(), out
        seen["thread"] = thread_id_of(req) or ""
        hw.human_send("--to", seen["thread"], "hello codex, from the human")
        return mcp("attend", "send", {"message": "hi human, from codex", "to": "fixture-human"})

    def sent(req: Request) -> Reply:
        out = latest_output(req)
        assert out.strip(), json.dumps(req.body["input"][-2:])[:3000]
        assert "isError" not in out and "failed" not in out.lower(), out
        result = json.loads(out.split("Output:", 1)[-1])
        assert result.get("id"), result
        return done("First answer: done.")

    def woken(req: Request) -> Reply:
        prompts = api.hook_prompts()
        assert len(prompts) == 1 and "hello codex, from the human" in prompts[0], prompts
        return mcp("attend", "inbox", {})

    def listed(req: Request) -> Reply:
        out = latest_output(req)
        assert "isError" not in out, out
        result = json.loads(out.split("Output:", 1)[-1])
        got = [m for m in result["messages"] if m["body"] == "hello codex, from the human"]
        assert [(m["from_kind"], m["from_id"], m["client"]) for m in got] == [("human", "fixture-human", None)], result
        seen["inbox"] = json.dumps(result)
        return done("Second answer.")

    api.script = [shell(f"{ATTEND} join e2e"), joined, sent, woken, listed]
    run = hw.codex([], api=api)
    assert run.rc == 0 and not api.errors, run.explain()
    thread = seen["thread"]
    # Exactly once: one block, and nothing more at the second turn end.
    assert len(api.hook_prompts()) == 1, api.user_texts()
    assert "inbox" in seen, "the MCP inbox result was read"
    assert api.hook_prompts()[0].startswith("[attend] 1 message(s) from humans, not typed at your prompt:"), (
        api.hook_prompts()
    )
    # The MCP send went out as the thread, through the identity rule.
    sent_by = [s for s in hw.signals() if s.body == "hi human, from codex"]
    assert [s.from_id for s in sent_by] == [thread], [(s.from_id, s.body) for s in hw.signals()]
    assert [s.client for s in sent_by] == ["codex"]  # the Client header, from the resolved identity
    # Where the human looks: peers names the client; the inbox and the record carry it.
    peers = json.loads(hw.attend("peers", "--json").stdout)["peers"]
    assert [(p["session_id"], p["client"]) for p in peers] == [(thread, "codex")], peers
    inbox = json.loads(hw.attend("inbox", "--json").stdout)
    assert [m["client"] for m in inbox["unread"] + inbox["messages"] if m["body"] == "hi human, from codex"], inbox


def test_codex_shell_tool_cannot_act_as_another_session(hw: HostWorld) -> None:
    """A live, enrolled Claude session with mail waiting is the victim: the Codex thread's shell tool
    offers its id by each variable and by a hook payload, and is never taken for it."""
    api = FakeResponses([])
    hw.codex_setup(api)
    install(hw, "codex")
    victim = hw.session("victim")
    enroll(hw, victim)
    hw.human_send("--to", victim.session_id, "for the victim only")
    assert maildir(hw, victim.session_id, "new"), "the victim's mail is waiting"
    outputs: list[str] = []

    def record(then: Reply):  # type: ignore[no-untyped-def]
        def step(req: Request) -> Reply:
            outputs.append(latest_output(req).split("Output:\n", 1)[-1])
            return then

        return step

    payload = json.dumps({"session_id": victim.session_id, "stop_hook_active": False})
    api.script = [
        shell(f"{ATTEND} whoami --json"),
        record(shell(f"CLAUDE_CODE_SESSION_ID={victim.session_id} CLAUDECODE=1 {ATTEND} whoami --json")),
        record(shell(f"CODEX_THREAD_ID={victim.session_id} {ATTEND} whoami --json")),
        record(shell(f"echo '{payload}' | {ATTEND} inbox --drain --format hook; echo rc=$?")),
        record(done("done")),
    ]
    run = hw.codex([], api=api)
    assert run.rc == 0 and not api.errors, run.explain()
    thread = thread_id_of(api.turns[0])
    assert len(outputs) == 4, outputs
    mine = json.loads(outputs[0])
    assert (mine["session_id"], mine["host"]) == (thread, "codex"), mine
    assert "holds" in mine["evidence"] and "thread-writer-locks" in mine["evidence"], mine
    # One stderr line besides (the ignored variable), before or after the document.
    as_claude = json.loads(next(line for line in outputs[1].splitlines() if line.startswith("{")))
    assert as_claude.get("session_id") == thread, as_claude  # the ancestry decides; the variable is ignored
    as_thread = json.loads(outputs[2])
    # The id set for itself is not one the codex process holds: refused, never the victim.
    assert as_thread.get("session_id") != victim.session_id and as_thread["error"]["code"] == "identity", as_thread
    # The drain shows the thread nothing of the victim's (one stderr line says the payload was ignored).
    assert outputs[3].endswith("rc=0\n") and "decision" not in outputs[3], outputs[3]
    assert maildir(hw, victim.session_id, "new"), "the victim's mail is untouched"


def test_codex_sandboxed_shell_is_its_thread_by_the_sandbox_rule(hw: HostWorld) -> None:
    """``sandbox_mode = "workspace-write"``: Codex runs the shell tool under bwrap in a pid namespace of
    its own, where no codex process is visible. Enrolled through ``attend mcp`` (outside the sandbox,
    so the enrollment records the codex process's pid namespace), the thread's sandboxed commands are
    the thread by the sandbox rule; its pid 1 carries the id, so another id set inside is refused."""
    api = FakeResponses([])
    hw.codex_setup(api, sandbox="workspace-write")
    install(hw, "codex")
    outputs: list[str] = []

    def record(then: Reply):  # type: ignore[no-untyped-def]
        def step(req: Request) -> Reply:
            outputs.append(latest_output(req).split("Output:", 1)[-1].strip())
            return then

        return step

    other = "01a23400-0000-7000-8000-0000000000ff"
    # Codex's bwrap leaves this folder in /tmp, outside the test's tree: removed after, if this made it.
    leftovers = [
        Path(f"/tmp/codex-bwrap-synthetic-mount-targets-{os.getuid()}"),
        Path(f"/tmp/codex-daemon-{os.getuid()}"),
    ]
    had = [p.exists() for p in leftovers]
    api.script = [
        mcp("attend", "join", {"name": "e2e"}),
        record(shell(f"{ATTEND} whoami --json 2>&1")),
        record(shell(f"CODEX_THREAD_ID={other} {ATTEND} whoami --json 2>&1")),
        record(done("done")),
    ]
    try:
        run = hw.codex([], api=api)
    finally:
        for path, existed in zip(leftovers, had, strict=True):
            if not existed:
                shutil.rmtree(path, ignore_errors=True)
    assert run.rc == 0 and not api.errors, run.explain()
    thread = thread_id_of(api.turns[0])
    assert '"ways"' in outputs[0] or "e2e" in outputs[0], outputs  # the MCP join went through
    mine = json.loads(outputs[1][outputs[1].index("{") :])
    assert (mine.get("session_id"), mine.get("resolved_by"), mine.get("host")) == (thread, "sandbox", "codex"), mine
    assert other not in outputs[2].split('"session_id"')[-1][:60] and "identity" in outputs[2], outputs[2]
