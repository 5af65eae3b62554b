"""A process the real clients' shell tool leaves behind (``setsid -f``, its environment cleared with
``env -i``) after the tool has returned: still its session where what it inherited ties it to the
client (Claude Code holds its tool's output folder open; Gemini CLI holds the other end of its tool's
socket pair), and refused, never the human, where it kept nothing (docs/architecture/sessions.md,
"Processes that outlive their parent")."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.e2e.fake_api import bash, done
from tests.e2e.harness import ATTEND_BIN, E2EWorld
from tests.e2e.hosts import HostWorld, gemini_bin
from tests.support import wait_until

pytestmark = pytest.mark.e2e


def orphan(world: E2EWorld, out: Path, kept: bool) -> str:
    """The shell line: leave ``attend whoami --json`` behind, its stdout to ``out``; ``kept``: its
    stderr stays the tool's own (the client's), else everything is redirected."""
    clean = " ".join(shlex.quote(f"{k}={world.env[k]}") for k in ("HOME", "PATH", "USER"))
    rest = "" if kept else " 2>&1 < /dev/null"
    inner = f"sleep 1; exec {shlex.quote(ATTEND_BIN)} whoami --json > {shlex.quote(str(out))}{rest}"
    return f"setsid -f env -i {clean} sh -c {shlex.quote(inner)}; echo left"


def read(out: Path) -> dict[str, object]:
    wait_until(lambda: out.exists() and out.read_text().strip(), f"the orphan to write {out}")
    doc: dict[str, object] = json.loads(out.read_text())
    return doc


def test_claude_codes_tool_left_without_its_parent_is_its_session_or_refused(e2e: E2EWorld) -> None:
    e2e.settings({"permissions": {"allow": ["Bash(*)"]}})
    kept, dropped = e2e.tmp / "kept.json", e2e.tmp / "dropped.json"
    script = [
        bash(orphan(e2e, kept, True)),
        bash(orphan(e2e, dropped, False)),
        bash("sleep 4"),  # the client lives on while the orphans run
        done(),
    ]
    run = e2e.claude(script)
    assert run.rc == 0, run.explain()
    who = read(kept)
    assert who["session_id"] == run.session_id and who["kind"] == "agent", who
    assert str(who["evidence"]).startswith("kin: "), who
    refused = read(dropped)
    assert "cannot tell who is calling" in str(refused["error"]), refused  # never the human


def test_gemini_clis_tool_left_without_its_parent_is_its_session(tmp_path: Path) -> None:
    from tests.e2e.fake_gemini import FakeGemini, shell
    from tests.e2e.hosts import install

    gemini_bin()
    hw = HostWorld(tmp_path)
    try:
        kept = hw.tmp / "kept.json"
        api = FakeGemini([shell(orphan(hw, kept, True)), shell("sleep 4"), done()])
        hw.gemini_setup(api)
        install(hw, "gemini")
        run = hw.gemini([], api=api)
        assert run.rc == 0, run.explain()
        who = read(kept)
    finally:
        hw.close()
    assert who["kind"] == "agent" and who["host"] == "gemini", who
    assert str(who["evidence"]).startswith("kin: "), who
