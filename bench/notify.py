"""Benchmarks for the notification trailer and inbox_wait. Run: .venv/bin/python bench/trailer.py

Client: the library in process (what `attend mcp` runs in its worker thread for every call), with a
stand-in session as the caller. Figures:
- the trailer's cost on a warm call with nothing pending (goal <= 0.5 ms at p50), and with 50
  pending, against the warm `status` tool call it rides on (baseline);
- delivery -> inbox_wait return (goal p50 <= 10 ms), from the moment `send` starts and from the
  moment it returns, against the send's own duration (baseline).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from attend.domain.attention import trailer
from attend.domain.sessions.context import Context
from attend.mcp.server import build_server, call_context
from attend.spool import Spool
from attend.testing.standin import StandIn
from attend.verbs import inbox_wait as wait_verb
from attend.verbs import join as join_verb
from attend.verbs import send as send_verb
from attend.verbs import status as status_verb


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="attend-bench-notify-"))
    home = tmp / "home"
    (home / ".claude" / "sessions").mkdir(parents=True)
    proj = tmp / "proj"
    proj.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ATTEND"))}
    env.update(HOME=str(home), ATTEND_HOME=str(home / "spool"), PATH=f"{Path(sys.executable).parent}:{env['PATH']}")
    spool = Spool.open(home / "spool")
    a, b = StandIn(home, proj, env), StandIn(home, proj, env)
    try:

        def ctx(s: StandIn) -> Context:
            return Context(spool=Spool.open(home / "spool"), env=env, cwd=str(proj), pid=s.pid)

        join_verb.run(ctx(a), join_verb.JoinRequest("crew"))
        join_verb.run(ctx(b), join_verb.JoinRequest("crew"))
        who = ctx(a).who()
        trailer.pending(spool, who)
        time.sleep(trailer.RACY + 0.1)  # let the rooms' mtimes age past the racy window

        idle = []
        for _ in range(2000):
            c = call_context(ctx(a))
            c.who()
            t = time.perf_counter()
            assert trailer.trailer(c) is None
            idle.append(time.perf_counter() - t)

        app = build_server(lambda: ctx(a))
        calls = []
        for _ in range(500):
            t = time.perf_counter()
            app.invoke("status", lambda c: status_verb.run(c, status_verb.StatusRequest()))
            calls.append(time.perf_counter() - t)

        full = []
        for _ in range(20):
            for i in range(50):
                send_verb.run(ctx(b), send_verb.SendRequest(f"note {i}", to=a.session_id))
            c = call_context(ctx(a))
            c.who()
            t = time.perf_counter()
            items = trailer.trailer(c)
            full.append(time.perf_counter() - t)
            assert items is not None and len(items) == 50

        from_start, from_return, sends = [], [], []
        for _ in range(60):
            done: dict[str, float] = {}

            def waiter(done: dict[str, float] = done) -> None:
                result = wait_verb.run(ctx(a), wait_verb.WaitRequest(10))
                done["t"] = time.perf_counter()
                assert result.items

            thread = threading.Thread(target=waiter)
            thread.start()
            time.sleep(0.03)  # the waiter is blocked on inotify by now
            t0 = time.perf_counter()
            send_verb.run(ctx(b), send_verb.SendRequest("wake", to=a.session_id))
            t1 = time.perf_counter()
            thread.join()
            from_start.append(done["t"] - t0)
            from_return.append(max(0.0, done["t"] - t1))
            sends.append(t1 - t0)
    finally:
        a.close()
        b.close()
        shutil.rmtree(tmp, ignore_errors=True)

    ms = 1000.0
    base = pct(calls, 0.5)
    print("client: the library in process, as one `attend mcp` worker thread runs it; caller a stand-in session")
    print(f"warm status tool call (baseline)     p50 {base * ms:6.3f} ms  p90 {pct(calls, 0.9) * ms:6.3f} ms")
    print(
        f"trailer, nothing pending             p50 {pct(idle, 0.5) * ms:6.3f} ms  p90 {pct(idle, 0.9) * ms:6.3f} ms"
        f"  ({pct(idle, 0.5) / base:.0%} of the call; goal <= 0.5 ms)"
    )
    print(
        f"trailer, 50 pending                  p50 {pct(full, 0.5) * ms:6.3f} ms  p90 {pct(full, 0.9) * ms:6.3f} ms"
        f"  ({pct(full, 0.5) / base:.1f}x the call)"
    )
    print(f"send duration (baseline)             p50 {pct(sends, 0.5) * ms:6.3f} ms")
    print(
        f"delivery -> inbox_wait return        p50 {pct(from_start, 0.5) * ms:6.3f} ms from send start, "
        f"{pct(from_return, 0.5) * ms:6.3f} ms after send returns"
        f"  (p90 {pct(from_start, 0.9) * ms:.3f}; goal p50 <= 10)"
    )


if __name__ == "__main__":
    main()
