"""Issue 3, the two conduits, with the real client: a human's message reaches session B's model once,
either through the Stop-hook drain at turn end or as a Monitor event from `attend run`, never both;
and a `reply` after a drain threads to the drained message.

Session B is a real `claude -p` whose model is scripted; the human is a plain `attend` subprocess with
no session in its ancestry, on the same HOME and spool.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from tests.e2e.fake_api import Entry, Reply, Request, bash, call, done, tool_search
from tests.e2e.harness import (
    E2EWorld,
    expect_ok,
    latest_user_texts,
    session_id_of,
    stop_hook_blocks,
    wait_for,
)

pytestmark = pytest.mark.e2e

DRAIN = "attend inbox --drain --format hook"


def drain_settings() -> dict[str, Any]:
    return {
        "permissions": {"allow": ["Bash(attend:*)"]},
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": DRAIN, "timeout": 30}]}]},
    }


def expect_drained(req: Request, body: str) -> None:
    if not any(body in b for b in stop_hook_blocks([req])):
        raise AssertionError(f"no Stop-hook block carrying {body!r} in this request: {latest_user_texts(req)}")


def test_a_message_sent_during_a_turn_reaches_the_model_once_through_the_stop_hook_drain(e2e: E2EWorld) -> None:
    e2e.settings(drain_settings())
    body = f"drain me {uuid.uuid4().hex[:8]}"

    def human_sends_then_turn_ends(req: Request) -> Reply:
        expect_ok(req, "attend join")
        e2e.human_send(body)
        return done("Joined; ending the turn.")

    def drained(req: Request) -> Reply:
        expect_drained(req, body)
        return done("Read it.")

    run = e2e.claude([bash("attend join e2e"), human_sends_then_turn_ends, drained])

    assert run.rc == 0 and not run.timed_out, run.explain()
    assert not run.api.errors, run.explain()
    blocks = run.stop_hook_blocks()
    assert len(blocks) == 1, run.explain()
    assert blocks[0].startswith(f'Stop hook blocking error from command: "{DRAIN}": ')
    assert body in blocks[0]
    # The second Stop call did not block: the client asked the model nothing more.
    assert len(run.turns) == 3 and run.api.exhausted == 0, run.explain()


def test_reply_after_a_drain_threads_to_the_drained_message(e2e: E2EWorld) -> None:
    e2e.settings(drain_settings())
    body = f"please answer {uuid.uuid4().hex[:8]}"
    answer = f"answered {uuid.uuid4().hex[:8]}"
    sent: dict[str, Any] = {}

    def human_sends_then_turn_ends(req: Request) -> Reply:
        expect_ok(req, "attend join")
        sent.update(e2e.human_send(body))
        return done("Joined; ending the turn.")

    def reply_to_it(req: Request) -> Reply:
        expect_drained(req, body)
        return bash(f'attend reply "{answer}"', "reply to the human")

    def replied(req: Request) -> Reply:
        expect_ok(req, "attend reply")
        return done("Replied.")

    run = e2e.claude([bash("attend join e2e"), human_sends_then_turn_ends, reply_to_it, replied])

    assert run.rc == 0 and not run.timed_out, run.explain()
    assert not run.api.errors, run.explain()
    replies = [s for s in e2e.signals() if s.body == answer]
    assert len(replies) == 1, run.explain()
    assert replies[0].from_id == run.session_id and replies[0].from_kind == "agent"
    assert replies[0].re == sent["id"]
    assert len(run.turns) == 4 and run.api.exhausted == 0, run.explain()


def _claimed(e2e: E2EWorld, sid: str, msg_id: str) -> bool:
    """The delivery has left ``new/``: a conduit took it (the loop, as no turn is ending yet)."""
    session = e2e.spool_root / "sessions" / sid
    if (session / "new" / msg_id).exists():
        return False
    return any(p.name.split(":", 1)[0] == msg_id for d in ("claimed", "cur") for p in (session / d).glob("*"))


def test_a_message_reaches_the_model_as_a_monitor_event_and_the_drain_does_not_repeat_it(e2e: E2EWorld) -> None:
    e2e.settings(drain_settings())
    body = f"monitor me {uuid.uuid4().hex[:8]}"
    state: dict[str, Any] = {}

    def loop_up_then_human_sends(req: Request) -> Reply:
        started = expect_ok(req, "Monitor attend run")
        state["task"] = re.search(r"task (\w+)", started.text).group(1)  # type: ignore[union-attr]
        sid = session_id_of(req)
        assert sid
        wait_for(lambda: e2e.sensor_live(sid), 30, "attend run to be live (attend peers: sensor)")
        state["sent"] = e2e.human_send(body)
        # Let the loop take it before this turn ends, so the Stop hook's drain runs with it claimed.
        wait_for(lambda: _claimed(e2e, sid, state["sent"]["id"]), 30, "the sensor loop to claim the message")
        return done("Waiting for events.")

    def on_event(req: Request) -> Reply:
        if "stopped" in state:
            return done("Stopped.")
        events = re.findall(r"<event>(.*?)</event>", "\n".join(latest_user_texts(req)), re.S)
        if any(body in e for e in events):
            state["stopped"] = True
            return call("TaskStop", {"task_id": state["task"]})
        return done("Still waiting.")

    script: list[Entry] = [
        tool_search("Monitor", "TaskStop"),
        call("Monitor", {"command": "attend run", "description": "attend messages", "timeout_ms": 60000}),
        loop_up_then_human_sends,
        *[on_event] * 20,
    ]
    run = e2e.claude(script)

    assert run.rc == 0 and not run.timed_out, run.explain()
    assert not run.api.errors, run.explain()
    carrying = [e for e in run.monitor_events() if body in e]
    assert len(carrying) == 1, run.explain()
    assert carrying[0].startswith("[attend sensor=peers")
    assert "message from" in carrying[0]
    assert not [b for b in run.stop_hook_blocks() if body in b], run.explain()
    assert state.get("stopped"), run.explain()
