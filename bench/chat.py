"""`attend chat` benchmarks, on a real pseudo-terminal of 80x24:

- startup to the first full screen: from spawning `attend chat` until the terminal has been sent the
  footer, the peers pane and the newest message of #open (goal <= 600 ms), beside `python -c pass`
  and `attend --help` as baselines;
- send -> on screen: from the start of a send in this process (the library send, durable, as
  `attend send` makes it) until the body reaches the terminal (goal p50 <= 50 ms).

Run: .venv/bin/python bench/chat.py [startups] [sends]
"""

from __future__ import annotations

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

from attend.domain import delivery
from attend.domain.envelope import Signal
from bench._common import ATTEND, enrolled, make_world, ms, pct, time_process

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


def main() -> None:
    startups = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    sends = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    env, spool, home = make_world()
    sid = enrolled(spool, home)
    for i in range(HISTORY):
        publish(spool, f"history {i:02d}", sid)
    cwd = str(home / "proj")
    newest = f"history {HISTORY - 1:02d}".encode()

    bare = time_process([sys.executable, "-c", "pass"], startups)
    helped = time_process([ATTEND, "--help"], startups, env=env)
    firsts = []
    for _ in range(startups):
        screen = Screen(env, cwd)
        firsts.append(screen.until(b"quit", b"Peers", newest) - screen.start)
        screen.close()
    print(f"python -c pass:              {ms(bare)}")
    print(f"attend --help:               {ms(helped)}")
    print(f"attend chat, first screen:   {ms(firsts)} p50, {max(firsts) * 1000:.0f} ms max (goal <= 600 ms)")

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


if __name__ == "__main__":
    main()
