"""`attend install` / `attend uninstall` on real files: the baseline lands where Claude Code reads it,
a second run changes nothing, bad input changes nothing, and uninstall gives the user's files back."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from attend.setup import install
from attend.setup.install import resolve_target
from tests.support import World, in_pty, tree

MCP_TOOLS = [
    "send",
    "reply",
    "peers",
    "inbox",
    "status",
    "join",
    "leave",
    "notify_subscribe",
    "notify_unsubscribe",
    "inbox_wait",
    "mute",
    "unmute",
    "lease",
    "inbound",
    "search",
]
USER_SETTINGS = {
    "permissions": {"allow": ["Bash(ls:*)"], "deny": ["Read(./.env)"]},
    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo mine"}]}]},
    "model": "opus",
}


def settings_path(world: World) -> Path:
    return world.home / ".claude" / "settings.json"


def claude_json(world: World) -> Path:
    return world.home / ".claude.json"


def write_json(path: Path, doc: Any) -> bytes:
    raw = json.dumps(doc, separators=(",", ":")).encode()
    path.write_bytes(raw)
    return raw


def snapshot(world: World) -> dict[str, bytes]:
    """Every file under HOME, by path, with its bytes (attend's own config folder excluded)."""
    out = {}
    for root, _, files in os.walk(world.home):
        for name in files:
            p = Path(root) / name
            if ".config/attend" not in str(p) and not p.is_symlink():
                out[str(p.relative_to(world.home))] = p.read_bytes()
    return out


def test_install_writes_the_baseline_where_claude_code_reads_it(world: World) -> None:
    write_json(settings_path(world), USER_SETTINGS)
    write_json(claude_json(world), {"numStartups": 7, "mcpServers": {"other": {"command": "x"}}})
    out = world.cli("install")
    assert out.returncode == 0, out.stderr
    settings = json.loads(settings_path(world).read_text())
    allow = settings["permissions"]["allow"]
    assert allow[0] == "Bash(ls:*)"
    assert [f"mcp__attend__{t}" for t in MCP_TOOLS] + ["Bash(attend:*)"] == allow[1:]
    assert settings["permissions"]["deny"] == ["Read(./.env)"]
    assert settings["model"] == "opus"
    stop = settings["hooks"]["Stop"]
    assert stop[0]["hooks"][0]["command"] == "echo mine"  # the user's hook first, attend's after it
    assert stop[1]["hooks"] == [
        {"type": "command", "command": "~/.claude/hooks/ways/attend-drain-stop.sh", "timeout": 30}
    ]
    # The lease check is wired before the edit tools; the guard is never wired by install.
    (edit,) = settings["hooks"]["PreToolUse"]
    assert edit == {
        "matcher": "Edit|Write|MultiEdit|NotebookEdit",
        "hooks": [{"type": "command", "command": "~/.claude/hooks/ways/attend-edit-pre.sh", "timeout": 10}],
    }
    assert "mcpServers" not in settings
    cj = json.loads(claude_json(world).read_text())
    assert cj["numStartups"] == 7 and cj["mcpServers"]["other"] == {"command": "x"}
    server = cj["mcpServers"]["attend"]
    assert server["type"] == "stdio" and server["args"] == ["mcp"]
    assert os.path.isabs(server["command"]) and os.access(server["command"], os.X_OK)
    hooks = world.home / ".claude" / "hooks" / "ways"
    for script in ("attend-drain-stop.sh", "attend-guard-pre.sh"):
        assert stat.S_IMODE((hooks / script).stat().st_mode) == 0o755
    skill = world.home / ".claude" / "skills" / "attend" / "SKILL.md"
    assert skill.read_text().startswith("---\nname: attend")


def test_the_stop_hook_wrapper_drains_through_attend(world: World) -> None:
    world.cli("install")
    script = world.home / ".claude" / "hooks" / "ways" / "attend-drain-stop.sh"
    s = world.session("proj")
    assert s.attend("join", "ops").rc == 0
    assert world.attend("send", "through the wrapper").returncode == 0
    payload = json.dumps({"session_id": s.session_id, "stop_hook_active": False, "background_tasks": []})
    done = s.run(["/bin/sh", str(script)], stdin=payload)
    assert done.rc == 0 and json.loads(done.stdout)["decision"] == "block"
    assert "through the wrapper" in json.loads(done.stdout)["reason"]


def test_install_wires_the_compact_hook_and_its_wrapper_re_presents_through_attend(world: World) -> None:
    world.cli("install")
    settings = json.loads((world.home / ".claude" / "settings.json").read_text())
    assert settings["hooks"]["SessionStart"] == [
        {
            "matcher": "compact",
            "hooks": [{"type": "command", "command": "~/.claude/hooks/ways/attend-compact-start.sh", "timeout": 30}],
        }
    ]
    script = world.home / ".claude" / "hooks" / "ways" / "attend-compact-start.sh"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    s = world.session("proj")
    assert s.attend("join", "ops").rc == 0
    payload = json.dumps({"session_id": s.session_id, "source": "compact", "cwd": str(s.cwd)})
    done = s.run(["/bin/sh", str(script)], stdin=payload, env={"PATH": "/usr/bin:/bin"})
    assert done.rc == 0, done.stderr
    assert "[attend reheat]" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    world.cli("uninstall")
    left = world.home / ".claude" / "settings.json"
    assert not left.exists() or "SessionStart" not in json.loads(left.read_text()).get("hooks", {})
    assert not script.exists()


def test_the_installed_stop_hook_finds_attend_when_its_venv_is_not_on_path(world: World) -> None:
    # The README's install: attend in a venv, the venv's bin not on the client's PATH.
    world.cli("install")
    script = world.home / ".claude" / "hooks" / "ways" / "attend-drain-stop.sh"
    s = world.session("proj")
    assert s.attend("join", "ops").rc == 0
    assert world.attend("send", "found without PATH").returncode == 0
    bare = "/usr/bin:/bin"
    assert shutil.which("attend", path=bare) is None
    payload = json.dumps({"session_id": s.session_id, "stop_hook_active": False, "background_tasks": []})
    done = s.run(["/bin/sh", str(script)], stdin=payload, env={"PATH": bare})
    assert done.rc == 0, done.stderr
    assert "found without PATH" in json.loads(done.stdout)["reason"]
    recorded = resolve_target(None, world.env)
    assert install.recorded_attend(recorded) == install.attend_executable(world.env)


def test_a_stop_hook_whose_attend_is_gone_steps_aside_with_one_line(world: World, tmp_path: Path) -> None:
    import subprocess

    gone = tmp_path / "removed-venv" / "bin" / "attend"
    install.install(resolve_target(None, world.env), attend_exe=str(gone))
    script = world.home / ".claude" / "hooks" / "ways" / "attend-drain-stop.sh"
    bare = {**world.env, "PATH": "/nonexistent"}
    done = subprocess.run(["/bin/sh", str(script)], input="{}", capture_output=True, text=True, env=bare)
    assert (done.returncode, done.stdout) == (0, "")
    assert len(done.stderr.strip().splitlines()) == 1 and "attend doctor" in done.stderr


def test_running_install_twice_changes_nothing_the_second_time(world: World) -> None:
    write_json(settings_path(world), USER_SETTINGS)
    assert world.cli("install").returncode == 0
    first = snapshot(world)
    mtimes = {p: (world.home / p).stat().st_mtime_ns for p in first}
    again = world.cli("install")
    assert again.returncode == 0, again.stderr
    assert "nothing changed" in again.stdout
    assert snapshot(world) == first
    assert {p: (world.home / p).stat().st_mtime_ns for p in first} == mtimes


def test_dry_run_prints_the_diff_and_writes_nothing(world: World) -> None:
    raw = write_json(settings_path(world), USER_SETTINGS)
    before = snapshot(world)
    out = world.cli("install", "--dry-run")
    assert out.returncode == 0, out.stderr
    assert f"+++ {settings_path(world)}" in out.stdout
    assert '+      "mcp__attend__send",' in out.stdout
    assert "would create" in out.stdout and "attend-drain-stop.sh" in out.stdout
    assert snapshot(world) == before and settings_path(world).read_bytes() == raw
    assert not (world.home / ".config" / "attend").exists()


def test_uninstall_restores_untouched_files_byte_for_byte(world: World) -> None:
    raw = write_json(settings_path(world), USER_SETTINGS)
    cj = write_json(claude_json(world), {"numStartups": 7})
    before = snapshot(world)
    assert world.cli("install").returncode == 0
    assert snapshot(world) != before
    out = world.cli("uninstall")
    assert out.returncode == 0, out.stderr
    assert settings_path(world).read_bytes() == raw and claude_json(world).read_bytes() == cj
    assert snapshot(world) == before
    assert not (world.home / ".claude" / "hooks").exists() and not (world.home / ".claude" / "skills").exists()
    assert f"spool left in place: {world.spool_root}" in out.stdout


def test_uninstall_removes_files_attend_created(world: World) -> None:
    assert not settings_path(world).exists()
    assert world.cli("install").returncode == 0
    assert settings_path(world).exists() and claude_json(world).exists()
    assert world.cli("uninstall").returncode == 0
    assert not settings_path(world).exists() and not claude_json(world).exists()


def test_uninstall_after_other_writes_keeps_them_and_drops_only_attends_entries(world: World) -> None:
    write_json(settings_path(world), USER_SETTINGS)
    write_json(claude_json(world), {"numStartups": 7})
    assert world.cli("install").returncode == 0
    # The user and the client write after install.
    settings = json.loads(settings_path(world).read_text())
    settings["permissions"]["allow"].append("Bash(git:*)")
    settings_path(world).write_text(json.dumps(settings))
    cj = json.loads(claude_json(world).read_text())
    cj["numStartups"] = 8
    claude_json(world).write_text(json.dumps(cj))
    assert world.cli("uninstall").returncode == 0
    expected = json.loads(json.dumps(USER_SETTINGS))
    expected["permissions"]["allow"].append("Bash(git:*)")
    assert json.loads(settings_path(world).read_text()) == expected
    assert json.loads(claude_json(world).read_text()) == {"numStartups": 8}


def test_a_baseline_entry_removed_by_hand_comes_back_on_install(world: World) -> None:
    assert world.cli("install").returncode == 0
    settings = json.loads(settings_path(world).read_text())
    settings["permissions"]["allow"].remove("mcp__attend__peers")
    settings_path(world).write_text(json.dumps(settings))
    assert world.cli("install").returncode == 0
    assert "mcp__attend__peers" in json.loads(settings_path(world).read_text())["permissions"]["allow"]


def test_a_denied_outbound_tool_stays_out_of_allow(world: World) -> None:
    deny = ["Bash(attend send*)", "Bash(attend reply*)", "mcp__attend__send"]
    write_json(settings_path(world), {"permissions": {"deny": deny}})
    assert world.cli("install").returncode == 0
    allow = json.loads(settings_path(world).read_text())["permissions"]["allow"]
    assert "mcp__attend__send" not in allow and "mcp__attend__reply" in allow  # positive control


def test_a_custom_config_dir_gets_its_own_claude_json(world: World, tmp_path: Path) -> None:
    custom = tmp_path / "cc"
    custom.mkdir()
    out = world.cli("install", env={"CLAUDE_CONFIG_DIR": str(custom)})
    assert out.returncode == 0, out.stderr
    assert "attend" in json.loads((custom / ".claude.json").read_text())["mcpServers"]
    stop = json.loads((custom / "settings.json").read_text())["hooks"]["Stop"]
    assert stop[0]["hooks"][0]["command"] == str(custom / "hooks" / "ways" / "attend-drain-stop.sh")
    assert not claude_json(world).exists()
    assert resolve_target(str(custom), world.env).claude_json == custom / ".claude.json"


def test_a_projects_claude_folder_gets_its_mcp_server_in_the_projects_mcp_json(world: World) -> None:
    project = world.project("web")
    (project / ".claude").mkdir()
    mine = write_json(project / ".mcp.json", {"mcpServers": {"db": {"command": "db-mcp"}}})
    out = world.cli("install", "--target", "./.claude", "--host", "claude", cwd=project)
    assert out.returncode == 0, out.stderr
    servers = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert set(servers) == {"db", "attend"}  # where Claude Code reads a project's servers, beside the user's own
    assert not (project / ".claude" / ".claude.json").exists()  # a file Claude Code never reads
    stop = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]["Stop"]
    assert stop[0]["hooks"][0]["command"] == str(project / ".claude" / "hooks" / "ways" / "attend-drain-stop.sh")
    assert not claude_json(world).exists()  # the user's own config is untouched
    assert world.cli("uninstall", "--target", "./.claude", "--host", "claude", cwd=project).returncode == 0
    assert (project / ".mcp.json").read_bytes() == mine


BAD_INPUTS = [
    ("settings.json", b'{"permissions": {"allow": [}', "is not valid JSON"),
    (".claude.json", b"not json", "is not valid JSON"),
    ("settings.json", b'{"permissions": {"allow": "Bash(ls:*)"}}', "permissions.allow is a string, not a list"),
    ("settings.json", b'["a list"]', "not an object"),
    ("settings.json", b'{"hooks": {"Stop": {"command": "x"}}}', "hooks.Stop is an object, not a list"),
]


@pytest.mark.parametrize(("name", "content", "message"), BAD_INPUTS)
def test_bad_input_is_refused_and_nothing_changes(world: World, name: str, content: bytes, message: str) -> None:
    good = write_json(settings_path(world), USER_SETTINGS) if name != "settings.json" else None
    path = settings_path(world) if name == "settings.json" else claude_json(world)
    path.write_bytes(content)
    before = snapshot(world)
    out = world.cli("install")
    assert out.returncode in (1, 2)
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert snapshot(world) == before
    if good is not None:
        assert settings_path(world).read_bytes() == good


def test_a_symlinked_settings_file_is_refused(world: World, tmp_path: Path) -> None:
    real = tmp_path / "real-settings.json"
    raw = write_json(real, USER_SETTINGS)
    settings_path(world).symlink_to(real)
    out = world.cli("install")
    assert out.returncode == 1 and "is a symlink" in out.stderr
    assert real.read_bytes() == raw and settings_path(world).is_symlink()


def test_a_read_only_settings_file_is_refused(world: World) -> None:
    raw = write_json(settings_path(world), USER_SETTINGS)
    settings_path(world).chmod(0o444)
    out = world.cli("install")
    assert out.returncode == 1 and "read-only" in out.stderr
    assert settings_path(world).read_bytes() == raw
    assert not claude_json(world).exists()


def test_a_target_that_does_not_exist_is_named(world: World, tmp_path: Path) -> None:
    out = world.cli("install", "--target", str(tmp_path / "nowhere"))
    assert out.returncode == 1
    assert f"{tmp_path / 'nowhere'} does not exist" in out.stderr


def test_install_keeps_a_timestamped_backup_of_each_file_it_changes(world: World) -> None:
    raw = write_json(settings_path(world), USER_SETTINGS)
    out = world.cli("install", "--json")
    result = json.loads(out.stdout)
    backups = [Path(b) for b in result["backups"]]
    assert [b.read_bytes() for b in backups if b.name.endswith("-settings.json")] == [raw]
    assert all(str(b).startswith(str(world.home / ".config" / "attend" / "targets")) for b in backups)


def test_uninstall_purge_confirmed_at_the_terminal_removes_the_spool(world: World) -> None:
    assert world.spool.root.is_dir()  # opening creates it
    assert world.spool_root.is_dir()
    assert world.cli("install").returncode == 0
    rc, shown = in_pty(world, "uninstall", "--purge", answer="y")
    assert rc == 0, shown
    assert not world.spool_root.exists()


@pytest.mark.parametrize("yes", [False, True], ids=["asked", "--yes"])
def test_uninstall_purge_without_a_terminal_is_refused_and_changes_nothing(world: World, yes: bool) -> None:
    assert world.spool.root.is_dir()
    assert world.cli("install").returncode == 0
    before = tree(world.home)
    out = world.attend("uninstall", "--purge", *(["--yes"] if yes else []), stdin="y\n")
    assert out.returncode == 1 and "needs one at a terminal" in out.stderr, out.stderr
    assert tree(world.home) == before  # neither the spool nor the wiring was touched


def test_uninstall_keeps_edits_a_later_install_merged_in(world: World) -> None:
    # A reinstall that writes merges the user's edits made since the first install; the bytes
    # from before the first install no longer describe the user's file, so uninstall must not
    # put them back.
    write_json(settings_path(world), USER_SETTINGS)
    assert world.cli("install").returncode == 0
    settings = json.loads(settings_path(world).read_text())
    settings["permissions"]["allow"].remove("mcp__attend__peers")  # so the reinstall writes
    settings["permissions"]["allow"].append("Bash(git:*)")
    settings_path(world).write_text(json.dumps(settings))
    again = world.cli("install")
    assert again.returncode == 0, again.stderr
    assert "mcp__attend__peers" in json.loads(settings_path(world).read_text())["permissions"]["allow"]
    assert world.cli("uninstall").returncode == 0
    expected = json.loads(json.dumps(USER_SETTINGS))
    expected["permissions"]["allow"].append("Bash(git:*)")
    assert json.loads(settings_path(world).read_text()) == expected


def test_a_reinstall_that_changes_only_attends_part_still_uninstalls_byte_for_byte(world: World) -> None:
    raw = write_json(settings_path(world), USER_SETTINGS)
    assert world.cli("install").returncode == 0
    settings = json.loads(settings_path(world).read_text())
    settings["permissions"]["allow"].remove("mcp__attend__peers")  # only attend's part changes
    settings_path(world).write_text(json.dumps(settings))
    assert world.cli("install").returncode == 0
    assert world.cli("uninstall").returncode == 0
    assert settings_path(world).read_bytes() == raw


@pytest.mark.parametrize(
    ("name", "token"),
    [(".claude.json", "NaN"), ("settings.json", "Infinity"), (".claude.json", "-Infinity"), (".claude.json", "1e999")],
)
def test_a_number_json_cannot_carry_is_refused_and_nothing_is_written(world: World, name: str, token: str) -> None:
    # Python's json reads NaN and Infinity (and 1e999 as inf) and would write them back as NaN or
    # Infinity, which is not JSON: Claude Code could no longer read its own file.
    path = settings_path(world) if name == "settings.json" else claude_json(world)
    path.write_bytes(b'{"numStartups": 3, "tipsHistory": {"x": %s}}' % token.encode())
    before = snapshot(world)
    out = world.cli("install")
    assert out.returncode == 1
    assert f"holds {'the number ' if token[-1].isdigit() else ''}{token}" in out.stderr
    assert "nothing was changed" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert snapshot(world) == before
    assert not (world.home / ".config" / "attend").exists()


def test_large_finite_numbers_survive_an_install(world: World) -> None:
    write_json(claude_json(world), {"big": 1e308, "count": 10**30, "small": -1.5e-300})
    assert world.cli("install").returncode == 0
    text = claude_json(world).read_text()
    assert "Infinity" not in text and "NaN" not in text
    doc = json.loads(text)
    assert (doc["big"], doc["count"], doc["small"]) == (1e308, 10**30, -1.5e-300)


def test_four_concurrent_installs_leave_claude_json_byte_exact(world: World) -> None:
    import subprocess

    from tests.support import ATTEND

    user = {"numStartups": 7, "projects": {"/src/x": {"allowedTools": []}}, "mcpServers": {"other": {"command": "x"}}}
    for rounds in range(3):  # the race needs the runs to overlap; three rounds make that near certain
        write_json(claude_json(world), user)
        write_json(settings_path(world), USER_SETTINGS)
        runs = [
            subprocess.Popen(
                [ATTEND, "install"], env=world.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
            for _ in range(4)
        ]
        results = [(p.wait(timeout=120), p.stderr.read() if p.stderr else "") for p in runs]
        assert [rc for rc, _ in results] == [0, 0, 0, 0], results
        concurrent = (claude_json(world).read_bytes(), settings_path(world).read_bytes())
        # The same start, installed once: the bytes must be those.
        assert world.cli("uninstall").returncode == 0
        assert json.loads(claude_json(world).read_text()) == user
        assert world.cli("install").returncode == 0
        assert (claude_json(world).read_bytes(), settings_path(world).read_bytes()) == concurrent, rounds
        assert world.cli("uninstall").returncode == 0
