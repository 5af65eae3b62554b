"""An invalid config.yaml is never silent: each command that reads it says, in one stderr line, which
file and line do not apply and that the defaults are in force; doctor fails on it; and a relay: section
in such a file is reported as not read, never as "no relay configured"."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support import ATTEND, World

BROKEN = "retention:\n  max_age_days: 3\n bad: [\nrelay:\n  servers: [nats://127.0.0.1:4222]\n"


def attend(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ATTEND, *args], env=world.env, cwd=world.project("proj"), capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def broken(world: World) -> Path:
    path = world.home / ".config" / "attend" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(BROKEN)
    return path


@pytest.mark.parametrize("command", [["config"], ["config", "path"], ["peers"], ["sensors"]])
def test_a_command_that_reads_an_invalid_config_says_so_in_one_line(
    world: World, broken: Path, command: list[str]
) -> None:
    out = attend(world, *command)
    assert out.returncode == 0, out.stderr
    said = [line for line in out.stderr.splitlines() if str(broken) in line]
    assert len(said) == 1, out.stderr
    assert said[0].startswith(f"attend: warning: {broken}:3: not valid YAML")
    assert said[0].endswith("the defaults are in force until it is fixed")


def test_doctor_fails_on_an_invalid_config_and_names_its_line(world: World, broken: Path) -> None:
    out = attend(world, "doctor", "--json")
    assert out.returncode == 1
    found = {c["name"]: c for c in json.loads(out.stdout)["checks"]}
    assert found["config"]["status"] == "fail" and f"{broken}:3" in found["config"]["detail"]
    broken.write_text("retention:\n  max_age_days: 3\n")
    fixed = {c["name"]: c for c in json.loads(attend(world, "doctor", "--json").stdout)["checks"]}
    assert fixed["config"]["status"] == "ok" and str(broken) in fixed["config"]["detail"]


def test_a_relay_section_in_an_invalid_config_is_not_silently_off(world: World, broken: Path) -> None:
    check = attend(world, "relay", "--check")
    assert check.returncode == 1
    assert f"{broken}:4: relay: not read" in check.stdout + check.stderr
    assert "no relay configured" not in check.stdout + check.stderr
    found = {c["name"]: c for c in json.loads(attend(world, "doctor", "--json").stdout)["checks"]}
    assert found["relay"]["status"] == "fail" and "relay: not read" in found["relay"]["detail"]


def test_a_project_overlay_that_is_not_yaml_says_the_project_settings_do_not_apply(world: World) -> None:
    overlay = world.project("proj") / ".claude" / "attend.yaml"
    overlay.parent.mkdir(parents=True)
    overlay.write_text("context:\n threshold: [\n")
    out = attend(world, "config")
    said = [line for line in out.stderr.splitlines() if str(overlay) in line]
    assert len(said) == 1 and said[0].endswith("none of this project's settings applies until it is fixed"), said
