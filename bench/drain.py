"""Drain benchmarks: the empty hook drain as a whole process against a bare interpreter start
(goal <= 3x), and a drain with 1,000 pending (goal <= 200 ms).

Run: .venv/bin/python bench/drain.py [runs] [--tree DIR]   (--tree: also the empty drain from that
checkout, say the branch point, interleaved)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attend.domain import delivery
from attend.domain.envelope import Signal
from attend.identity import proc_start
from bench._common import ATTEND, ENTRY, enrolled, make_world


def timed(argv: list[str], stdin: str, env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    r = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env)
    return time.perf_counter() - t0, r.stdout


def main() -> None:
    args = sys.argv[1:]
    tree = None
    if "--tree" in args:
        at = args.index("--tree")
        tree, args = Path(args[at + 1]), args[:at] + args[at + 2 :]
    runs = int(args[0]) if args else 40
    env, spool, home = make_world()
    sid = enrolled(spool, home)
    # The drain acts only for the session among its ancestors: this process stands in for its Claude,
    # under Claude Code's name (a hook's session is its client's own process: a record alone is not).
    import ctypes

    ctypes.CDLL(None).prctl(15, b"claude", 0, 0, 0)  # PR_SET_NAME
    record = {"pid": os.getpid(), "sessionId": sid, "cwd": str(home / "proj"), "procStart": proc_start(os.getpid())}
    (home / ".claude" / "sessions").mkdir(parents=True, exist_ok=True)
    (home / ".claude" / "sessions" / f"{os.getpid()}.json").write_text(json.dumps(record))
    payload = json.dumps({"session_id": sid, "stop_hook_active": False, "background_tasks": []})
    hook = [ATTEND, "inbox", "--drain", "--format", "hook"]

    other = [sys.executable, "-c", ENTRY, "inbox", "--drain", "--format", "hook"]
    bare, empty, theirs = [], [], []
    for _ in range(runs):  # interleaved, so both see the same machine load
        bare.append(timed([sys.executable, "-c", "pass"], "", env)[0])
        secs, out = timed(hook, payload, env)
        assert out == "", out
        empty.append(secs)
        if tree is not None:
            secs, out = timed(other, payload, {**env, "PYTHONPATH": str(tree)})
            assert out == "", out
            theirs.append(secs)
    b, e = statistics.median(bare), statistics.median(empty)
    print(f"python -c pass        median {b * 1000:7.2f} ms")
    print(f"empty drain (hook)    median {e * 1000:7.2f} ms   ratio {e / b:.2f}x   (goal <= 3x)")
    if tree is not None:
        t = statistics.median(theirs)
        print(f"  the same, {tree}: median {t * 1000:7.2f} ms   ratio {t / b:.2f}x")

    sig = Signal("", "bench-human", "human", "bench@tty", "*", "open", str(home), "a pending message", 0.0)
    full = []
    for _ in range(3):
        for _ in range(1000):
            delivery.send(spool, sig, ["open"])
        secs, out = timed(hook, payload, env)
        assert json.loads(out)["reason"].startswith("[attend] 1000 message(s)"), out[:200]
        full.append(secs)
    print(f"drain, 1,000 pending  median {statistics.median(full) * 1000:7.2f} ms   (goal <= 200 ms)")


if __name__ == "__main__":
    main()
