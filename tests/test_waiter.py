"""The waiting conduit, `attend wait --hook` (an asyncRewake Stop hook): it waits on the session's
maildir, shows what arrives once (exit 2, the drain's framing on stderr), steps aside for the sensor
loop and for a newer waiter, leaves when its Claude process ends, and fails open."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from attend import layout
from attend.conduits import waiter
from attend.setup.data import data_file
from attend.testing.standin import StandIn
from tests.support import ATTEND, Child, Loop, Wait, World, drain, enroll, maildir, payload, post, wait_until


@pytest.fixture
def waits(world: World) -> Iterator[Callable[..., Wait]]:
    started: list[Wait] = []

    def start(
        s: StandIn, active: bool = False, env: dict[str, str] | None = None, ready: bool = True, drained: bool = True
    ) -> Wait:
        """A waiter and, as at a real turn end, the drain with the same payload (whose verdict it awaits)."""
        w = Wait(world, s, active, env)
        started.append(w)
        if drained:
            drain(world, s.session_id, active)
        if ready:
            wait_until(lambda: w.waiting() or w.exited(), "the waiter to be set up")
        return w

    yield start
    for w in started:
        if w.proc.poll() is None:
            w.proc.kill()
            w.proc.communicate(timeout=10)


def reason_lines(err: str) -> list[str]:
    return err.splitlines()


def test_a_message_that_arrives_while_the_waiter_waits_is_shown_once_with_exit_2(world: World, waits) -> None:
    s = world.session("proj")
    enroll(world, s)
    w = waits(s)
    assert not w.exited()
    world.attend("send", "the build is green")
    rc, out, err = w.done()
    assert rc == 2, err
    assert out == ""
    lines = reason_lines(err)
    assert lines[0] == "[attend] 1 message(s) from humans, not typed at your prompt:"
    assert "  the build is green" in lines
    assert len(maildir(world, s.session_id, "cur")) == 1 and not maildir(world, s.session_id, "new")
    assert drain(world, s.session_id).stdout == ""  # the drain does not show it again


def test_the_waiters_first_wake_carries_the_reheat_and_the_next_does_not(world: World, waits) -> None:
    from attend.domain.attention import reheat

    s = world.session("proj")
    enroll(world, s)
    w = waits(s)
    world.attend("send", "first")
    rc, _, err = w.done()
    assert rc == 2 and reason_lines(err)[-1] == f"[attend reheat] {reheat.wording(False)}", err
    w = waits(s)
    world.attend("send", "second")
    rc, _, err = w.done()
    assert rc == 2 and "[attend reheat]" not in err, err


def test_three_messages_that_land_together_arrive_in_one_wake(world: World, waits) -> None:
    s = world.session("proj")
    enroll(world, s)
    w = waits(s)
    spool = world.spool
    # The three land while the show lock is held (as while another conduit is mid-show): the waiter,
    # woken by the first, cannot claim before all three are there, however the machine is loaded.
    with spool.show_lock(s.session_id, timeout=10):
        for i in range(3):
            post(spool, "open", f"burst {i}")
    rc, _, err = w.done()
    assert rc == 2, err
    assert err.splitlines()[0] == "[attend] 3 message(s) from peers, not your user:"
    assert all(f"  burst {i}" in err.splitlines() for i in range(3))


def test_when_the_drain_of_the_same_turn_end_blocks_the_waiter_leaves_at_once(world: World, waits) -> None:
    """The client holds a block's continuation until every asyncRewake hook of that turn end has
    exited: a waiter that stayed would hang the session until the next message."""
    s = world.session("proj")
    enroll(world, s)
    world.attend("send", "pending at the turn end")
    w = waits(s, ready=False, drained=False)
    blocked = drain(world, s.session_id)
    assert "pending at the turn end" in json.loads(blocked.stdout)["reason"]
    assert w.done() == (0, "", "")


def test_a_waiter_claims_nothing_before_the_drain_of_its_turn_end_has_decided(world: World, waits) -> None:
    s = world.session("proj")
    enroll(world, s)
    w = waits(s, drained=False)
    world.attend("send", "for the drain")
    blocked = drain(world, s.session_id)  # a slow drain: the message is there before it runs
    assert "for the drain" in json.loads(blocked.stdout)["reason"]
    assert w.done() == (0, "", "")


def test_a_newer_waiter_replaces_an_older_one_which_leaves_without_output(world: World, waits) -> None:
    s = world.session("proj")
    enroll(world, s)
    old = waits(s)
    new = waits(s)
    assert old.done() == (0, "", "")
    world.attend("send", "for the newest waiter")
    rc, _, err = new.done()
    assert rc == 2 and "  for the newest waiter" in err.splitlines()


def test_waiters_started_together_show_a_message_once(world: World, waits) -> None:
    s = world.session("proj")
    enroll(world, s)
    many = [waits(s, ready=False, drained=False) for _ in range(4)]
    drain(world, s.session_id)  # the turn end's drain: nothing pending, so the waiters may claim
    world.attend("send", "only once")
    wait_until(lambda: maildir(world, s.session_id, "cur"), "a waiter to show it")
    s.proc.kill()  # the newest waiter would wait on for the next message; the client's end ends it
    results = [w.done() for w in many]
    shown = [r for r in results if r[0] == 2]
    assert len(shown) == 1, results
    assert all(r == (0, "", "") for r in results if r[0] != 2), results
    assert sum(e.count("  only once") for _, _, e in results) == 1


def test_the_waiter_steps_aside_while_the_sensor_loop_is_live(world: World, waits) -> None:
    s = world.session("proj")
    loop = Loop(world, s)
    try:
        loop.wait_for(lambda lines: lines, "the loop's banner")
        w = waits(s)
        assert w.done() == (0, "", "")
        world.attend("send", "through the loop")
        loop.wait_for(lambda lines: any("through the loop" in line for line in lines), "the loop to show it")
    finally:
        loop.stop()


def test_the_waiter_leaves_silently_when_its_claude_process_ends(world: World, waits) -> None:
    s = world.session("proj")
    enroll(world, s)
    w = waits(s)
    s.proc.kill()
    s.proc.wait()
    assert w.done() == (0, "", "")
    assert not (world.spool_root / "sessions" / s.session_id / waiter.WAITER).exists()


def test_an_unenrolled_session_or_wake_off_gets_no_waiter_and_nothing_is_written(world: World, waits) -> None:
    s = world.session("proj")
    assert waits(s).done() == (0, "", "")
    assert not (world.spool_root / "sessions" / s.session_id).exists()
    enroll(world, s)
    config = Path(layout.config_root(world.env)) / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("conduits:\n  wake: off\n")
    assert waits(s).done() == (0, "", "")
    assert not (world.spool_root / "sessions" / s.session_id / waiter.WAITER).exists()


def mark_sdk_cli(s: StandIn) -> None:
    """Give the stand-in's session record the entrypoint a `claude -p` run's record carries."""
    record = json.loads(s.record_path.read_text())
    s.record_path.write_text(json.dumps({**record, "entrypoint": "sdk-cli"}))


@pytest.mark.parametrize("mark", ["CLAUDE_CODE_SESSION_ATTENDED=0", "entrypoint sdk-cli"])
def test_in_a_headless_session_the_waiter_steps_aside_at_once_and_the_drain_still_delivers(
    world: World, waits, mark: str
) -> None:
    """`claude -p` waits for every asyncRewake hook: a waiter that stayed would keep it running for a day."""
    s = world.session("proj")
    enroll(world, s)
    env = {"CLAUDE_CODE_SESSION_ATTENDED": "0"} if mark.startswith("CLAUDE") else {}
    if not env:
        mark_sdk_cli(s)
    w = waits(s, env=env, ready=False, drained=False)
    drain(world, s.session_id)  # the turn end's drain: nothing pending
    wait_until(w.exited, "the waiter to step aside by itself")
    assert w.done() == (0, "", "")
    assert not (world.spool_root / "sessions" / s.session_id / waiter.WAITER).exists()
    world.attend("send", "for the next turn end")
    assert "for the next turn end" in json.loads(drain(world, s.session_id).stdout)["reason"]


def test_a_headless_session_that_opted_in_is_woken_and_its_waiter_leaves_after_the_set_seconds(
    world: World, waits
) -> None:
    s = world.session("proj")
    enroll(world, s)
    config = Path(layout.config_root(world.env)) / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("conduits:\n  headless_wait: 600\n")
    headless = {"CLAUDE_CODE_SESSION_ATTENDED": "0"}
    w = waits(s, env=headless)
    assert not w.exited()
    world.attend("send", "wake the worker")
    rc, _, err = w.done()
    assert rc == 2 and "  wake the worker" in err.splitlines(), err
    config.write_text("conduits:\n  headless_wait: 1\n")
    w = waits(s, env=headless)
    wait_until(w.exited, "the waiter to leave after its one second")
    assert w.done() == (0, "", "")


def test_a_spool_the_gate_refuses_fails_open_with_one_line(world: World, waits) -> None:
    s = world.session("proj")
    enroll(world, s)
    os.chmod(world.spool_root, 0o777)  # open to others: the gate refuses it
    try:
        rc, out, err = waits(s).done()
    finally:
        os.chmod(world.spool_root, 0o700)
    assert (rc, out) == (0, "")
    assert len(err.splitlines()) == 1 and err.startswith("attend wait: the waiter failed"), err


def test_past_the_ceiling_of_quick_wakes_the_wake_is_delayed_never_dropped(world: World, waits) -> None:
    # A waiter-only session is idle: giving up would leave the message in new/ with no conduit at all.
    s = world.session("proj")
    enroll(world, s)
    rounds = world.spool_root / "sessions" / s.session_id / waiter.WAKE_ROUNDS
    rounds.write_text(str(waiter.MAX_WAKES))
    w = waits(s, active=True)  # this turn was itself started by a wake
    world.attend("send", "later, not never")
    rc, out, err = w.done()
    assert rc == 2 and out == "", err
    assert "later, not never" in err and "wake round" not in err  # the model sees only the messages
    log = (world.spool_root / "log" / "attend.log").read_text()
    assert "wake round 6 > 5" in log and f"waits until {waiter.LOOP_WINDOW:g} s after the turn" in log
    assert maildir(world, s.session_id, "new") == []
    assert rounds.read_text() == "1"  # a wake that late is not quick: the chain starts again


def test_a_wake_after_a_turn_a_human_started_begins_a_new_chain(world: World, waits) -> None:
    s = world.session("proj")
    enroll(world, s)
    (world.spool_root / "sessions" / s.session_id / waiter.WAKE_ROUNDS).write_text("9")
    w = waits(s, active=False)
    world.attend("send", "a human typed in between")
    assert w.done()[0] == 2
    assert (world.spool_root / "sessions" / s.session_id / waiter.WAKE_ROUNDS).read_text() == "1"


def test_attend_wait_without_hook_is_a_usage_error_that_never_exits_2_under_claude(world: World) -> None:
    bare = world.attend("wait")
    assert bare.returncode == 2 and bare.stderr.count("\n") == 1 and "attend wait --hook" in bare.stderr
    under = world.attend("wait", "--now", env={"CLAUDECODE": "1"})
    assert under.returncode == 1 and "attend wait --hook" in under.stderr


def test_the_waiter_leaves_before_the_hook_timeout_the_settings_give_it() -> None:
    doc = json.loads(data_file("settings", "hooks.json").read_text())
    [entry] = [h for g in doc["hooks"]["Stop"] for h in g["hooks"] if h.get("asyncRewake")]
    assert entry["command"].endswith("attend-wait-stop.sh")
    assert entry["timeout"] == waiter.HOOK_TIMEOUT
    assert waiter.HOOK_TIMEOUT - waiter.MARGIN >= 8 * 3600  # a working day after the last turn


def test_status_and_doctor_show_whether_the_waiter_is_wired_and_waiting(world: World, waits) -> None:
    s = world.session("proj")
    enroll(world, s)

    def conduits() -> dict[str, bool]:
        r = s.attend("status", "--json")
        assert r.rc == 0, r.stderr
        return json.loads(r.stdout)["conduits"]

    def doctor_says(name: str) -> dict[str, str]:
        r = s.attend("doctor", "--json")
        return next(c for c in json.loads(r.stdout)["checks"] if c["name"] == name)

    assert (conduits()["waiter"], conduits()["waiter_wired"]) == (False, False)
    assert "waiting Stop hook" in doctor_says("wiring")["detail"]
    assert world.attend("install", "--target", str(world.home / ".claude")).returncode == 0
    w = waits(s)
    assert (conduits()["waiter"], conduits()["waiter_wired"]) == (True, True)
    assert doctor_says("waiter")["status"] == "ok" and doctor_says("wiring")["status"] == "ok"
    s.proc.kill()
    assert w.done()[0] == 0


# ---------------------------------------------------------------------- keepwarm through the waiter

KEEPWARM_TAIL = "the prompt cache lapses in 59m on 120000 tokens. Reply with one word and no tools."


def keepwarm_config(world: World) -> None:
    config = Path(layout.config_root(world.env)) / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("keepwarm:\n  idle_seconds: 2\n  min_tokens: 1000\n")


def a_turn(world: World, s: StandIn, age: float = 0.0) -> Path:
    """One turn in the session's transcript as the real client writes it (120,000 tokens), ``age`` s ago."""
    import re
    import time

    path = world.home / ".claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(s.cwd)) / f"{s.session_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    usage = {"input_tokens": 10, "cache_read_input_tokens": 119_000, "cache_creation_input_tokens": 990}
    entry = {"type": "assistant", "message": {"model": "claude-opus-4-5", "role": "assistant", "usage": usage}}
    with path.open("a") as f:
        f.write(json.dumps(entry) + "\n")
    at = time.time() - age
    os.utime(path, (at, at))
    return path


def test_an_armed_keepwarm_wakes_the_idle_session_once_with_the_loops_line(world: World, waits) -> None:
    from attend.domain.attention import keepwarm

    keepwarm_config(world)
    s = world.session("proj")
    enroll(world, s)
    assert s.attend("keepwarm", "on").rc == 0
    path = a_turn(world, s)  # the turn that just ended: the waiter sleeps until 2 s after it
    rc, out, err = waits(s).done()
    assert (rc, out) == (2, ""), err
    [line] = err.splitlines()
    assert line.startswith("[attend sensor=keepwarm priority=medium] keepwarm: ") and line.endswith(KEEPWARM_TAIL)
    arm = keepwarm.read(world.spool, s.session_id)
    assert arm is not None and arm.warmed_for == os.stat(path).st_mtime  # the loop's own once-per-stretch mark


def test_a_second_keepwarm_wake_comes_only_after_a_turn_end(world: World, waits) -> None:
    keepwarm_config(world)
    s = world.session("proj")
    enroll(world, s)
    assert s.attend("keepwarm", "on").rc == 0
    a_turn(world, s, age=3)
    assert waits(s).done()[0] == 2
    again = waits(s)  # no turn since: this stretch was warmed, so only a message wakes it
    world.attend("send", "no keepwarm twice")
    rc, _, err = again.done()
    assert rc == 2 and "sensor=keepwarm" not in err and "  no keepwarm twice" in err.splitlines()
    a_turn(world, s, age=3)  # the one-word answer: a new stretch
    rc, _, err = waits(s).done()
    assert rc == 2 and err.endswith(KEEPWARM_TAIL + "\n"), err


@pytest.mark.parametrize("state", ["never armed", "off", "window ended"])
def test_a_disarmed_keepwarm_never_wakes_the_waiting_session(world: World, waits, state: str) -> None:
    import time

    from attend.domain.attention import keepwarm

    keepwarm_config(world)
    s = world.session("proj")
    enroll(world, s)
    if state == "off":
        assert s.attend("keepwarm", "on").rc == 0 and s.attend("keepwarm", "off").rc == 0
    if state == "window ended":
        keepwarm.turn_on(world.spool, s.session_id, 60, time.time() - 120)
    a_turn(world, s, age=3)  # long idle already: an armed waiter would wake at once
    w = waits(s)
    world.attend("send", "only the message")
    rc, _, err = w.done()
    assert rc == 2 and "sensor=keepwarm" not in err and "  only the message" in err.splitlines()


def test_a_waiter_named_for_another_session_cannot_displace_its_waiter_or_read_its_mail(world: World, waits) -> None:
    """From session A's shell, `echo '{"session_id": "<V>"}' | attend wait --hook` names V. The hook acts
    only for the session that runs it: V's waiter keeps waiting, and V's next message reaches V alone."""
    v, a = world.session("pv"), world.session("pa")
    enroll(world, v)
    enroll(world, a)
    w = waits(v)
    env = {**world.env, "CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": v.session_id, "CLAUDE_PID": str(v.pid)}
    hostile = Child(a, [ATTEND, "wait", "--hook"], payload(v.session_id), env, world.tmp / "hostile")
    out, err = hostile.communicate()
    assert (hostile.returncode, out) == (0, "")
    [line] = err.splitlines()
    assert f"names session {v.session_id}" in line and "acts only for the session that runs it" in line
    assert w.waiting() and not w.exited()  # still V's newest waiter
    world.attend("send", "--to", v.session_id, "for V only")
    rc, _, shown = w.done()
    assert rc == 2 and "  for V only" in reason_lines(shown)
    assert "for V only" not in (world.tmp / "hostile" / "err").read_text()


def test_status_says_which_conduits_serve_a_headless_session_and_that_the_waiter_steps_aside(world: World) -> None:
    s = world.session("proj")
    enroll(world, s)
    headless = {"CLAUDE_CODE_SESSION_ATTENDED": "0"}

    def serves(env: dict[str, str]) -> dict[str, dict[str, Any]]:
        r = s.attend("status", "--json", env=env)
        assert r.rc == 0, r.stderr
        return {c["conduit"]: c for c in json.loads(r.stdout)["conduits"]["serves"]}

    found = serves(headless)
    assert set(found) == {"drain", "sensor", "socket", "waiter"}
    assert found["drain"]["serves"] is True
    assert found["waiter"]["serves"] is False and found["waiter"]["why"].startswith("steps aside: a headless session")
    assert "conduits.headless_wait" in found["waiter"]["why"]
    text = s.attend("status", env=headless).stdout
    assert "waiter: no (steps aside: a headless session" in text, text
    assert "drain: serves (" in text, text
    # Opted in, the waiter is what keeps it reachable; an attended session's waiter is only unwired.
    config = Path(layout.config_root(world.env)) / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("conduits:\n  headless_wait: 600\n")
    assert "opted in: waits 600 s" in serves(headless)["waiter"]["why"]
    assert serves({})["waiter"]["why"] == "not wired (attend install wires it)"
