"""Benchmarks for issue 2 (the foundation), with the goals they are held to:

1. `attend send` cold start as a whole process: median wall and CPU time, and their ratio to
   `python -c pass` measured in the same run (goal <= 2.5x), a human's and a session's (a child of a
   stand-in Claude session, its driver timing each send there) interleaved round by round; with
   `--tree DIR`, beside the same from another checkout (say the branch point, in a temporary worktree).
2. Library send with fan-out to 50 enrolled recipients, durable as DESIGN.md section 3 says:
   sends per second (goal >= 500/s).
3. `attend inbox`, first page, with 100,000 signals in a room: library call (goal <= 100 ms) and
   whole process (goal <= 200 ms).

   With `--tree DIR`, the whole `attend inbox` process from that checkout too (the text listing shows
   each id by its shortest unique prefix, which lists every room's names).

Run: .venv/bin/python bench/send.py [--runs N] [--tree DIR] [--only-cold-start] [--recipients N]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import BIN, ENTRY, cleanup, interleaved, ms, tmpdir, world_env

# Runs inside a stand-in session (its child): joins a channel, then times one `attend send` per line read
# from the request FIFO, and answers "<wall> <cpu>" on the reply FIFO.
SESSION_DRIVER = r"""
import os, resource, subprocess, sys, time
attend, requests, replies = sys.argv[1:4]
subprocess.run([attend, "join", "bench"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
with open(requests) as inbox, open(replies, "w") as out:
    for line in inbox:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run([attend, "send", "bench message"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        out.write(f"{wall} {cpu}\n")
        out.flush()
"""


class SessionSends:
    """A session's `attend send`, timed by a driver that is a child of a stand-in Claude session."""

    def __init__(self, tmp: Path, project: Path, env: dict[str, str], attend: str) -> None:
        from attend.testing.standin import StandIn

        self.stand_in = StandIn(tmp / "home", project, env).__enter__()
        requests, replies = tmp / "requests", tmp / "replies"
        os.mkfifo(requests)
        os.mkfifo(replies)
        argv = [sys.executable, "-c", SESSION_DRIVER, attend, str(requests), str(replies)]
        self.stand_in.spawn(argv, tmp / "driver.out")
        self.requests = open(requests, "w")  # noqa: SIM115  (held for the bench's life)
        self.replies = open(replies)  # noqa: SIM115

    def send(self) -> tuple[float, float]:
        self.requests.write("go\n")
        self.requests.flush()
        wall, cpu = self.replies.readline().split()
        return float(wall), float(cpu)

    def close(self) -> None:
        self.requests.close()
        self.replies.close()
        self.stand_in.__exit__(None, None, None)


def cold_start(runs: int, tree: Path | None, recipients: int = 0) -> None:
    """Wall time and CPU time (user + system of the child, from getrusage) of each process; ``tree``:
    also `attend send` from that checkout (say the branch point in a temporary worktree), interleaved.
    ``recipients``: that many enrolled (parked) sessions receive each send, so each recipient's
    outcome is decided and linked."""
    tmp = tmpdir()
    env = world_env(tmp)
    project = tmp / "proj"
    project.mkdir()
    attend = str(BIN / "attend")
    # A first send makes the spool (a status no longer does), so no timed run pays for creating it.
    subprocess.run([attend, "send", "warm-up"], env=env, cwd=project, capture_output=True, check=True)
    if recipients:
        from attend.domain.sessions import sessions
        from attend.identity import Identity
        from attend.spool import Spool

        spool = Spool.open(tmp / "home" / ".cache" / "attend")
        for i in range(recipients):
            sessions.enroll(spool, Identity("agent", f"sess-{i:02d}", f"/p/{i % 5}", "bench", True), "run")
    cpu: dict[str, list[float]] = {}

    def run(name: str, argv: list[str], extra: dict[str, str] | None = None) -> float:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(
            argv,
            env={**env, **(extra or {})},
            cwd=project,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.setdefault(name, []).append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        return wall

    session = SessionSends(tmp, project, env, attend)

    def session_send() -> float:
        wall, used = session.send()
        cpu.setdefault("attend send, a session's", []).append(used)
        return wall

    cases = {
        "python -c pass": lambda: run("python -c pass", [sys.executable, "-c", "pass"]),
        "attend send": lambda: run("attend send", [attend, "send", "bench message"]),
        "attend send, a session's": session_send,
    }
    if tree is not None:
        cases[f"attend send ({tree})"] = lambda: run(
            f"attend send ({tree})", [sys.executable, "-c", ENTRY, "send", "bench message"], {"PYTHONPATH": str(tree)}
        )
    try:
        res = interleaved(cases, runs)
    finally:
        session.close()
    base, base_cpu = statistics.median(res["python -c pass"]), statistics.median(cpu["python -c pass"])
    to = f", to {recipients} enrolled sessions" if recipients else ""
    print(f"1. cold start ({runs} runs each{to}, interleaved; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}):")
    for name in cases:
        wall, used = statistics.median(res[name]), statistics.median(cpu[name])
        print(
            f"   {name}: wall {wall * 1000:.1f} ms ({wall / base:.2f}x), "
            f"cpu {used * 1000:.1f} ms ({used / base_cpu:.2f}x)"
        )
    print("   goal: attend send <= 2.5x python -c pass")
    cleanup(tmp)


def fanout(n_sends: int) -> None:
    from attend.domain.sessions import sessions
    from attend.domain.sessions.context import Context
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


def inbox_100k(runs: int, tree: Path | None = None) -> None:
    """``tree``: also the whole process from that checkout, interleaved (its ids shown in full or short)."""
    from attend.domain.core import envelope
    from attend.domain.core.envelope import Signal
    from attend.domain.sessions.context import Context
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
    proc: list[float] = []
    other: list[float] = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([str(BIN / "attend"), "inbox"], env=env, cwd=project, stdout=subprocess.DEVNULL, check=True)
        proc.append(time.perf_counter() - t)
        if tree is not None:
            t = time.perf_counter()
            argv = [sys.executable, "-c", ENTRY, "inbox"]
            there = {**env, "PYTHONPATH": str(tree)}
            subprocess.run(argv, env=there, cwd=project, stdout=subprocess.DEVNULL, check=True)
            other.append(time.perf_counter() - t)
    print(
        f"3. inbox first page, 100,000 signals: library {ms(lib)} (goal <= 100 ms), process {ms(proc)} (goal <= 200 ms)"
        + (f"; process from {tree}: {ms(other)}" if tree is not None else "")
    )
    cleanup(tmp)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--tree", type=Path, default=None, help="also time `attend send` from this checkout")
    ap.add_argument("--only-cold-start", action="store_true")
    ap.add_argument("--recipients", type=int, default=0, help="cold start: the sends reach this many enrolled sessions")
    args = ap.parse_args()
    tree = args.tree.resolve() if args.tree else None
    cold_start(args.runs, tree, args.recipients)
    if not args.only_cold_start:
        fanout(400)
        inbox_100k(max(5, args.runs // 3), tree)
