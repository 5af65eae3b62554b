"""The PreToolUse guard (hooks/ways/attend-guard-pre.sh): its closed list, the near-misses it must
allow, Monitor never refused, exit 0 or 2 only, and any internal failure allowing with one line."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from attend.setup.data import data_file
from tests.support import World

SCRIPT = data_file("hooks", "ways", "attend-guard-pre.sh")


def call(
    world: World, tool: str, tool_input: dict[str, Any], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    payload = {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input}
    payload["cwd"] = str(world.project("proj"))
    return subprocess.run(
        [str(SCRIPT)],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env={**world.env, **(env or {})},
        cwd=str(world.tmp),
        timeout=30,
    )


def refused(out: subprocess.CompletedProcess[str]) -> bool:
    assert out.returncode in (0, 2), out
    if out.returncode == 2:
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 2 and "refused" in lines[0] and lines[1].startswith("[attend-guard] Repair:")
        return True
    assert out.stderr == "", out.stderr
    return False


RUN_REFUSED = [
    "attend run",
    "attend run --catchup",
    'bash -c "attend run"',
    "sh -lc 'attend run'",
    "timeout 30 attend run",
    "timeout -k 5 600 attend run",
    "cd /tmp && attend run",
    "nohup attend run &",
    "ATTEND_X=1 attend run",
    "x=$(attend run)",
    'echo "$(attend run)"',
    "eval 'attend run'",
    "/usr/local/bin/attend run",
]
RUN_ALLOWED = [
    "echo attend run",
    "attend runner",
    'echo "attend run"',
    "git commit -m 'attend run'",
    "attend status",
    "attend inbox --limit 5",
    "grep -r 'attend run' docs",
]


@pytest.mark.parametrize("command", RUN_REFUSED)
def test_attend_run_from_bash_is_refused(world: World, command: str) -> None:
    out = call(world, "Bash", {"command": command, "description": "d"})
    assert refused(out)
    assert "Monitor" in out.stderr


@pytest.mark.parametrize("command", RUN_ALLOWED)
def test_near_misses_of_attend_run_are_allowed(world: World, command: str) -> None:
    assert not refused(call(world, "Bash", {"command": command}))


def test_attend_run_under_monitor_is_allowed(world: World) -> None:
    monitor = {"command": "attend run", "description": "attend", "timeout_ms": 600000}
    assert not refused(call(world, "Monitor", monitor))
    # The same call in the Bash shape that carries Monitor's timeout_ms is a Monitor launch too.
    assert not refused(call(world, "Bash", monitor))
    assert refused(call(world, "Bash", {"command": "attend run", "description": "attend"}))  # positive control


def folder_calls(world: World) -> list[tuple[str, dict[str, Any]]]:
    spool = world.spool_root
    cfg = world.home / ".config" / "attend"
    return [
        ("Bash", {"command": f"cat {spool}/rooms/open/new/x"}),
        ("Bash", {"command": "ls ~/.cache/attend/sessions"}),
        ("Bash", {"command": "cat $HOME/.config/attend/targets/x/state.json"}),
        ("Bash", {"command": "grep -r hello ${XDG_CACHE_HOME}/attend"}),
        ("Bash", {"command": "rm -rf $ATTEND_HOME/rooms"}),
        ("Bash", {"command": "cd ~/.cache && cat attend/rooms/x"}),
        ("Bash", {"command": "echo hi > ~/.cache/attend/rooms/open/new/forged"}),
        ("Bash", {"command": "cat ~/.cache/*/rooms/open/new/x"}),
        ("Bash", {"command": "ls ~/.cache/att*"}),
        ("Bash", {"command": "head ~/.c*/attend/scenes.yaml"}),
        ("Bash", {"command": "find . -name x", "description": "d"} | {"command": f"find {cfg} -name x"}),
        ("Read", {"file_path": f"{spool}/sessions/s/new/x"}),
        ("Read", {"file_path": "../../home/.cache/attend/x"}),
        ("Read", {"file_path": str(world.project("proj") / "link" / "rooms")}),
        ("Edit", {"file_path": f"{cfg}/x.yaml", "old_string": "a", "new_string": "b"}),
        ("MultiEdit", {"file_path": f"{cfg}/x.yaml", "edits": []}),
        ("Write", {"file_path": f"{spool}/rooms/open/new/x", "content": "x"}),
        ("NotebookEdit", {"notebook_path": f"{spool}/x.ipynb", "new_source": ""}),
        ("Glob", {"pattern": "**/*", "path": str(spool)}),
        ("Glob", {"pattern": ".cache/attend/**/*", "path": str(world.home)}),
        ("Grep", {"pattern": "hello", "path": str(cfg)}),
        ("Grep", {"pattern": "hello", "path": str(world.home), "glob": ".cache/attend/**"}),
    ]


def test_every_path_form_into_attends_folders_is_refused(world: World) -> None:
    assert world.spool.root.is_dir()  # the spool exists, with a symlink to it planted in the project
    (world.project("proj") / "link").symlink_to(world.spool_root)
    env = {"ATTEND_HOME": ""}
    for tool, tool_input in folder_calls(world):
        if "$ATTEND_HOME" in str(tool_input):
            env = {"ATTEND_HOME": str(world.spool_root)}
        out = call(world, tool, tool_input, env)
        assert refused(out), (tool, tool_input)
        assert "attend's own folder" in out.stderr and "attend inbox" in out.stderr


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("Bash", {"command": "ls ~/.cache"}),
        ("Bash", {"command": "attend inbox"}),
        ("Bash", {"command": "cat ~/.cache/attendance.txt"}),
        ("Bash", {"command": "ls ~/.cache/*.txt ~/*"}),
        ("Bash", {"command": "ls ~/*/attend"}),
        ("Read", {"file_path": "/etc/hostname"}),
        ("Read", {"file_path": "README.md"}),
        ("Grep", {"pattern": "x", "path": "."}),
        ("Glob", {"pattern": "**/*.py"}),
        ("WebFetch", {"url": "file:///home/.cache/attend"}),
        ("Monitor", {"command": "tail -f ~/.cache/attend/log", "timeout_ms": 1000, "description": "d"}),
    ],
)
def test_calls_outside_attends_folders_are_allowed(world: World, tool: str, tool_input: dict[str, Any]) -> None:
    assert not refused(call(world, tool, tool_input))


def test_attend_commands_themselves_are_exempt_from_the_folder_check(world: World) -> None:
    assert not refused(call(world, "Bash", {"command": f"attend inbox --room open {world.spool_root}"}))
    assert refused(call(world, "Bash", {"command": f"attend status; cat {world.spool_root}/x"}))


@pytest.mark.parametrize("stdin", ["not json", "", "[1, 2]", '{"tool_name": "Bash", "tool_input": "x"}'])
def test_bad_input_allows_with_at_most_one_stderr_line(world: World, stdin: str) -> None:
    out = subprocess.run([str(SCRIPT)], input=stdin, capture_output=True, text=True, env=world.env, timeout=30)
    assert out.returncode == 0
    assert len(out.stderr.strip().splitlines()) <= 1


def test_bad_json_says_it_allowed(world: World) -> None:
    out = subprocess.run([str(SCRIPT)], input="{", capture_output=True, text=True, env=world.env, timeout=30)
    assert out.returncode == 0 and out.stderr.startswith("[attend-guard] internal error, allowing")


def test_a_missing_interpreter_allows_with_one_stderr_line(world: World, tmp_path: Path) -> None:
    # No attend and no python3 on PATH: the guard cannot run, and must say so rather than refuse.
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    payload = json.dumps({"tool_name": "Bash", "tool_input": {"command": "attend run"}})
    out = subprocess.run(
        ["/bin/sh", str(SCRIPT)],
        input=payload,
        capture_output=True,
        text=True,
        env={**world.env, "PATH": str(empty)},
        timeout=30,
    )
    assert out.returncode == 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "allowing" in lines[0]


def test_the_guard_uses_attends_own_interpreter_even_without_python3_on_path(world: World, tmp_path: Path) -> None:
    only_attend = tmp_path / "bin"
    only_attend.mkdir()
    attend = Path(world.env["PATH"].split(os.pathsep)[0]) / "attend"
    (only_attend / "attend").symlink_to(attend)
    payload = json.dumps({"tool_name": "Bash", "tool_input": {"command": "attend run"}})
    out = subprocess.run(
        ["/bin/sh", str(SCRIPT)],
        input=payload,
        capture_output=True,
        text=True,
        env={**world.env, "PATH": str(only_attend)},
        timeout=30,
    )
    assert out.returncode == 2, out.stderr


def test_the_guard_header_marks_it_interim() -> None:
    head = SCRIPT.read_text().splitlines()[:4]
    assert any("INTERIM" in line for line in head)
