"""`attend chat` benchmarks, on a real pseudo-terminal of 80x24:

- startup to the first full screen: from spawning `attend chat` until the terminal has been sent the
  footer, the peers pane and the newest message of #open (goal <= 600 ms), beside `python -c pass`
  and `attend --help` as baselines;
- send -> on screen: from the start of a send in this process (the library send, durable, as
  `attend send` makes it) until the body reaches the terminal (goal p50 <= 50 ms).

``--base DIR`` also starts `attend chat` from another checkout (PYTHONPATH=DIR: the branch point in
a temporary worktree), one start of each in turn, so a baseline is measured in the same sitting.
``--history N --body BYTES`` fills #open with N messages of BYTES each (80-column lines) instead of
30 one-liners: ``--history 200 --body 65536`` is the worst a room holds (chat loads the newest 200).
``--fresh N``: instead, N rounds of a newcomer's first minute: chat starts on a spool with no room
yet, a session enrolls, and the first message of #open (a room made after chat started) is timed to
the screen; with ``--base``, the other checkout's chat too, in turn. A message the live feed's watches
missed shows as the feed's 5 s rescan.

Run: .venv/bin/python bench/chat.py [startups] [sends] [--base DIR] [--history N] [--body BYTES]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import select
import signal
import statistics
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attend.domain.core.envelope import Signal
from attend.domain.messages import delivery
from bench._common import ATTEND, cleanup, enrolled, make_world, ms, pct, time_process

HISTORY = 30  # messages already in #open when chat starts
PACE = 0.1  # seconds between sends


class Screen:
    """`attend chat` on its own pty; ``until`` reads what it draws until every marker was sent."""

    def __init__(self, env: dict[str, str], cwd: str) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        self.start = time.perf_counter()
        self.proc = subprocess.Popen(
            [ATTEND, "chat"],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env={**env, "TERM": "xterm-256color", "LANG": "C.UTF-8"},
            cwd=cwd,
            start_new_session=True,
        )
        os.close(slave)
        self.fd = master
        self.seen = b""

    def until(self, *markers: bytes, timeout: float = 30.0) -> float:
        """Read until each marker has been drawn (since the last call); the time it was, perf_counter."""
        end = time.perf_counter() + timeout
        pending = set(markers)
        while pending:
            left = end - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"not drawn: {sorted(pending)}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.fd, 65536)
            now = time.perf_counter()
            self.seen = self.seen[-4096:] + chunk  # a marker may straddle two reads
            pending = {m for m in pending if m not in self.seen}
        self.seen = b""
        return now

    def close(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            while select.select([self.fd], [], [], 0.5)[0] and os.read(self.fd, 65536):
                pass
        except OSError:
            pass
        self.proc.wait(10)
        os.close(self.fd)


def publish(spool: object, body: str, sid: str) -> None:
    sig = Signal("", "Bench-alpha", "agent", sid, "*", "open", "/bench", body, 0.0)
    delivery.send(spool, sig, ["open"])  # type: ignore[arg-type]


def load() -> str:
    with open("/proc/loadavg") as f:
        return "load " + " ".join(f.read().split()[:3])


def first_screen(env: dict[str, str], cwd: str, newest: bytes) -> float:
    screen = Screen(env, cwd)
    took = screen.until(b"quit", b"Peers", newest) - screen.start
    screen.close()
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("startups", nargs="?", type=int, default=10)
    ap.add_argument("sends", nargs="?", type=int, default=50)
    ap.add_argument("--base", type=Path, help="also start chat from this checkout, in turn with this one")
    ap.add_argument("--history", type=int, default=HISTORY, help="messages in #open before the start")
    ap.add_argument("--body", type=int, default=0, help="bytes per message (80-column lines); 0: one line")
    ap.add_argument("--fresh", type=int, default=0, help="rounds of a first message into a room made after the start")
    args = ap.parse_args()
    startups, sends = args.startups, args.sends
    if args.fresh:
        fresh_rooms(args.fresh, args.base)
        return
    env, spool, home = make_world()
    try:
        measure(env, spool, home, startups, sends, args.base, args.history, args.body)
    finally:
        cleanup(home.parent)


def fresh_rooms(rounds: int, base: Path | None) -> None:
    """The newcomer's first minute, each round in a new HOME: chat on an empty spool, then the first
    message of a room that did not exist when chat started."""
    print(load())
    trees: dict[str, dict[str, str]] = {"this tree": {}}
    if base is not None:
        trees[str(base)] = {"PYTHONPATH": str(base.resolve())}
    lags: dict[str, list[float]] = {name: [] for name in trees}
    for i in range(rounds):
        for name, extra in trees.items():
            env, spool, home = make_world()
            try:
                screen = Screen({**env, **extra}, str(home / "proj"))
                screen.until(b"quit", b"Peers")
                time.sleep(1.0)  # the live feed's watches are set just after the first screen
                sid = enrolled(spool, home)  # a session arrives after chat started
                for n in ("first", "second"):  # #open is made by the first; the feed must watch it for the next
                    body = f"{n}-of-open-{i:03d}"
                    t = time.perf_counter()
                    publish(spool, body, sid)
                    lags[name].append(screen.until(body.encode()) - t)
                    time.sleep(PACE)
                screen.close()
            finally:
                cleanup(home.parent)
    for name, got in lags.items():
        print(
            f"first two messages of a new room -> on screen ({name}): p50 {statistics.median(got) * 1000:.1f} ms, "
            f"max {max(got) * 1000:.1f} ms over {len(got)} (over 1 s: {sum(g > 1 for g in got)})"
        )
    print(load())


def filled(head: str, size: int) -> str:
    """``head``, then 80-column lines up to ``size`` bytes (a diff or a log pasted whole)."""
    line = "x" * 79 + "\n"
    body = head + "\n"
    return body + line * max(0, (size - len(body)) // len(line))


def measure(
    env: dict[str, str],
    spool: object,
    home: Path,
    startups: int,
    sends: int,
    base: Path | None,
    history: int = HISTORY,
    size: int = 0,
) -> None:
    print(load())
    sid = enrolled(spool, home)
    for i in range(history):
        publish(spool, filled(f"history {i:03d}", size) if size else f"history {i:03d}", sid)
    if size:
        print(f"#open: {history} messages of {size} bytes")
    cwd = str(home / "proj")
    newest = f"history {history - 1:03d}".encode()

    bare = time_process([sys.executable, "-c", "pass"], startups)
    helped = time_process([ATTEND, "--help"], startups, env=env)
    firsts, bases = [], []
    base_env = {**env, "PYTHONPATH": str(base.resolve())} if base is not None else None
    for _ in range(startups):
        firsts.append(first_screen(env, cwd, newest))
        if base_env is not None:
            bases.append(first_screen(base_env, cwd, newest))
    print(f"python -c pass:              {ms(bare)}")
    print(f"attend --help:               {ms(helped)}")
    print(f"attend chat, first screen:   {ms(firsts)} p50, {max(firsts) * 1000:.0f} ms max (goal <= 600 ms)")
    if bases:
        ratio = statistics.median(firsts) / statistics.median(bases)
        print(f"  the same from {base}: {ms(bases)} p50, {max(bases) * 1000:.0f} ms max (this tree: {ratio:.2f}x)")

    screen = Screen(env, cwd)
    screen.until(b"quit", b"Peers", newest)
    time.sleep(1.0)  # the live feed's watches are set just after the first screen
    lags = []
    for i in range(sends):
        body = f"bench-live-{i:04d}"
        t = time.perf_counter()
        publish(spool, body, sid)
        lags.append(screen.until(body.encode()) - t)
        time.sleep(PACE)
    screen.close()
    print(
        f"send -> on screen:           p50 {statistics.median(lags) * 1000:.1f} ms, "
        f"p90 {pct(lags, 90) * 1000:.1f} ms, max {max(lags) * 1000:.1f} ms over {sends} (goal p50 <= 50 ms)"
    )
    print(load())


if __name__ == "__main__":
    main()
