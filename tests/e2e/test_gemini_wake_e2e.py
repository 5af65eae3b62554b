"""The real Gemini CLI in its interactive UI (tmux), against the scripted Gemini API: an idle session
whose settings enable steering is woken by a message through ``attend wait --once``, which its model
started in the background as attend's SessionStart context asks, and hears it exactly once; where
steering is off nothing is armed, and the message arrives at the next turn end instead."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.e2e.fake_api import Reply, Request, call, done
from tests.e2e.fake_gemini import FakeGemini, latest_output, shell
from tests.e2e.harness import ATTEND_BIN, wait_for
from tests.e2e.hosts import GeminiTUI, HostWorld, gemini_bin, install

STEERING = {"experimental": {"modelSteering": True}, "tools": {"shell": {"backgroundCompletionBehavior": "inject"}}}


@pytest.fixture
def hw(tmp_path: Path) -> Iterator[HostWorld]:
    gemini_bin()
    w = HostWorld(tmp_path)
    yield w
    w.close()


def settings(hw: HostWorld, api: FakeGemini, extra: dict[str, object]) -> None:
    path = hw.gemini_setup(api)
    doc = json.loads(path.read_text())
    doc.update(extra)
    path.write_text(json.dumps(doc, indent=2) + "\n")


def until(tui: GeminiTUI, check: Callable[[], object], timeout: float, what: str) -> None:
    """``wait_for``, and on a timeout what the UI shows and what reached the model."""
    try:
        wait_for(check, timeout, what)
    except TimeoutError as e:
        raise TimeoutError(f"{e}; the screen:\n{tui.screen()}\nuser texts: {tui.api.user_texts()}") from None


def session_of(hw: HostWorld) -> str:
    """The session attend's SessionStart hook recorded for the gemini process."""
    records = hw.home / ".gemini" / "attend" / "sessions"
    found = [json.loads(p.read_text())["sessionId"] for p in records.glob("*.json")] if records.is_dir() else []
    assert len(found) == 1, found
    return str(found[0])


def settled(hw: HostWorld, sid: str) -> bool:
    """The turn is over: its AfterAgent drain has left its verdict (attend/conduits/fastdrain.py)."""
    return (hw.spool_root / "sessions" / sid / "drained").exists()


def waiter_live(hw: HostWorld, sid: str) -> bool:
    from attend.conduits import waiter

    return waiter.live_pid(hw.spool, sid, "waiter") is not None


def test_an_idle_gemini_session_with_steering_is_woken_by_a_message_exactly_once(hw: HostWorld) -> None:
    api = FakeGemini([])
    settings(hw, api, STEERING)
    install(hw, "gemini")
    woke: list[str] = []

    def arm(req: Request) -> Reply:
        first = api.user_texts()
        assert any("attend wait --once" in t and t.startswith("<hook_context>") for t in first), first
        assert "joined #e2e" in latest_output(req), latest_output(req)
        return call("run_shell_command", {"command": f"{ATTEND_BIN} wait --once", "is_background": True})

    def wake(req: Request) -> Reply:
        woke.extend(t for t in api.user_texts() if "hello idle gemini" in t)
        return done("Heard it.")

    api.script = [shell(f"{ATTEND_BIN} join e2e"), arm, done("Waiting for messages."), wake]
    tui = GeminiTUI(hw, api).start()
    try:
        tui.type("go")
        until(tui, lambda: api.consumed >= 3, 180, "the turn that starts the waiter")
        sid = session_of(hw)
        until(tui, lambda: settled(hw, sid) and waiter_live(hw, sid), 120, "the session idle, its waiter waiting")
        hw.human_send("--to", sid, "hello idle gemini")
        until(tui, lambda: api.consumed >= 4, 120, "the wake")
        assert len(woke) == 1, api.user_texts()
        text = woke[0]
        assert text.startswith("User steering update:"), text  # Gemini's frame: a new turn, not a turn end
        assert (
            "message(s) from humans, not typed at your prompt" in text and "start `attend wait --once` again" in text
        ), text
        until(tui, lambda: settled(hw, sid) and api.consumed == 4, 60, "the woken turn to end")
    finally:
        tui.close()
    assert len([t for t in api.user_texts() if "hello idle gemini" in t]) == 1, api.user_texts()
    assert not api.errors, api.errors
    assert not (hw.spool_root / "sessions" / sid / "new").exists() or not list(
        (hw.spool_root / "sessions" / sid / "new").iterdir()
    )


def test_with_steering_off_nothing_is_armed_and_the_message_arrives_at_the_next_turn_end(hw: HostWorld) -> None:
    api = FakeGemini([])
    settings(hw, api, {"experimental": {"modelSteering": False}})
    install(hw, "gemini")

    def next_prompt(req: Request) -> Reply:
        return done("Second answer.")

    def delivered(req: Request) -> Reply:
        return done("Heard it.")

    api.script = [shell(f"{ATTEND_BIN} join e2e"), done("Idle now."), next_prompt, delivered]
    tui = GeminiTUI(hw, api).start()
    try:
        tui.type("go")
        until(tui, lambda: api.consumed >= 2, 180, "the first prompt's turns")
        sid = session_of(hw)
        until(tui, lambda: settled(hw, sid), 120, "the session idle")
        assert not any("attend wait --once" in t for t in api.user_texts()), api.user_texts()  # nothing armed
        assert not waiter_live(hw, sid)
        hw.human_send("--to", sid, "hello gemini at the turn end")
        tui.type("next")
        until(tui, lambda: api.consumed >= 4, 180, "the turn end's delivery")
    finally:
        tui.close()
    got = [t for t in api.user_texts() if "hello gemini at the turn end" in t]
    assert len(got) == 1 and got[0].startswith("[attend] 1 message(s) from humans, not typed at your prompt:"), (
        api.user_texts()
    )
    assert not any(t.startswith("User steering update:") for t in api.user_texts()), api.user_texts()
    assert not api.errors, api.errors
