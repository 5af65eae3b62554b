"""install, uninstall, doctor and permissions serve each client on its own: a Codex-only or Gemini-only
user gets a green doctor, a dry run lists exactly what the real run writes, uninstall removes what
install created (its folder too) and only that, doctor reads Gemini's own folder trust, and a
project install writes files that work for whoever clones the project."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import ATTEND, World, in_pty


def run(world: World, *args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed attend, with no client on PATH (nor codex: install cannot ask it to trust)."""
    path = os.pathsep.join([str(Path(ATTEND).parent), "/usr/bin", "/bin"])
    return subprocess.run(
        [ATTEND, *args],
        env={**world.env, "PATH": path, **env},
        cwd=cwd or world.project("proj"),
        capture_output=True,
        text=True,
        timeout=60,
    )


def alone(world: World) -> None:
    """A user of one client: no Claude Code folder."""
    shutil.rmtree(world.home / ".claude")


def files(changes: list[dict[str, str]]) -> list[tuple[str, str]]:
    return [(c["path"], c["action"]) for c in changes]


def trust_codex_hooks(world: World) -> None:
    """What Codex writes when the user trusts attend's Stop hook (/hooks): its hash under hooks.state."""
    config = world.home / ".codex" / "config.toml"
    key = f"{world.home / '.codex' / 'hooks.json'}:stop:0:0"
    config.write_text(config.read_text() + f'\n[hooks.state."{key}"]\ntrusted_hash = "sha256:0"\n')


def trust_folder_in_gemini(world: World, folder: Path, level: str = "TRUST_FOLDER") -> None:
    (world.home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(folder): level}))


@pytest.mark.parametrize("host", ["codex", "gemini"])
def test_a_dry_run_into_a_client_folder_not_made_yet_lists_exactly_what_the_real_run_writes(
    world: World, host: str
) -> None:
    alone(world)
    dry = run(world, "install", "--host", host, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert not (world.home / f".{host}").exists()  # a dry run writes nothing
    real = run(world, "install", "--host", host, "--json")
    assert real.returncode == 0, real.stderr
    (would,) = json.loads(dry.stdout)["others"]
    (did,) = json.loads(real.stdout)["others"]
    assert did["changes"] and files(would["changes"]) == files(did["changes"]), (would, did)


@pytest.mark.parametrize("host", ["codex", "gemini"])
def test_uninstall_removes_the_client_folder_install_made_and_only_when_nothing_else_is_in_it(
    world: World, host: str
) -> None:
    alone(world)
    folder = world.home / f".{host}"
    assert run(world, "install", "--host", host).returncode == 0
    out = run(world, "uninstall", "--host", host)
    assert out.returncode == 0, out.stderr
    assert not folder.exists(), sorted(map(str, folder.rglob("*")))
    assert "restore" not in out.stdout  # nothing was there before: each file is removed, not restored
    # The client ran in between and kept a file of its own there: the folder stays, with it.
    assert run(world, "install", "--host", host).returncode == 0
    (folder / "history.jsonl").write_text("{}\n")
    assert run(world, "uninstall", "--host", host).returncode == 0
    assert sorted(p.name for p in folder.iterdir()) == ["history.jsonl"]


def test_a_codex_only_user_gets_a_green_doctor_and_permissions(world: World) -> None:
    alone(world)
    assert run(world, "install").returncode == 1  # no client found: Claude Code's refusal says what to do
    assert run(world, "install", "--host", "codex").returncode == 0
    untrusted = run(world, "doctor")
    assert untrusted.returncode == 1 and "FAIL codex wiring" in untrusted.stdout and "hook trust" in untrusted.stdout
    assert "does not exist; start Claude Code" not in untrusted.stdout
    trust_codex_hooks(world)
    doctor = run(world, "doctor")
    assert doctor.returncode == 0, doctor.stdout
    assert "ok   codex wiring" in doctor.stdout and "trusted in config.toml" in doctor.stdout
    permissions = run(world, "permissions")
    assert permissions.returncode == 0, permissions.stdout + permissions.stderr
    assert permissions.stdout.rstrip().endswith("ok")


def test_a_gemini_only_user_gets_a_green_doctor_once_gemini_trusts_the_folder(world: World) -> None:
    alone(world)
    project = world.project("proj")
    assert run(world, "install", "--host", "gemini").returncode == 0
    untrusted = run(world, "doctor", "--json")
    found = {c["name"]: c for c in json.loads(untrusted.stdout)["checks"]}
    assert untrusted.returncode == 1 and found["gemini wiring"]["status"] == "fail"
    assert "folder trust" in found["gemini wiring"]["detail"] and "Disabled" in found["gemini wiring"]["detail"]
    assert found["wiring"]["status"] == "skip"  # no ~/.claude: not this user's client
    trust_folder_in_gemini(world, project)
    doctor = run(world, "doctor")
    assert doctor.returncode == 0, doctor.stdout
    assert run(world, "permissions").returncode == 0


def test_doctor_follows_gemini_own_trust_rules(world: World) -> None:
    alone(world)
    project = world.project("proj")
    assert run(world, "install", "--host", "gemini").returncode == 0

    def status() -> str:
        checks = json.loads(run(world, "doctor", "--json").stdout)["checks"]
        return next(c["status"] for c in checks if c["name"] == "gemini wiring")

    trust_folder_in_gemini(world, project / "pkg", "TRUST_PARENT")  # the rule's parent: the project
    assert status() == "ok"
    (world.home / ".gemini" / "trustedFolders.json").write_text(
        json.dumps({str(project.parent): "TRUST_FOLDER", str(project): "DO_NOT_TRUST"})  # the longest rule wins
    )
    assert status() == "fail"
    settings = world.home / ".gemini" / "settings.json"
    doc = json.loads(settings.read_text())
    doc["security"] = {"folderTrust": {"enabled": False}}  # Gemini then trusts every folder
    settings.write_text(json.dumps(doc))
    assert status() == "ok"


def test_uninstall_purge_without_a_claude_folder_removes_the_spool(world: World) -> None:
    alone(world)
    assert run(world, "send", "hello").returncode == 0
    assert world.spool_root.is_dir()
    rc, shown = in_pty(world, "uninstall", "--purge", answer="y")  # the human, confirming at a terminal
    assert rc == 0, shown
    assert not world.spool_root.exists()
    assert "nothing to withdraw" in shown


def test_a_project_install_makes_its_claude_folder_and_names_no_one_users_venv(world: World) -> None:
    project = world.project("shared")
    dry = run(world, "install", "--target", "./.claude", "--dry-run", "--json", cwd=project)
    assert dry.returncode == 0, dry.stderr
    assert not (project / ".claude").exists()
    out = run(world, "install", "--target", "./.claude", cwd=project)
    assert out.returncode == 0, out.stderr
    assert files(json.loads(dry.stdout)["changes"]) == [
        (str(project / name), "create")
        for name in (
            ".claude/settings.json",
            ".mcp.json",
            ".claude/hooks/ways/attend-drain-stop.sh",
            ".claude/hooks/ways/attend-wait-stop.sh",
            ".claude/hooks/ways/attend-guard-pre.sh",
            ".claude/hooks/ways/attend-compact-start.sh",
            ".claude/hooks/ways/attend-edit-pre.sh",
            ".claude/skills/attend/SKILL.md",
        )
    ]
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["attend"]
    assert server["command"] == "attend"  # whoever clones the project runs their own attend from PATH
    committed = [*(project / ".claude").rglob("*"), project / ".mcp.json"]
    venv = str(Path(ATTEND).parent)
    assert not [p for p in committed if p.is_file() and venv in p.read_text()]
    assert "work for whoever clones the project" in out.stdout
    assert run(world, "uninstall", "--target", "./.claude", cwd=project).returncode == 0
    assert sorted(project.iterdir()) == []
