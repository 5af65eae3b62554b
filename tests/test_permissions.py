"""`attend permissions`: what a configuration lacks for attend, and whether the outbound gate is hard."""

from __future__ import annotations

import json

from attend.domain.context import Context
from attend.verbs import permissions
from tests.support import World

REQUEST = permissions.PermissionsRequest()


def settings(world: World) -> dict[str, object]:
    doc = json.loads((world.home / ".claude" / "settings.json").read_text())
    assert isinstance(doc, dict)
    return doc


def save(world: World, doc: object) -> None:
    (world.home / ".claude" / "settings.json").write_text(json.dumps(doc))


def test_an_installed_target_is_wired_with_a_soft_gate_and_no_guard(world: World) -> None:
    assert world.cli("install").returncode == 0
    out = world.cli("permissions", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["ok"] and report["missing"] == []
    assert all(report["allow"].values()) and len(report["allow"]) == 13
    assert report["stop_hook"] and report["mcp_server"]
    assert (report["guard"], report["gate"]) == (False, "soft")


def test_an_empty_target_exits_1_and_names_what_is_missing(world: World) -> None:
    out = world.cli("permissions")
    assert out.returncode == 1
    assert "mcp__attend__send                NO" in out.stdout
    assert "missing:" in out.stdout and "MCP server" in out.stdout


def test_a_missing_allow_entry_is_reported(world: World) -> None:
    world.cli("install")
    doc = settings(world)
    doc["permissions"]["allow"].remove("mcp__attend__inbox_wait")  # type: ignore[index]
    save(world, doc)
    report = permissions.run(Context.for_env(world.env), REQUEST)
    assert report.missing == ["mcp__attend__inbox_wait"] and not report.ok


def test_the_hard_gate_is_recognised_and_its_missing_send_entry_is_not_a_failure(world: World) -> None:
    world.cli("install")
    doc = settings(world)
    doc["permissions"]["allow"].remove("mcp__attend__send")  # type: ignore[index]
    doc["permissions"]["deny"] = ["Bash(attend send*)", "Bash(attend reply*)"]  # type: ignore[index]
    save(world, doc)
    report = permissions.run(Context.for_env(world.env), REQUEST)
    assert (report.gate, report.ok) == ("hard", True)
    doc["permissions"]["deny"] = ["Bash(attend send*)"]  # type: ignore[index]
    save(world, doc)
    report = permissions.run(Context.for_env(world.env), REQUEST)
    assert report.gate == "soft" and report.missing == ["mcp__attend__send"]


def test_the_guard_wired_by_hand_is_reported_and_a_bash_matcher_is_warned_about(world: World) -> None:
    world.cli("install")
    doc = settings(world)
    command = "~/.claude/hooks/ways/attend-guard-pre.sh"
    doc["hooks"]["PreToolUse"] = [{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]  # type: ignore[index]
    save(world, doc)
    report = permissions.run(Context.for_env(world.env), REQUEST)
    assert report.guard and report.guard_matcher == "*" and report.warnings == []
    doc["hooks"]["PreToolUse"][0]["matcher"] = "Bash"  # type: ignore[index]
    save(world, doc)
    report = permissions.run(Context.for_env(world.env), REQUEST)
    assert report.guard and "matcher 'Bash'" in report.warnings[0]
