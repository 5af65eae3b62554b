"""The socket conduit with the real client (2.1.332): ``attend mcp`` posts a session's mail to the
session's own inbox socket. A busy session gets a message sent during a tool call in its very next
request; the interactive TUI idle at its prompt is woken by it; with Monitor armed as well, the
message is still shown once; after the client's ``/clear``, the socket serves the session's new id; and
where ``attend mcp`` is given no socket, the waiter wakes the idle session instead, once.
Every session here is wired by ``attend install``, so the drain and the
waiter are there too, and exactly-once is across all of them.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from typing import Any

import pytest

from attend.conduits import inbox_socket, waiter
from attend.domain.core.ids import sent_form as short
from attend.domain.sessions import mcp_markers
from attend.hosts import DEFAULT
from tests.e2e.fake_api import Entry, FakeAPI, Reply, Request, bash, call, done, tool_search
from tests.e2e.harness import ATTEND_BIN, E2EWorld, expect_ok, latest_user_texts, session_id_of, user_texts, wait_for
from tests.e2e.tui import TUI

SOCKET_ENV = DEFAULT.inbox_env[0]  # the client's inbox socket

pytestmark = pytest.mark.e2e

POSTED = "[attend] delivered by attend"


def install(e2e: E2EWorld) -> None:
    out = e2e.attend("install", "--target", str(e2e.claude_dir))
    assert out.returncode == 0, out.stdout + out.stderr
    path = e2e.claude_dir / "settings.json"
    settings = json.loads(path.read_text())
    settings["permissions"]["allow"].append("Bash")  # the scripted `sleep`
    path.write_text(json.dumps(settings))


def serving(e2e: E2EWorld, sid: str | None) -> bool:
    return bool(sid) and inbox_socket.served_by(e2e.spool, str(sid)) is not None


def turns_with(requests: list[Request], body: str) -> list[int]:
    return [i for i, r in enumerate(requests) if any(body in t for t in latest_user_texts(r))]


def seen(e2e: E2EWorld, sid: str) -> list[str]:
    return [p.name for p in (e2e.spool_root / "sessions" / sid / "cur").iterdir()]


def claimed(e2e: E2EWorld, sid: str) -> list[str]:
    folder = e2e.spool_root / "sessions" / sid / "claimed"
    return [p.name for p in folder.iterdir()] if folder.is_dir() else []


def test_a_busy_session_gets_a_message_sent_during_a_tool_call_in_its_next_request_exactly_once(
    e2e: E2EWorld,
) -> None:
    install(e2e)
    body = f"mid-turn {uuid.uuid4().hex[:8]}"
    flag = e2e.tmp / "sent"
    state: dict[str, Any] = {}

    def joined(req: Request) -> Reply:
        expect_ok(req, "attend join")
        state["sid"] = sid = session_id_of(req)
        wait_for(lambda: serving(e2e, sid), 30, "attend mcp to serve the socket")
        # The tool waits for the send (so the message lands during the call), then sleeps 3 s.
        return bash(f"until [ -e {flag} ]; do sleep 0.05; done; sleep 3", "wait, then sleep")

    def after_the_sleep(req: Request) -> Reply:
        state["texts"] = latest_user_texts(req)
        return done("Read it.")

    def operator() -> None:
        wait_for(lambda: e2e.spool_root.joinpath("sessions", str(state.get("sid")), "new").is_dir(), 60, "join")
        wait_for(lambda: "sid" in state and api.consumed >= 2, 60, "the tool call")
        state["sent"] = e2e.human_send(body)
        flag.touch()

    api = FakeAPI([bash("attend join e2e"), joined, after_the_sleep])
    t = threading.Thread(target=operator, daemon=True)
    t.start()
    run = e2e.claude([], api=api, mcp_config=e2e.mcp_config())
    t.join(5)

    assert run.rc == 0 and not run.timed_out and not run.api.errors, run.explain()
    assert turns_with(run.turns, body) == [2], run.explain()
    [text] = [t for t in state["texts"] if body in t]
    assert POSTED in text and f"id {short(state['sent']['id'])}" in text and text.count(body) == 1, text
    assert sum(body in t for t in run.user_texts()) == 1, run.explain()
    assert not run.monitor_events() and not run.stop_hook_blocks(), run.explain()
    sid = str(state["sid"])
    assert any(state["sent"]["id"] in n for n in seen(e2e, sid)) and not claimed(e2e, sid)  # shown: seen


def test_with_monitor_armed_as_well_a_message_is_shown_once(e2e: E2EWorld) -> None:
    install(e2e)
    body = f"both armed {uuid.uuid4().hex[:8]}"
    flag = e2e.tmp / "sent"
    state: dict[str, Any] = {}

    def loop_up(req: Request) -> Reply:
        started = expect_ok(req, "Monitor attend run")
        state["task"] = re.search(r"task (\w+)", started.text).group(1)  # type: ignore[union-attr]
        state["sid"] = sid = session_id_of(req)
        wait_for(lambda: e2e.sensor_live(str(sid)), 30, "attend run to be live")
        wait_for(lambda: serving(e2e, sid), 30, "attend mcp to serve the socket")
        return bash(f"until [ -e {flag} ]; do sleep 0.05; done; sleep 3", "wait, then sleep")

    def on_input(req: Request) -> Reply:
        if "stopped" in state:
            return done("Stopped.")
        if any(body in t for t in user_texts([req])):
            state["stopped"] = True
            return call("TaskStop", {"task_id": state["task"]})
        return done("Still waiting.")

    def operator() -> None:
        wait_for(lambda: "sid" in state and api.consumed >= 3, 90, "the tool call")
        state["sent"] = e2e.human_send(body)
        flag.touch()

    script: list[Entry] = [
        tool_search("Monitor", "TaskStop"),
        call("Monitor", {"command": "attend run", "description": "attend messages", "timeout_ms": 120000}),
        loop_up,
        *[on_input] * 20,
    ]
    api = FakeAPI(script)
    t = threading.Thread(target=operator, daemon=True)
    t.start()
    run = e2e.claude([], api=api, mcp_config=e2e.mcp_config())
    t.join(5)

    assert run.rc == 0 and not run.timed_out and not run.api.errors, run.explain()
    assert "sent" in state, run.explain()
    assert sum(body in t for t in run.user_texts()) == 1, run.explain()  # once, whichever conduit won


def test_the_idle_interactive_session_is_woken_by_a_send_through_the_socket_exactly_once(e2e: E2EWorld) -> None:
    install(e2e)
    body = f"wake the tui {uuid.uuid4().hex[:8]}"
    state: dict[str, Any] = {}

    def joined(req: Request) -> Reply:
        expect_ok(req, "attend join")
        state["sid"] = session_id_of(req)
        return done("Joined; idle now.")

    def woken(req: Request) -> Reply:
        state["texts"] = latest_user_texts(req)
        return done("Got the message.")

    api = FakeAPI([bash("attend join e2e"), joined, woken, done("spare 1"), done("spare 2")])
    tui = TUI(e2e, api).start()
    try:
        tui.type("join the e2e channel")
        wait_for(lambda: "Joined; idle now." in tui.screen(), 90, "the first turn to end")
        wait_for(lambda: (tui.record() or {}).get("status") == "idle", 30, "the session to be idle")
        wait_for(lambda: serving(e2e, state.get("sid")), 30, "attend mcp to serve the socket")
        sent = e2e.human_send(body)
        wait_for(lambda: "texts" in state, 60, "the woken turn")
        wait_for(lambda: "Got the message." in tui.screen(), 30, "the answer on screen")
        sid = str(state["sid"])
        wait_for(lambda: any(sent["id"] in n for n in seen(e2e, sid)), 30, "the message marked seen")
        # The drain of the woken turn's end has run (the session is idle again) and showed nothing more.
        wait_for(lambda: (tui.record() or {}).get("status") == "idle", 30, "the session to be idle again")
    finally:
        tui.close()

    assert api.consumed == 3 and not api.errors, (api.consumed, api.errors)
    [text] = [t for t in state["texts"] if body in t]
    assert POSTED in text and f"id {short(sent['id'])}" in text and text.count(body) == 1, text
    assert sum(body in t for t in user_texts(api.turns)) == 1
    assert not claimed(e2e, sid)


def test_after_clear_the_socket_serves_the_new_session_id_and_the_old_ones_registration_is_gone(
    e2e: E2EWorld,
) -> None:
    install(e2e)
    body = f"after the clear {uuid.uuid4().hex[:8]}"
    state: dict[str, Any] = {}

    def joined(req: Request) -> Reply:
        expect_ok(req, "attend join")
        state["sid"] = session_id_of(req)
        return done("Joined; idle now.")

    def woken(req: Request) -> Reply:
        state["texts"] = latest_user_texts(req)
        return done("Got it after the clear.")

    api = FakeAPI([bash("attend join e2e"), joined, woken, done("spare 1"), done("spare 2")])
    tui = TUI(e2e, api).start()
    try:
        tui.type("join the e2e channel")
        wait_for(lambda: "Joined; idle now." in tui.screen(), 90, "the first turn to end")
        old = str(state["sid"])
        wait_for(lambda: serving(e2e, old), 30, "attend mcp to serve the socket")
        tui.type("/clear")
        wait_for(lambda: (tui.record() or {}).get("sessionId") not in (None, old), 60, "the record's new id")
        new = str((tui.record() or {})["sessionId"])
        wait_for(lambda: serving(e2e, new), 30, "attend mcp to serve the new id")
        assert not (e2e.spool_root / "sessions" / old / inbox_socket.STATE).exists()
        wait_for(lambda: (tui.record() or {}).get("status") == "idle", 30, "the session to be idle")
        sent = e2e.human_send("--to", new, body)
        wait_for(lambda: "texts" in state, 60, "the woken turn")
        wait_for(lambda: any(sent["id"] in n for n in seen(e2e, new)), 30, "the message marked seen")
    finally:
        tui.close()

    [text] = [t for t in state["texts"] if body in t]
    assert POSTED in text and text.count(body) == 1, text
    assert sum(body in t for t in user_texts(api.turns)) == 1


def test_where_attend_mcp_gets_no_socket_the_waiter_wakes_the_idle_session_instead_exactly_once(
    e2e: E2EWorld,
) -> None:
    install(e2e)
    body = f"no socket {uuid.uuid4().hex[:8]}"
    state: dict[str, Any] = {}
    # attend mcp as a client without the socket starts it: the variable unset in its environment.
    attend = {"type": "stdio", "command": "sh", "args": ["-c", f"unset {SOCKET_ENV}; exec {ATTEND_BIN} mcp"]}
    config = e2e.mcp_config({"attend": attend})

    def joined(req: Request) -> Reply:
        expect_ok(req, "attend join")
        state["sid"] = session_id_of(req)
        return done("Joined; idle now.")

    def woken(req: Request) -> Reply:
        state["texts"] = latest_user_texts(req)
        return done("Got the message.")

    api = FakeAPI([bash("attend join e2e"), joined, woken, done("spare 1"), done("spare 2")])
    tui = TUI(e2e, api, args=["--strict-mcp-config", "--mcp-config", str(config)]).start()
    try:
        tui.type("join the e2e channel")
        wait_for(lambda: "Joined; idle now." in tui.screen(), 90, "the first turn to end")
        sid = str(state["sid"])
        wait_for(lambda: mcp_markers.mcp_live(e2e.spool, sid), 30, "attend mcp to run for the session")
        wait_for(lambda: waiter.waiter_live(e2e.spool, sid), 30, "the waiter to wait")
        assert not serving(e2e, sid)  # attend mcp runs but does not serve the socket: the waiter stays
        sent = e2e.human_send(body)
        wait_for(lambda: "texts" in state, 60, "the woken turn")
        wait_for(lambda: any(sent["id"] in n for n in seen(e2e, sid)), 30, "the message marked seen")
        wait_for(lambda: (tui.record() or {}).get("status") == "idle", 30, "the session to be idle again")
    finally:
        tui.close()

    assert api.consumed == 3 and not api.errors, (api.consumed, api.errors)
    [text] = [t for t in state["texts"] if body in t]
    assert POSTED not in text and f"id {short(sent['id'])}" in text and text.count(body) == 1, text
    assert sum(body in t for t in user_texts(api.turns)) == 1
    assert not claimed(e2e, sid)
