"""`attend peers` with 50 live stand-in Claude sessions (enrolled, registered, in channels).

Goal: <= 150 ms. Baseline: a bare interpreter start (python -c pass), and `attend peers` with no
sessions, both measured interleaved with the 50-session case.
Run: .venv/bin/python bench/peers.py [--n 50] [--runs 15]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attend.testing.standin import StandIn
from bench._common import BIN, cleanup, interleaved, ms, time_process, tmpdir, world_env


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    tmp, empty = tmpdir(), tmpdir()
    env, env_empty = world_env(tmp), world_env(empty)
    attend = shutil.which("attend", path=str(BIN)) or "attend"
    stands: list[StandIn] = []
    try:
        for i in range(args.n):
            project = tmp / f"proj{i % 10}"
            project.mkdir(exist_ok=True)
            s = StandIn(tmp / "home", project, env)
            stands.append(s)
            s.attend("join", f"team{i % 5}")
        cases = {
            "bare interpreter": lambda: time_process([sys.executable, "-c", "pass"], 1)[0],
            "peers, no sessions": lambda: time_process([attend, "peers"], 1, env=env_empty, cwd=str(empty))[0],
            f"peers, {args.n} live sessions": lambda: time_process([attend, "peers"], 1, env=env, cwd=str(tmp))[0],
        }
        results = interleaved(cases, args.runs)
        bare = sorted(results["bare interpreter"])[len(results["bare interpreter"]) // 2]
        for name, xs in results.items():
            med = sorted(xs)[len(xs) // 2]
            print(f"{name:>26}: median {ms(xs)} ({med / bare:.1f}x bare)")
        full = sorted(results[f"peers, {args.n} live sessions"])[args.runs // 2]
        print(f"goal <= 150 ms: {'met' if full <= 0.150 else 'NOT met'}")
    finally:
        for s in stands:
            s.close()
        cleanup(tmp)
        cleanup(empty)


if __name__ == "__main__":
    main()
