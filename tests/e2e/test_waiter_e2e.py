"""Issue 13, the waiting conduit, with the real client: a session wired by `attend install` alone, that
never arms Monitor, is woken from idle by a message (once); with Monitor armed too the message comes
once, through the loop; a burst is one wake; and no waiter outlives its Claude process.

`-p` waits for every background hook, so attend's waiter steps aside at once in a headless session,
and such a run ends after its last turn by itself. The tests of waking run as a headless worker that
opted in (`conduits.headless_wait`): its waiter waits that many seconds after each turn, then the run
ends by itself.
"""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from attend import layout
from attend.conduits import waiter
from attend.domain.core.ids import sent_form as short
from tests.e2e.fake_api import Entry, Reply, Request, bash, call, done, tool_search
from tests.e2e.harness import E2EWorld, expect_ok, latest_user_texts, session_id_of, wait_for
from tests.support import post

pytestmark = pytest.mark.e2e

FEEDBACK = "Stop hook feedback"


def install(e2e: E2EWorld) -> None:
    out = e2e.attend("install", "--target", str(e2e.claude_dir))
    assert out.returncode == 0, out.stdout + out.stderr


STAY = 30  # seconds an opted-in headless run waits after each turn: the operator sends well within it


def headless_wait(e2e: E2EWorld, seconds: int = STAY) -> None:
    """Opt this headless run in to being woken: each turn end's waiter waits ``seconds``, then leaves."""
    config = Path(layout.config_root(e2e.env)) / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"conduits:\n  headless_wait: {seconds}\n")


def waiter_pid(e2e: E2EWorld, sid: str) -> int | None:
    """The pid of the session's live waiter, from the file it names itself in."""
    try:
        text = (e2e.spool_root / "sessions" / sid / waiter.WAITER).read_text()
    except OSError:
        return None
    return int(text.split(" ")[0]) if waiter.waiter_live(e2e.spool, sid) else None


def turns_with(requests: list[Request], body: str) -> list[int]:
    """The turns whose new input (after the model's last message) carries ``body``."""
    return [i for i, r in enumerate(requests) if any(body in t for t in latest_user_texts(r))]


def test_a_headless_run_that_joined_a_channel_ends_by_itself_with_no_waiter_armed(e2e: E2EWorld) -> None:
    """`attend install` alone, nothing in config: the waiter wired at every turn end steps aside for a
    `claude -p` run before it arms, so nothing of attend holds the client open and the run exits on
    its own (before, it waited a day). The run's timeout is only the failure bound; how soon it ends
    is measured in bench/wake.py headless (docs/benchmarks.md)."""
    install(e2e)
    state: dict[str, Any] = {}

    def joined(req: Request) -> Reply:
        expect_ok(req, "attend join")
        state["sid"] = session_id_of(req)
        return done("Joined; that was all.")

    run = e2e.claude([bash("attend join e2e"), joined], timeout=90)
    assert not run.timed_out and run.rc == 0 and not run.api.errors, run.explain()
    assert len(run.turns) == 2 and run.api.exhausted == 0, run.explain()
    session = e2e.spool_root / "sessions" / state["sid"]
    assert (session / "enrolled").exists()
    assert not (session / waiter.WAITER).exists()  # no waiter ever named itself: each stepped aside at once
    assert not (Path(layout.config_root(e2e.env)) / "config.yaml").exists()
    assert not _waiters_of(run.pid)


def test_an_idle_session_is_woken_by_a_message_sent_after_its_turn_ended_exactly_once(e2e: E2EWorld) -> None:
    install(e2e)
    headless_wait(e2e)
    body = f"wake up {uuid.uuid4().hex[:8]}"
    state: dict[str, Any] = {}

    def joined_then_idle(req: Request) -> Reply:
        expect_ok(req, "attend join")
        state["sid"] = session_id_of(req)
        return done("Joined; nothing else to do.")

    def woken(req: Request) -> Reply:
        return done("Read it.")

    def operator() -> None:
        wait_for(lambda: state.get("sid") and waiter_pid(e2e, state["sid"]), 60, "the waiter to arm at turn end")
        time.sleep(2)  # the scenario: the operator sends two seconds into the idle time
        state["sent"] = e2e.human_send(body)

    t = threading.Thread(target=operator, daemon=True)
    t.start()
    run = e2e.claude([bash("attend join e2e"), joined_then_idle, woken])
    t.join(5)

    assert run.rc == 0 and not run.timed_out and not run.api.errors, run.explain()
    assert len(run.turns) == 3 and run.api.exhausted == 0, run.explain()
    assert turns_with(run.turns, body) == [2], run.explain()
    [text] = [t for t in latest_user_texts(run.turns[2]) if body in t]
    assert FEEDBACK in text and f"id {short(state['sent']['id'])}" in text, text
    assert text.count(body) == 1, text
    assert sum(body in t for t in run.user_texts()) == 1, run.explain()  # across every request
    assert not run.monitor_events() and not run.stop_hook_blocks(), run.explain()


def test_a_reply_to_the_short_id_a_wake_shows_threads_to_that_message(e2e: E2EWorld) -> None:
    """The wake names each message by the short form of its id; the model answers one by that form
    (``attend reply --re <short>``), and the reply threads to the full id of the message shown."""
    install(e2e)
    headless_wait(e2e, 15)
    body = f"which branch? {uuid.uuid4().hex[:8]}"
    state: dict[str, Any] = {}

    def joined_then_idle(req: Request) -> Reply:
        expect_ok(req, "attend join")
        state["sid"] = session_id_of(req)
        return done("Joined; nothing else to do.")

    def woken(req: Request) -> Reply:
        [text] = [t for t in latest_user_texts(req) if body in t]
        state["ref"] = ref = re.search(r", id ([0-9]{10}\.M[0-9]{6})\):", text)[1]  # type: ignore[index]
        return bash(f'attend reply --json --re {ref} "main, as agreed"')

    def replied(req: Request) -> Reply:
        state["reply"] = expect_ok(req, "attend reply").json()
        return done("Answered.")

    def operator() -> None:
        wait_for(lambda: state.get("sid") and waiter_pid(e2e, state["sid"]), 60, "the waiter to arm at turn end")
        state["sent"] = e2e.human_send(body)

    t = threading.Thread(target=operator, daemon=True)
    t.start()
    run = e2e.claude([bash("attend join e2e"), joined_then_idle, woken, replied])
    t.join(5)

    assert run.rc == 0 and not run.timed_out and not run.api.errors, run.explain()
    sent = state["sent"]["id"]
    assert state["ref"] == short(sent) and len(state["ref"]) < len(sent)
    assert state["reply"]["re"] == sent, state["reply"]  # threaded to the message the wake showed
    [answer] = [m for m in e2e.signals() if m.body == "main, as agreed"]
    assert answer.re == sent and answer.from_id == state["sid"]


def test_with_monitor_armed_as_well_the_message_arrives_once_through_the_loop(e2e: E2EWorld) -> None:
    install(e2e)
    headless_wait(e2e)  # the waiter is there at every turn end, and must leave the message to the loop
    body = f"via the loop {uuid.uuid4().hex[:8]}"
    state: dict[str, Any] = {}

    def loop_up(req: Request) -> Reply:
        started = expect_ok(req, "Monitor attend run")
        state["task"] = re.search(r"task (\w+)", started.text).group(1)  # type: ignore[union-attr]
        state["sid"] = sid = session_id_of(req)
        wait_for(lambda: e2e.sensor_live(str(sid)), 30, "attend run to be live")
        return done("Waiting for events.")

    def on_event(req: Request) -> Reply:
        if "stopped" in state:
            return done("Stopped.")
        if any(body in t for t in latest_user_texts(req)):
            state["stopped"] = True
            return call("TaskStop", {"task_id": state["task"]})
        return done("Still waiting.")

    def operator() -> None:
        wait_for(lambda: "sid" in state, 60, "the loop to be up")
        spool = e2e.spool_root / "sessions" / str(state["sid"])
        # The turn has ended and the waiter started at its end has stepped aside.
        wait_for(lambda: (spool / "heartbeat").exists() and not (spool / waiter.WAITER).exists(), 30, "turn end")
        time.sleep(2)
        state["sent"] = e2e.human_send(body)

    t = threading.Thread(target=operator, daemon=True)
    t.start()
    script: list[Entry] = [
        tool_search("Monitor", "TaskStop"),
        call("Monitor", {"command": "attend run", "description": "attend messages", "timeout_ms": 120000}),
        loop_up,
        *[on_event] * 20,
    ]
    run = e2e.claude(script)
    t.join(5)

    assert run.rc == 0 and not run.timed_out and not run.api.errors, run.explain()
    assert sum(body in e for e in run.monitor_events()) == 1, run.explain()
    assert not [t for t in run.user_texts() if FEEDBACK in t and body in t], run.explain()
    assert not run.stop_hook_blocks(), run.explain()


def test_three_messages_that_land_while_the_waiter_sleeps_arrive_in_one_wake(e2e: E2EWorld) -> None:
    install(e2e)
    headless_wait(e2e)
    bodies = [f"burst {i} {uuid.uuid4().hex[:6]}" for i in range(3)]
    state: dict[str, Any] = {}

    def joined_then_idle(req: Request) -> Reply:
        expect_ok(req, "attend join")
        state["sid"] = session_id_of(req)
        return done("Idle.")

    def woken(req: Request) -> Reply:
        return done("Read them.")

    def operator() -> None:
        wait_for(lambda: state.get("sid") and waiter_pid(e2e, state["sid"]), 60, "the waiter to arm")
        spool = e2e.spool
        # Land together as the waiter sees them: under the session's show lock, which the waiter takes
        # to claim, so a loaded machine that parks this thread between posts cannot split the burst.
        with spool.show_lock(state["sid"]):
            for b in bodies:
                post(spool, "open", b)

    t = threading.Thread(target=operator, daemon=True)
    t.start()
    run = e2e.claude([bash("attend join e2e"), joined_then_idle, woken])
    t.join(5)

    assert run.rc == 0 and not run.timed_out and not run.api.errors, run.explain()
    assert len(run.turns) == 3, run.explain()
    for b in bodies:
        assert turns_with(run.turns, b) == [2], run.explain()
    [text] = [t for t in latest_user_texts(run.turns[2]) if bodies[0] in t]
    assert "[attend] 3 message(s)" in text, text


def _waiters_of(claude_pid: int) -> list[int]:
    """Every `attend wait` process started for that Claude process (CLAUDE_PID in its environment)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"wait" in cmd and b"--hook" in cmd and f"CLAUDE_PID={claude_pid}".encode() in env:
            found.append(int(entry))
    return found


def test_after_the_claude_process_exits_no_waiter_of_that_session_is_left(e2e: E2EWorld) -> None:
    install(e2e)
    headless_wait(e2e, 3600)  # a waiter that would outlive the test unless its client's end ends it
    state: dict[str, Any] = {}

    def joined_then_idle(req: Request) -> Reply:
        expect_ok(req, "attend join")
        state["sid"] = session_id_of(req)
        return done("Idle.")

    c = e2e.start([bash("attend join e2e"), joined_then_idle])
    wait_for(lambda: state.get("sid") and waiter_pid(e2e, state["sid"]), 60, "the waiter to arm")
    assert _waiters_of(c.pid), "the waiter runs with CLAUDE_PID of its client"
    os.kill(c.pid, 9)  # the client alone; whatever it started is left to notice
    c.wait()
    # The liveness interval (HEARTBEAT_FRESH, 90 s) bounds it; the waiter's pidfd makes it prompt.
    wait_for(lambda: not _waiters_of(c.pid), 90, "the waiter to leave after its client died")
    assert not (e2e.spool_root / "sessions" / state["sid"] / waiter.WAITER).exists()
