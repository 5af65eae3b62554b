"""`attend peers` with 50 live stand-in Claude sessions (enrolled, registered, in channels).

Goal: <= 150 ms (issue 15: with 100 sessions, and `attend status` too). Baseline: a bare interpreter
start (python -c pass), and `attend peers` with no sessions, both measured interleaved with the
N-session case; `--tree DIR` adds `attend peers` and `attend status` from another checkout (say the
branch point, in a temporary worktree), interleaved too.
Run: .venv/bin/python bench/peers.py [--n 50] [--runs 15] [--tree DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attend.testing.standin import StandIn
from bench._common import BIN, cleanup, interleaved, ms, time_process, tmpdir, world_env
from bench.send import ENTRY


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--tree", type=Path, default=None, help="also time peers and status from this checkout")
    args = ap.parse_args()
    print(f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
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
            f"status, {args.n} live sessions": lambda: time_process([attend, "status"], 1, env=env, cwd=str(tmp))[0],
        }
        if args.tree is not None:
            other = {**env, "PYTHONPATH": str(args.tree.resolve())}
            for verb in ("peers", "status"):
                argv = [sys.executable, "-c", ENTRY, verb]
                cases[f"{verb} ({args.tree.name}), {args.n}"] = lambda argv=argv: time_process(  # type: ignore[misc]
                    argv, 1, env=other, cwd=str(tmp)
                )[0]
        results = interleaved(cases, args.runs)
        bare = sorted(results["bare interpreter"])[len(results["bare interpreter"]) // 2]
        for name, xs in results.items():
            med = sorted(xs)[len(xs) // 2]
            print(f"{name:>32}: median {ms(xs)} ({med / bare:.1f}x bare)")
        full = sorted(results[f"peers, {args.n} live sessions"])[args.runs // 2]
        print(f"goal <= 150 ms: {'met' if full <= 0.150 else 'NOT met'}")
    finally:
        for s in stands:
            s.close()
        cleanup(tmp)
        cleanup(empty)


if __name__ == "__main__":
    main()
