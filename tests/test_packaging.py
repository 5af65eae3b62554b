"""The wheel carries attend's data: built, installed into a fresh virtual environment (dependencies
from the package index), and run from outside the repository, `attend install` puts the settings,
the hook scripts and the skill in place from the wheel alone, and `attend web`'s page is there."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def run(argv: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(argv, capture_output=True, text=True, timeout=900, **kw)  # type: ignore[call-overload]
    assert out.returncode == 0, f"{argv}\n{out.stdout}\n{out.stderr}"
    return out  # type: ignore[no-any-return]


def test_a_wheel_in_a_fresh_venv_installs_settings_hooks_and_skill(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(REPO)], cwd=str(tmp_path))
    wheels = list(dist.glob("attend_bus-*.whl"))  # the distribution's name; the command is attend
    assert len(wheels) == 1
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False).create(env_dir)
    py = env_dir / "bin" / "python"
    run([str(py), "-m", "pip", "install", "--quiet", str(wheels[0])], cwd=str(tmp_path))
    shown = run([str(py), "-m", "pip", "show", "attend-bus"], cwd=str(tmp_path))
    assert "Name: attend-bus" in shown.stdout

    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {
        "HOME": str(home),
        "PATH": "/usr/bin:/bin",  # the venv is not on PATH, as in the README's install
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
    }
    # The data comes from the wheel (attend/_data), not from this checkout.
    where = run(
        [str(py), "-c", "from attend.setup.data import data_dir; print(data_dir('settings'))"], env=env, cwd=outside
    )
    assert str(env_dir) in where.stdout and str(REPO) not in where.stdout

    run([str(env_dir / "bin" / "attend"), "install", "--target", str(home / ".claude")], env=env, cwd=outside)
    settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert "mcp__attend__inbox_wait" in settings["permissions"]["allow"]
    stop = [h for g in settings["hooks"]["Stop"] for h in g["hooks"]]
    assert [h["command"] for h in stop] == [
        "~/.claude/hooks/ways/attend-drain-stop.sh",
        "~/.claude/hooks/ways/attend-wait-stop.sh",
    ]
    assert stop[1]["asyncRewake"] is True
    server = json.loads((home / ".claude.json").read_text())["mcpServers"]["attend"]
    assert server == {"type": "stdio", "command": str(env_dir / "bin" / "attend"), "args": ["mcp"]}
    for script in ("attend-drain-stop.sh", "attend-wait-stop.sh", "attend-guard-pre.sh"):
        assert os.access(home / ".claude" / "hooks" / "ways" / script, os.X_OK)
    # The hook runs the venv's attend by its path, whatever PATH the client has.
    drain = (home / ".claude" / "hooks" / "ways" / "attend-drain-stop.sh").read_text()
    assert f"attend={env_dir / 'bin' / 'attend'}\n" in drain
    assert (home / ".claude" / "skills" / "attend" / "SKILL.md").read_text().startswith("---\nname: attend")

    report = run([str(env_dir / "bin" / "attend"), "permissions", "--json"], env=env, cwd=outside)
    assert json.loads(report.stdout)["ok"] is True

    # `attend web`'s page ships inside the package, and its server's imports come with the dependencies.
    probe = "from attend.web import server as s; print(s.STATIC); print(sorted(p.name for p in s.STATIC.iterdir()))"
    page = run([str(py), "-c", probe], env=env, cwd=outside).stdout.splitlines()
    assert str(env_dir) in page[0]
    assert {"index.html", "app.js", "app.css", "favicon.svg"} <= set(json.loads(page[1].replace("'", '"')))
