"""Waiting-conduit benchmarks with the real Claude Code client and the scripted model (issue 13):

- latency: send -> the woken turn's request reaching the scripted model, over N wakes of one idle
  session wired by `attend install` alone (goal p50 <= 300 ms);
- idle: one real session idle for M minutes: model turns spent (goal 0), and its waiter's CPU time
  over the first 10 minutes (goal <= 0.02 s) and RSS (goal <= 30 MB);
- monitor: the Monitor path for comparison: the turns an idle session spends re-arming `attend run`
  at each expiry, counted with a shortened deadline and scaled to Monitor's 10-minute cap;
- headless: a `claude -p` run that joined a channel, not opted in: the model's last answer -> the
  client's exit (its pidfd), over N runs (the issue's bound: 10 s; before, the run waited a day).

Each session is a headless run (`claude -p`), whose waiter steps aside unless the run opts in to
waiting: latency and idle opt in (``conduits.headless_wait``), so a run ends that many seconds after
its last turn; monitor does not, so its waiter never waits.

Run: .venv/bin/python bench/wake.py latency [wakes=20]
     .venv/bin/python bench/wake.py idle [minutes=15]
     .venv/bin/python bench/wake.py monitor [seconds=90] [deadline_ms=15000]
     .venv/bin/python bench/wake.py headless [runs=5]
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attend import layout
from attend.conduits import waiter
from bench._common import pct
from bench.sensor import cpu_seconds, rss_mb
from tests.e2e.fake_api import Reply, Request, bash, call, done, tool_search
from tests.e2e.harness import E2EWorld, latest_user_texts, session_id_of, wait_for

MONITOR_CAP_S = 600.0  # Claude Code caps a Monitor deadline at 10 minutes
LINGER_S = 5  # a latency run's waiter waits this long after each turn: the next send comes within 0.5 s


def world(headless_wait: float = 0) -> E2EWorld:
    """A HOME wired by `attend install` alone; ``headless_wait`` > 0 opts its headless runs in to
    waiting that many seconds after each turn (else their waiter steps aside and the run ends)."""
    e2e = E2EWorld(Path(tempfile.mkdtemp(prefix="attend-bench-wake-")))
    out = e2e.attend("install", "--target", str(e2e.claude_dir))
    assert out.returncode == 0, out.stderr
    if headless_wait > 0:
        config = Path(layout.config_root(e2e.env)) / "config.yaml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(f"conduits:\n  headless_wait: {int(headless_wait)}\n")
    return e2e


def waiter_pid(e2e: E2EWorld, sid: str) -> int | None:
    try:
        text = (e2e.spool_root / "sessions" / sid / waiter.WAITER).read_text()
    except OSError:
        return None
    return int(text.split(" ")[0]) if waiter.waiter_live(e2e.spool, sid) else None


def latency(wakes: int) -> None:
    """In sessions of at most MAX_WAKES wakes each: quick wakes in a row are what the waiter's loop
    guard holds (the sixth would wait 30 s after its turn), and these come 0.5 s after each turn."""
    xs: list[float] = []
    back: list[float] = []
    while len(xs) < wakes:
        a, b = one_session(min(waiter.MAX_WAKES, wakes - len(xs)))
        xs += a
        back += b
    print(f"wakes: {len(xs)}/{wakes}")
    print(f"send start -> woken request: p50 {statistics.median(xs) * 1000:.0f} ms, p99 {pct(xs, 99) * 1000:.0f} ms")
    print(f"  min {min(xs) * 1000:.0f} ms, max {max(xs) * 1000:.0f} ms")
    p50, p99 = statistics.median(back) * 1000, pct(back, 99) * 1000
    print(f"send returned -> woken request: p50 {p50:.0f} ms, p99 {p99:.0f} ms")


def one_session(wakes: int) -> tuple[list[float], list[float]]:
    """One run woken ``wakes`` times; it ends LINGER_S after its last turn, when its waiter leaves."""
    e2e = world(LINGER_S)
    state: dict[str, Any] = {"arrived": {}, "sent": {}, "returned": {}}

    def first(req: Request) -> Reply:
        state["sid"] = session_id_of(req)
        return done("Idle.")

    def woken(req: Request) -> Reply:
        now = time.perf_counter()
        for tag in state["sent"]:
            if tag not in state["arrived"] and any(tag in t for t in latest_user_texts(req)):
                state["arrived"][tag] = now
        return done("Read it.")

    def operator() -> None:
        wait_for(lambda: "sid" in state, 60, "the first turn")
        for i in range(wakes):
            previous = state.get("last_pid")

            def fresh(previous: int | None = previous) -> bool:
                p = waiter_pid(e2e, state["sid"])
                return p is not None and p != previous

            wait_for(fresh, 60, "a fresh waiter after the turn")
            state["last_pid"] = waiter_pid(e2e, state["sid"])
            time.sleep(0.5)  # the waiter is asleep in its inotify read
            tag = f"wake-{i}-{uuid.uuid4().hex[:6]}"
            state["sent"][tag] = time.perf_counter()
            e2e.attend("send", tag)
            state["returned"][tag] = time.perf_counter()
            wait_for(lambda tag=tag: tag in state["arrived"], 60, "the woken turn")

    t = threading.Thread(target=operator, daemon=True)
    t.start()
    e2e.claude([bash("attend join bench"), first, *[woken] * wakes], timeout=60 + 15 * wakes + LINGER_S)
    t.join(5)
    e2e.close()
    # The operator's own `attend send` is inside the first figure: its start to the model's request.
    arrived = state["arrived"]
    return [arrived[k] - state["sent"][k] for k in arrived], [arrived[k] - state["returned"][k] for k in arrived]


def idle(minutes: float) -> None:
    e2e = world(minutes * 60 + 120)  # the waiter outlasts the idle stretch; closing the world ends the run
    state: dict[str, Any] = {}

    def first(req: Request) -> Reply:
        state["sid"] = session_id_of(req)
        return done("Idle.")

    c = e2e.start([bash("attend join bench"), first], timeout=minutes * 60 + 120)
    wait_for(lambda: "sid" in state and waiter_pid(e2e, state["sid"]), 60, "the waiter")
    pid = waiter_pid(e2e, state["sid"])
    assert pid
    turns_at_idle = len(c.api.turns)
    cpu0, t0 = cpu_seconds(pid), time.monotonic()
    rss = [rss_mb(pid)]
    cpu_10: float | None = None
    while time.monotonic() - t0 < minutes * 60:
        time.sleep(10)
        rss.append(rss_mb(pid))
        if cpu_10 is None and time.monotonic() - t0 >= 600:
            cpu_10 = cpu_seconds(pid) - cpu0
    cpu_all = cpu_seconds(pid) - cpu0
    alive = waiter_pid(e2e, state["sid"]) == pid
    turns_idle = len(c.api.turns) - turns_at_idle
    e2e.close()
    print(f"idle {minutes:g} min: model turns spent {turns_idle}; the same waiter still waiting: {alive}")
    if cpu_10 is not None:
        print(f"waiter CPU over the first 10 min: {cpu_10:.3f} s")
    print(f"waiter CPU over {minutes:g} min: {cpu_all:.3f} s; RSS max {max(rss):.1f} MB")
    print(f"turns per idle hour: {turns_idle * 60 / minutes:.1f}")


def monitor(seconds: float, deadline_ms: int) -> None:
    """An idle session whose model re-arms Monitor at every expiry, as the skill tells it to."""
    e2e = world()  # a headless run not opted in: its waiter steps aside, so the Monitor path alone
    state: dict[str, Any] = {"turns": 0}

    def arm() -> Reply:  # a fresh tool_use id each time: the client refuses a reused one
        return call("Monitor", {"command": "attend run", "description": "attend", "timeout_ms": deadline_ms})

    def step(req: Request) -> Reply:
        if time.monotonic() - state.setdefault("t0", time.monotonic()) > seconds:
            return done("Stopping.")
        state["turns"] += 1
        texts = "\n".join(latest_user_texts(req))
        return arm() if "<task-notification>" in texts and "expired" in texts.lower() else done("Waiting.")

    run = e2e.claude([tool_search("Monitor"), arm(), *[step] * 400], timeout=seconds + deadline_ms / 1000 + 120)
    e2e.close()
    expiries = max(0, int(seconds * 1000 // deadline_ms))
    per_expiry = state["turns"] / expiries if expiries else float("nan")
    print(
        f"{state['turns']} turns in {seconds:g} s with a {deadline_ms} ms deadline ({expiries} expiries; rc {run.rc})"
    )
    hourly = per_expiry * 3600 / MONITOR_CAP_S
    print(f"turns per expiry {per_expiry:.1f}; per idle hour at the 10-minute cap: {hourly:.1f}")


def headless(runs: int) -> None:
    """A headless run's end, timed from the scripted model's last answer to the client's exit."""
    import os
    import select

    gaps = []
    for _ in range(runs):
        e2e = world()  # not opted in: the waiter wired at each turn end steps aside
        c = e2e.start([bash("attend join bench"), done("Joined; that was all.")], timeout=120)
        fd, stamp = os.pidfd_open(c.pid), []

        def watch(fd: int = fd, stamp: list[float] = stamp) -> None:
            select.select([fd], [], [])  # readable the moment the client exits
            stamp.append(time.monotonic())

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        run = c.wait()
        watcher.join(10)
        os.close(fd)
        e2e.close()
        last = run.api.last_answered
        assert run.rc == 0 and not run.timed_out and last is not None and stamp, run.explain()
        gaps.append((stamp[0] - last) * 1000)
    print(f"last answer -> exit over {runs} runs: p50 {statistics.median(gaps):.0f} ms, max {max(gaps):.0f} ms")


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "latency"
    args = sys.argv[2:]
    if what == "latency":
        latency(int(args[0]) if args else 20)
    elif what == "idle":
        idle(float(args[0]) if args else 15)
    elif what == "headless":
        headless(int(args[0]) if args else 5)
    else:
        monitor(float(args[0]) if args else 90, int(args[1]) if len(args) > 1 else 15000)
