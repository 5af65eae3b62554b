"""Issue 17 with the real client: an armed keepwarm reaches the model through Monitor once per idle
stretch (the idle threshold shortened by config), and the keepwarm card reads the transcript the real
client wrote (its model, its context)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.e2e.fake_api import Entry, Reply, Request, bash, call, done, tool_search
from tests.e2e.harness import E2EWorld, expect_ok, latest_user_texts, session_id_of, wait_for

pytestmark = pytest.mark.e2e


def keepwarm_events(req: Request) -> list[str]:
    events = re.findall(r"<event>(.*?)</event>", "\n".join(latest_user_texts(req)), re.S)
    return [e for e in events if "keepwarm:" in e]


def test_an_armed_session_receives_one_keepwarm_line_per_idle_stretch_and_the_card_reads_its_transcript(
    e2e: E2EWorld,
) -> None:
    config = e2e.home / ".config" / "attend" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("keepwarm:\n  idle_seconds: 5\n  min_tokens: 1\nsensors:\n  keepwarm: {interval: 1}\n")
    e2e.settings({"permissions": {"allow": ["Bash(attend:*)"]}})
    state: dict[str, Any] = {"stretches": 0}

    def armed(req: Request) -> Reply:
        assert "keepwarm on for 1h00m" in expect_ok(req, "attend keepwarm on").text
        return tool_search("Monitor", "TaskStop")

    def monitor_up(req: Request) -> Reply:
        started = expect_ok(req, "Monitor attend run")
        state["task"] = re.search(r"task (\w+)", started.text).group(1)  # type: ignore[union-attr]
        sid = session_id_of(req)
        assert sid
        wait_for(lambda: e2e.sensor_live(sid), 30, "attend run to be live")
        return done("Waiting.")

    def on_event(req: Request) -> Reply:
        if "card" in state:
            return done("Stopped.")
        if "asked" in state:
            state["card"] = json.loads(expect_ok(req, "attend keepwarm status").text)
            return call("TaskStop", {"task_id": state["task"]})
        if keepwarm_events(req):
            state["stretches"] += 1
            if state["stretches"] == 2:
                state["asked"] = True
                return bash("attend keepwarm status --json", "the keepwarm card")
            return done("ok")  # the one-word answer: its turn starts the next idle stretch
        return done("Still waiting.")

    script: list[Entry] = [
        bash("attend keepwarm on 1h", "arm keepwarm"),
        armed,
        call("Monitor", {"command": "attend run", "description": "attend", "timeout_ms": 120000}),
        monitor_up,
        *[on_event] * 20,
    ]
    run = e2e.claude(script)

    assert run.rc == 0 and not run.timed_out, run.explain()
    lines = [e for e in run.monitor_events() if "keepwarm:" in e]
    assert len(lines) == 2, run.explain()  # one per idle stretch: the answer to the first began the second
    assert all(ln.startswith("[attend sensor=keepwarm priority=medium] keepwarm: ") for ln in lines)
    assert all(ln.endswith("tokens. Reply with one word and no tools.") for ln in lines)
    turns_with_one = [r for r in run.turns if keepwarm_events(r)]
    assert len(turns_with_one) == 2 and all(len(keepwarm_events(r)) == 1 for r in turns_with_one)
    card = state["card"]["card"]
    requested = {t.body.get("model") for t in run.turns}
    assert card["model"] in requested  # the model the client asked for, as its transcript recorded it
    assert card["tokens"] > 0 and card["warm"] is True
    assert card["keepwarm"].startswith("on, ")
