"""50 concurrent `attend join` to one channel, from 50 live stand-in Claude sessions (real processes,
each enrolling and registering): all 50 must be members, and the batch is timed.

Baseline: one `attend join` alone (the batch's floor is 50 of those on this machine's cores).
Run: .venv/bin/python bench/channels.py [--n 50]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attend.domain.messages import channels
from attend.spool import Spool
from attend.testing.standin import StandIn
from bench._common import BIN, cleanup, tmpdir, world_env


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=50)
    args = ap.parse_args()
    tmp = tmpdir()
    env = world_env(tmp)
    attend = shutil.which("attend", path=str(BIN)) or "attend"
    project = tmp / "proj"
    project.mkdir()
    stands = [StandIn(tmp / "home", project, env) for _ in range(args.n + 1)]
    try:
        solo = stands.pop()
        t = time.perf_counter()
        solo.attend("join", "warmup")
        one = time.perf_counter() - t
        # Each stand-in launches its join at once; the host answers when its child exits.
        t = time.perf_counter()
        for s in stands:
            assert s.proc.stdin
            request = {"argv": [attend, "join", "crowd"], "stdin": "", "env": {}, "unset": [], "cwd": str(project)}
            s.proc.stdin.write(json.dumps(request) + "\n")
            s.proc.stdin.flush()
        codes = []
        for s in stands:
            assert s.proc.stdout
            codes.append('"rc": 0' in s.proc.stdout.readline())
        batch = time.perf_counter() - t
        spool = Spool.open(tmp / "home" / ".cache" / "attend")
        members = channels.members(spool, "crowd")
        want = sorted(s.session_id for s in stands)
        print(f"concurrent joins: {args.n}; exit 0: {sum(codes)}; members present: {len(members)}")
        print(f"all present and none erased: {members == want}")
        print(f"batch: {batch * 1000:.0f} ms ({batch / args.n * 1000:.1f} ms per join amortised)")
        print(f"one join alone (baseline): {one * 1000:.0f} ms; batch / (n x baseline) = {batch / (args.n * one):.2f}")
    finally:
        for s in stands:
            s.close()
        solo.close()
        subprocess.run(["true"])
        cleanup(tmp)


if __name__ == "__main__":
    main()
