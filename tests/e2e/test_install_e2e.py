"""Issue 7, install with the real client: after `attend install --target ~/.claude` a session has the
Stop-hook drain and `mcp__attend__send` with no other configuration; with the guard wired by hand
(as docs/install.md says), `attend run` is refused from Bash and starts under Monitor; and
`attend uninstall` gives the user's files back.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import pytest

from tests.e2e.fake_api import Entry, Reply, Request, bash, call, done, tool_search
from tests.e2e.harness import (
    E2EWorld,
    after_ok,
    expect_ok,
    latest_user_texts,
    session_id_of,
    stop_hook_blocks,
    wait_for,
)

pytestmark = pytest.mark.e2e

USER_SETTINGS = {
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true # the user's own stop hook"}]}]},
}


def install(e2e: E2EWorld) -> None:
    out = e2e.attend("install", "--target", str(e2e.claude_dir))
    assert out.returncode == 0, out.stdout + out.stderr


def wire_guard(e2e: E2EWorld, matcher: str = "*") -> None:
    """Add the PreToolUse entry docs/install.md gives to settings.json, by hand, as a user would."""
    entry = {
        "matcher": matcher,
        "hooks": [{"type": "command", "command": "~/.claude/hooks/ways/attend-guard-pre.sh", "timeout": 10}],
    }
    path = e2e.claude_dir / "settings.json"
    settings = json.loads(path.read_text())
    settings.setdefault("hooks", {}).setdefault("PreToolUse", []).append(entry)
    path.write_text(json.dumps(settings, indent=2))


def test_after_install_a_session_has_the_drain_and_mcp_send_with_no_other_configuration(e2e: E2EWorld) -> None:
    e2e.settings(USER_SETTINGS)
    install(e2e)
    # The message lands as the turn ends; `attend mcp` would post it to the inbox socket (its own
    # tests: test_socket_e2e.py), so this one turns that conduit off to see the drain carry it.
    config = e2e.home / ".config" / "attend" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("conduits:\n  socket: off\n")
    body = f"installed send {uuid.uuid4().hex[:8]}"
    human_body = f"installed drain {uuid.uuid4().hex[:8]}"

    def human_sends_then_turn_ends(req: Request) -> Reply:
        expect_ok(req, "mcp__attend__send")
        out = e2e.attend("send", human_body)
        assert out.returncode == 0, out.stderr
        return done("Sent; ending the turn.")

    def drained(req: Request) -> Reply:
        if not any(human_body in b for b in stop_hook_blocks([req])):
            raise AssertionError(f"no drain block with the body: {latest_user_texts(req)}")
        return done("Read it.")

    script: list[Entry] = [
        bash("attend join e2e"),
        after_ok("attend join", tool_search("mcp__attend__send")),
        call("mcp__attend__send", {"message": body}),
        human_sends_then_turn_ends,
        drained,
    ]
    run = e2e.claude(script)  # no --mcp-config, no settings written by the test since install

    assert run.rc == 0 and not run.timed_out, run.explain()
    assert not run.api.errors, run.explain()
    mine = [s for s in e2e.signals() if s.body == body]
    assert len(mine) == 1 and mine[0].from_id == run.session_id and mine[0].from_kind == "agent", run.explain()
    blocks = run.stop_hook_blocks()
    assert len(blocks) == 1 and human_body in blocks[0], run.explain()
    assert len(run.turns) == 5 and run.api.exhausted == 0, run.explain()


def test_with_the_guard_wired_attend_run_is_refused_from_bash_and_starts_under_monitor(e2e: E2EWorld) -> None:
    install(e2e)
    wire_guard(e2e)
    state: dict[str, Any] = {}

    def after_refusal(req: Request) -> Reply:
        return tool_search("Monitor", "TaskStop")

    def loop_up_then_stop(req: Request) -> Reply:
        started = expect_ok(req, "Monitor attend run")
        state["task"] = re.search(r"task (\w+)", started.text).group(1)  # type: ignore[union-attr]
        sid = session_id_of(req)
        assert sid
        wait_for(lambda: e2e.sensor_live(sid), 30, "attend run under Monitor to be live (attend peers: sensor)")
        state["live"] = True
        return call("TaskStop", {"task_id": state["task"]})

    script: list[Entry] = [
        # A 10 s Bash timeout, so an unguarded `attend run` cannot hold the test.
        call("Bash", {"command": "attend run", "description": "start the sensor loop", "timeout": 10000}),
        after_refusal,
        call("Monitor", {"command": "attend run", "description": "attend messages", "timeout_ms": 60000}),
        loop_up_then_stop,
        done("Stopped."),
        *[done("Stopped.")] * 10,  # late Monitor events after the stop, if any
    ]
    run = e2e.claude(script)

    assert run.rc == 0 and not run.timed_out, run.explain()
    assert not run.api.errors, run.explain()
    refused, started = run.tool_results("Bash")[0], run.tool_results("Monitor")[0]
    assert refused.is_error, run.explain()
    assert "PreToolUse" in refused.text and "Monitor" in refused.text, run.explain()
    assert not started.is_error and started.text.startswith("Monitor started"), run.explain()
    assert state.get("live"), run.explain()


def test_under_a_bash_matcher_the_guard_would_refuse_the_monitor_launch_too(e2e: E2EWorld) -> None:
    """Why docs/install.md says matcher "*": under "Bash" the client presents Monitor as Bash."""
    install(e2e)
    wire_guard(e2e, matcher="Bash")
    script: list[Entry] = [
        tool_search("Monitor"),
        call("Monitor", {"command": "attend run", "description": "attend messages", "timeout_ms": 60000}),
        done("Refused."),
        *[done("Stopped.")] * 5,  # events, should the launch go through after all
    ]
    run = e2e.claude(script)

    assert run.rc == 0 and not run.timed_out, run.explain()
    [monitor] = run.tool_results("Monitor")
    assert monitor.is_error, run.explain()
    # The client names the call Monitor in the message, yet handed the guard a Bash payload.
    assert "hook error" in monitor.text and "attend-guard] refused: `attend run`" in monitor.text, run.explain()


def test_uninstall_gives_back_the_files_install_changed(e2e: E2EWorld) -> None:
    settings_path = e2e.settings(USER_SETTINGS)
    original = settings_path.read_bytes()
    install(e2e)
    claude_json = e2e.home / ".claude.json"
    assert "attend" in json.loads(claude_json.read_text())["mcpServers"]
    assert (e2e.claude_dir / "hooks" / "ways" / "attend-drain-stop.sh").is_file()

    # A real session between install and uninstall: the client rewrites ~/.claude.json as it starts.
    run = e2e.claude([bash("attend whoami --machine"), done()])
    assert run.rc == 0, run.explain()
    assert "resolved=true" in run.tool_results("Bash")[0].text, run.explain()

    out = e2e.attend("uninstall", "--target", str(e2e.claude_dir))
    assert out.returncode == 0, out.stdout + out.stderr
    assert settings_path.read_bytes() == original
    doc = json.loads(claude_json.read_text()) if claude_json.exists() else {}
    assert "attend" not in (doc.get("mcpServers") or {})
    assert not list(e2e.claude_dir.glob("hooks/ways/attend-*"))
