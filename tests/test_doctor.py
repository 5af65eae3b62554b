"""`attend doctor`: each reason a session would not receive, with its fix, and the repair pass."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from attend.domain.messages import delivery
from attend.domain.sessions import sessions
from attend.domain.sessions.context import Context
from attend.setup import install
from attend.verbs import doctor
from tests.support import World


def checks(out: str) -> dict[str, dict[str, str]]:
    return {c["name"]: c for c in json.loads(out)["checks"]}


def shell(command: str, env: dict[str, str]) -> None:
    """Run a fix exactly as doctor printed it."""
    done = subprocess.run(command, shell=True, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (command, done.stderr)


def test_a_human_at_a_terminal_gets_the_machine_checks_and_skips_the_session_ones(world: World) -> None:
    out = world.cli("doctor", "--json")
    found = checks(out.stdout)
    assert found["attend on PATH"]["status"] == "ok"
    assert found["wiring"]["status"] == "fail" and found["wiring"]["fix"] == "attend install"
    assert found["Stop hook finds attend"]["status"] == "skip"
    assert found["spool"]["status"] == "ok"
    assert found["sensor loop"]["status"] == "skip"
    assert out.returncode == 1  # the wiring fails
    shell(found["wiring"]["fix"], world.env)
    again = world.cli("doctor")
    assert again.returncode == 0, again.stdout
    assert "ok   wiring" in again.stdout
    assert f"ok   Stop hook finds attend: {world.home}/.claude/hooks/ways/attend-drain-stop.sh runs /" in again.stdout


def test_settings_without_the_compact_hook_fail_the_wiring_check_until_install_wires_it_again(world: World) -> None:
    assert world.cli("install").returncode == 0
    settings = world.home / ".claude" / "settings.json"
    doc = json.loads(settings.read_text())
    del doc["hooks"]["SessionStart"]  # a user's hand edit: the re-presentation after a compaction is gone
    settings.write_text(json.dumps(doc))
    wiring = checks(world.cli("doctor", "--json").stdout)["wiring"]
    listed = world.cli("permissions")
    assert wiring["status"] == "fail" and "missing compact hook" in wiring["detail"]
    assert "compact hook" in listed.stdout and "NO" in listed.stdout.split("compact hook")[1].splitlines()[0]
    shell(wiring["fix"], world.env)
    assert checks(world.cli("doctor", "--json").stdout)["wiring"]["status"] == "ok"
    assert json.loads(world.cli("permissions", "--json").stdout)["recall"] is True


def test_a_missing_target_folder_gets_the_command_that_creates_it_and_installs(world: World, tmp_path: Path) -> None:
    folder = tmp_path / "not yet"
    out = world.cli("doctor", "--json", "--target", str(folder))
    wiring = checks(out.stdout)["wiring"]
    assert wiring["status"] == "fail" and "does not exist" in wiring["detail"]
    shell(wiring["fix"], world.env)
    assert checks(world.cli("doctor", "--json", "--target", str(folder)).stdout)["wiring"]["status"] == "ok"


def test_a_session_that_is_not_enrolled_is_told_how_to_enrol(world: World) -> None:
    world.cli("install")
    s = world.session("proj")
    out = s.attend("doctor", "--json")
    found = checks(out.stdout)
    assert found["enrollment"]["status"] == "fail" and "attend run" in found["enrollment"]["fix"]
    assert found["sensor loop"]["status"] == "warn" and "Monitor" in found["sensor loop"]["fix"]
    assert found["MCP marker"]["status"] == "warn"
    assert out.rc == 1


def test_monitor_disabled_by_the_environment_is_reported(world: World) -> None:
    out = world.cli("doctor", "--json", env={"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"})
    monitor = checks(out.stdout)["Monitor"]
    assert monitor["status"] == "warn" and "drain" in monitor["fix"]
    assert checks(world.cli("doctor", "--json").stdout)["Monitor"]["status"] == "ok"  # positive control


def test_attend_missing_from_path_is_a_warning_whose_command_puts_it_there(world: World) -> None:
    bin_dir = world.home / "bin"
    bin_dir.mkdir()
    env = {**world.env, "PATH": f"{bin_dir}:/usr/bin:/bin"}
    assert shutil.which("attend", path=env["PATH"]) is None
    path_check = next(
        c for c in doctor.run(Context.for_env(env), doctor.DoctorRequest()).checks if c.name == "attend on PATH"
    )
    assert path_check.status == "warn" and "Monitor command `attend run`" in path_check.detail
    assert path_check.fix == f"ln -s {install.attend_executable(env)} {bin_dir / 'attend'}"
    shell(path_check.fix, env)
    again = next(
        c for c in doctor.run(Context.for_env(env), doctor.DoctorRequest()).checks if c.name == "attend on PATH"
    )
    assert (again.status, again.detail) == ("ok", str(bin_dir / "attend"))


def test_with_no_path_folder_of_the_users_the_fix_links_into_local_bin_and_adds_it_to_path(world: World) -> None:
    env = {**world.env, "PATH": "/usr/bin:/bin"}  # the package manager's folders only, writable or not
    path_check = next(
        c for c in doctor.run(Context.for_env(env), doctor.DoctorRequest()).checks if c.name == "attend on PATH"
    )
    assert path_check.status == "warn" and "/usr/bin/attend" not in path_check.fix
    shell(path_check.fix, env)
    local_bin = world.home / ".local" / "bin"
    assert os.path.realpath(local_bin / "attend") == os.path.realpath(install.attend_executable(env))
    assert 'export PATH="$HOME/.local/bin:$PATH"' in (world.home / ".profile").read_text()
    login = {**env, "PATH": f"{local_bin}:/usr/bin:/bin"}  # what a new login shell's PATH holds
    again = next(
        c for c in doctor.run(Context.for_env(login), doctor.DoctorRequest()).checks if c.name == "attend on PATH"
    )
    assert again.status == "ok"


def test_a_stop_hook_whose_attend_is_gone_fails_and_its_command_records_the_running_one(
    world: World, tmp_path: Path
) -> None:
    gone = tmp_path / "old-venv" / "bin" / "attend"
    install.install(install.resolve_target(None, world.env), attend_exe=str(gone))
    report = doctor.run(Context.for_env(world.env), doctor.DoctorRequest())
    hook = next(c for c in report.checks if c.name == "Stop hook finds attend")
    assert hook.status == "fail" and f"runs {gone}, which is gone" in hook.detail
    assert hook.fix == "attend install" and not report.ok
    shell(hook.fix, world.env)
    healed = doctor.run(Context.for_env(world.env), doctor.DoctorRequest())
    hook = next(c for c in healed.checks if c.name == "Stop hook finds attend")
    assert hook.status == "ok" and hook.detail.endswith(f"runs {install.attend_executable(world.env)}")


def test_the_repair_pass_restores_a_lost_delivery(world: World) -> None:
    world.cli("install")
    a, b = world.session("proj"), world.session("proj")
    spool = world.spool
    for s in (a, b):
        sessions.enroll(spool, world.context(s).who(), "join")
    assert a.attend("send", "first").rc == 0
    delivery.repair(spool, b.session_id)  # b has reconciled up to the first message
    sent = a.attend("send", "--json", "second")
    assert sent.rc == 0, sent.stderr
    second = json.loads(sent.stdout)["id"]
    # A crash between the room record and the fan-out: b's link to the second message is lost.
    for folder in ("new", "claimed", "cur"):
        for name in spool.listing(b.session_id, folder):
            if name.startswith(second):
                (spool.root / "sessions" / b.session_id / folder / name).unlink()
    assert not spool.has_delivery(b.session_id, second)
    out = b.attend("doctor", "--json")
    report = json.loads(out.stdout)
    assert report["repaired"] == 1, out.stderr
    assert spool.has_delivery(b.session_id, second)


def test_a_broken_gemini_wiring_fails_with_the_command_that_wires_it_again(world: World) -> None:
    (world.home / ".gemini").mkdir()
    # Gemini trusts this folder (else it starts no MCP server here, and doctor says so).
    trusted = {str(world.project("proj")): "TRUST_FOLDER"}
    (world.home / ".gemini" / "trustedFolders.json").write_text(json.dumps(trusted))
    assert world.cli("install").returncode == 0  # Claude Code and the Gemini CLI it found
    first = checks(world.cli("doctor", "--json").stdout)["gemini wiring"]
    assert first["status"] == "ok", first
    path = world.home / ".gemini" / "settings.json"
    doc = json.loads(path.read_text())
    del doc["mcpServers"]["attend"]
    path.write_text(json.dumps(doc))
    out = world.cli("doctor", "--json")
    found = checks(out.stdout)["gemini wiring"]
    assert out.returncode == 1 and found["status"] == "fail" and "MCP server" in found["detail"], found
    assert found["fix"] == "attend install --host gemini"
    shell(found["fix"], world.env)
    again = world.cli("doctor")
    assert again.returncode == 0 and "ok   gemini wiring" in again.stdout, again.stdout


def test_a_codex_folder_attend_never_wired_is_a_warning_whose_command_wires_it(world: World) -> None:
    (world.home / ".codex").mkdir()
    assert world.cli("install", "--host", "claude").returncode == 0
    out = world.cli("doctor")
    assert out.returncode == 0, out.stdout
    assert f"warn codex wiring: {world.home}/.codex found but not wired for attend" in out.stdout
    assert "     fix: attend install --host codex" in out.stdout
