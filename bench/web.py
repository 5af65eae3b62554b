"""`attend web` benchmarks, the real binary serving a real browser (Debian's chromium, through Playwright):

- spool -> DOM: from the start of a send in this process (the library send, durable, as `attend send`
  makes it) until the body's text is in the page's DOM (a MutationObserver in the page notes the wall
  clock), p50 and p95 (goal p95 <= 100 ms);
- idle: the server's CPU (its utime + stime from /proc over the window) and memory (VmRSS, VmHWM)
  with one page open and connected, nothing sent (goal <= 0.1 % of a core, <= 40 MB).

Run: .venv/bin/python bench/web.py [sends] [--idle SECONDS]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attend.domain.core.envelope import Signal
from attend.domain.messages import delivery
from bench._common import ATTEND, cleanup, enrolled, make_world, pct

PACE = 0.1  # seconds between sends
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
OBSERVE = """() => {
  window.__seen = {};
  new MutationObserver(() => {
    const now = performance.timeOrigin + performance.now();
    for (const b of document.querySelectorAll('#messages .body')) {
      const m = /^bench (\\d+)$/.exec(b.textContent);
      if (m && !(m[1] in window.__seen)) window.__seen[m[1]] = now;
    }
  }).observe(document.getElementById('messages'), { childList: true, subtree: true });
}"""


def publish(spool: object, body: str, sid: str) -> None:
    sig = Signal("", "Bench-alpha", "agent", sid, "*", "open", "/bench", body, 0.0)
    delivery.send(spool, sig, ["open"])  # type: ignore[arg-type]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory(pid: int) -> dict[str, float]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sends", nargs="?", type=int, default=100)
    ap.add_argument("--idle", type=float, default=60.0, help="seconds of the idle window")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    env, spool, home = make_world()
    sid = enrolled(spool, home)
    for i in range(30):
        publish(spool, f"history {i:03d}", sid)
    server = subprocess.Popen(
        [ATTEND, "web", "--port", "0"], env=env, cwd=str(home / "proj"), stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page(viewport={"width": 1200, "height": 760})
            page.goto(url)
            page.wait_for_selector("body[data-ready='1']")
            page.wait_for_function("() => document.getElementById('conn').textContent === 'live'")
            page.evaluate(OBSERVE)
            lags = []
            for i in range(args.sends):
                t0 = time.time()
                publish(spool, f"bench {i}", sid)
                page.wait_for_function("i => i in window.__seen", arg=str(i))
                lags.append(page.evaluate("i => window.__seen[i]", str(i)) / 1000 - t0)
                time.sleep(PACE)
            print(
                f"spool -> DOM:  p50 {statistics.median(lags) * 1000:.1f} ms, p95 {pct(lags, 95) * 1000:.1f} ms, "
                f"max {max(lags) * 1000:.1f} ms over {args.sends} sends (goal p95 <= 100 ms)"
            )
            time.sleep(5)  # the sends' aftermath settles
            before, start = cpu_seconds(server.pid), time.monotonic()
            time.sleep(args.idle)
            used, span = cpu_seconds(server.pid) - before, time.monotonic() - start
            mem = memory(server.pid)
            connected = page.evaluate("() => document.getElementById('conn').textContent")
            print(
                f"idle server:   {used / span * 100:.3f} % of a core over {span:.0f} s with one page open "
                f"({connected}); RSS {mem['VmRSS']:.1f} MB, peak {mem['VmHWM']:.1f} MB (goal <= 0.1 %, <= 40 MB)"
            )
            browser.close()
    finally:
        server.terminate()
        server.wait(15)
        cleanup(home.parent)


if __name__ == "__main__":
    main()
