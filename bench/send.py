"""Benchmarks for issue 2 (the foundation), with the goals they are held to:

1. `attend send` cold start as a whole process: median, and its ratio to `python -c pass` measured
   in the same run (goal <= 5x).
2. Library send with fan-out to 50 enrolled recipients, durable as DESIGN.md section 3 says:
   sends per second (goal >= 500/s).
3. `attend inbox`, first page, with 100,000 signals in a room: library call (goal <= 100 ms) and
   whole process (goal <= 200 ms).

Run: .venv/bin/python bench/send.py [--runs N]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import BIN, cleanup, interleaved, ms, tmpdir, world_env


def cold_start(runs: int) -> None:
    tmp = tmpdir()
    env = world_env(tmp)
    project = tmp / "proj"
    project.mkdir()
    attend = str(BIN / "attend")
    # A first send makes the spool (a status no longer does), so no timed run pays for creating it.
    subprocess.run([attend, "send", "warm-up"], env=env, cwd=project, capture_output=True, check=True)

    def run(argv: list[str]) -> float:
        t = time.perf_counter()
        subprocess.run(argv, env=env, cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        return time.perf_counter() - t

    res = interleaved(
        {
            "python -c pass": lambda: run([sys.executable, "-c", "pass"]),
            "attend send": lambda: run([attend, "send", "bench message"]),
        },
        runs,
    )
    base, send = statistics.median(res["python -c pass"]), statistics.median(res["attend send"])
    print(
        f"1. cold start: python -c pass {ms(res['python -c pass'])}, attend send {ms(res['attend send'])}, "
        f"ratio {send / base:.2f}x (goal <= 5x)"
    )
    cleanup(tmp)


def fanout(n_sends: int) -> None:
    from attend.domain import sessions
    from attend.domain.context import Context
    from attend.identity import Identity
    from attend.spool import Spool
    from attend.verbs import send

    tmp = tmpdir()
    env = world_env(tmp)
    spool = Spool.open(tmp / "home" / ".cache" / "attend")
    for i in range(50):
        who = Identity("agent", f"sess-{i:02d}", f"/p/{i % 5}", "bench", True)
        sessions.enroll(spool, who, "run")
    ctx = Context(spool=spool, env=env, cwd=str(tmp))  # a human sender (always allowed)
    t = time.perf_counter()
    for i in range(n_sends):
        send.run(ctx, send.SendRequest(f"message {i}"))
    dt = time.perf_counter() - t
    links = sum(len(spool.listing(f"sess-{i:02d}", "new")) for i in range(50))
    assert links == 50 * n_sends, links
    print(
        f"2. library send, fan-out to 50: {n_sends / dt:.0f} sends/s ({dt / n_sends * 1000:.2f} ms each; "
        f"{links} links) (goal >= 500/s)"
    )
    cleanup(tmp)


def inbox_100k(runs: int) -> None:
    from attend.domain import envelope
    from attend.domain.context import Context
    from attend.domain.envelope import Signal
    from attend.layout import unique_name
    from attend.spool import Spool
    from attend.verbs import inbox

    tmp = tmpdir()
    env = world_env(tmp)
    project = tmp / "proj"
    project.mkdir()
    spool = Spool.open(tmp / "home" / ".cache" / "attend")
    spool.make_dir("rooms", "open", "new")
    new = spool.root / "rooms" / "open" / "new"
    t0 = 1_790_000_000_000_000_000
    for i in range(100_000):
        name = unique_name(now_ns=t0 + i * 1000)
        sig = Signal(name, "Bench", "agent", "sess-x", "*", "open", "/p", f"body {i}", 0.0)
        (new / name).write_bytes(envelope.render(sig))
    ctx = Context(spool=spool, env=env, cwd=str(project))
    lib = []
    for _ in range(runs):
        t = time.perf_counter()
        page = inbox.run(ctx, inbox.InboxRequest())
        lib.append(time.perf_counter() - t)
    assert len(page.messages) == 25 and page.messages[0].body == "body 99999"
    proc = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([str(BIN / "attend"), "inbox"], env=env, cwd=project, stdout=subprocess.DEVNULL, check=True)
        proc.append(time.perf_counter() - t)
    print(
        f"3. inbox first page, 100,000 signals: library {ms(lib)} (goal <= 100 ms), process {ms(proc)} (goal <= 200 ms)"
    )
    cleanup(tmp)


if __name__ == "__main__":
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 21
    cold_start(runs)
    fanout(400)
    inbox_100k(max(5, runs // 3))
