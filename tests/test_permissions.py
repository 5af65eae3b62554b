"""`attend permissions`: what a configuration lacks for attend, and whether the outbound gate is hard."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from attend.domain.sessions.context import Context
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
    assert all(report["allow"].values()) and len(report["allow"]) == 16  # fifteen tools and Bash(attend:*)
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


# ---------------------------------------------------------------------- Codex CLI and Gemini CLI

CODEX_BIN = Path(__file__).parent / "e2e" / "node_modules" / ".bin"
NO_CODEX = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}


def host_report(world: World, host: str, env: dict[str, str] | None = None) -> dict[str, object]:
    out = world.cli("permissions", "--json", env=env)
    found = {h["host"]: h for h in json.loads(out.stdout)["hosts"]}
    return found[host]


def host_checks(report: dict[str, object]) -> dict[str, dict[str, object]]:
    return {c["name"]: c for c in report["checks"]}  # type: ignore[attr-defined,index]


def test_untrusted_codex_hooks_are_reported_with_the_command_that_trusts_them(world: World) -> None:
    (world.home / ".codex").mkdir()
    assert world.attend("install", "--host", "codex", env=NO_CODEX).returncode == 0
    report = host_report(world, "codex", NO_CODEX)
    found = host_checks(report)
    assert report["wired"] and not report["ok"]
    assert found["MCP server"]["ok"] and found["Stop hook"]["ok"]
    trust = found["hook trust"]
    assert not trust["ok"] and "hooks.json:stop:0:0" in str(trust["detail"])
    assert "install --host codex" in str(trust["fix"]) and "/hooks" in str(trust["fix"])  # no codex to ask
    assert world.cli("permissions", env=NO_CODEX).returncode == 1
    if not (CODEX_BIN / "codex").exists():
        pytest.skip("the pinned Codex CLI is not installed (npm ci --prefix tests/e2e)")
    with_codex = {"PATH": f"{CODEX_BIN}:{NO_CODEX['PATH']}"}
    assert world.attend("install", "--host", "codex", env=with_codex).returncode == 0  # the fix, with codex
    report = host_report(world, "codex", with_codex)
    assert report["ok"] and host_checks(report)["hook trust"]["ok"], report


def test_a_gemini_settings_file_that_lost_its_drain_and_server_is_reported_and_install_restores_it(
    world: World,
) -> None:
    (world.home / ".gemini").mkdir()
    (world.home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(world.tmp): "TRUST_FOLDER"}))
    assert world.attend("install", "--host", "gemini").returncode == 0
    assert host_report(world, "gemini")["ok"]
    path = world.home / ".gemini" / "settings.json"
    doc = json.loads(path.read_text())
    del doc["hooks"]["AfterAgent"]
    doc["mcpServers"]["attend"]["command"] = str(world.tmp / "gone" / "attend")
    path.write_text(json.dumps(doc))
    report = host_report(world, "gemini")
    found = host_checks(report)
    assert report["wired"] and not report["ok"]
    assert not found["AfterAgent hook"]["ok"] and found["AfterAgent hook"]["fix"] == "attend install --host gemini"
    assert not found["MCP server"]["ok"] and "not an executable" in str(found["MCP server"]["detail"])
    assert found["SessionStart hook"]["ok"]
    text = world.cli("permissions")
    assert text.returncode == 1 and "gemini AfterAgent hook" in text.stdout and "NO   MCP server" in text.stdout
    assert world.attend("install", "--host", "gemini").returncode == 0
    assert host_report(world, "gemini")["ok"]


def test_a_client_folder_attend_never_wired_is_listed_but_does_not_fail_permissions(world: World) -> None:
    (world.home / ".gemini").mkdir()
    assert world.cli("install", "--host", "claude").returncode == 0
    out = world.cli("permissions", "--json")
    report = json.loads(out.stdout)
    assert out.returncode == 0 and report["ok"], out.stdout
    assert [(h["host"], h["wired"], h["ok"]) for h in report["hosts"]] == [("gemini", False, False)]
    assert "codex" not in out.stdout  # no ~/.codex, nothing attend wrote: not reported
