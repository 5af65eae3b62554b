"""Benchmark for the PreToolUse guard (issue 7). Wired under matcher "*", it runs before every tool
call, so its whole-process cost per call is what a session pays:

1. the wrapper script hooks/ways/attend-guard-pre.sh, per call, for a tool it passes at once (Read of
   a project file), a Bash command it parses, and a refusal; beside `sh -c true` and `python3 -c pass`
   measured in the same rounds;
2. the check alone in-process (attend.setup.guard.decide), per call.

Run: .venv/bin/python bench/guard.py [--runs N]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attend.setup import guard
from attend.setup.data import data_file
from bench._common import cleanup, interleaved, ms, tmpdir, world_env

SCRIPT = str(data_file("hooks", "ways", "attend-guard-pre.sh"))


def payload(tool: str, tool_input: dict[str, object], cwd: str) -> bytes:
    return json.dumps(
        {"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input, "cwd": cwd}
    ).encode()


def run_once(argv: list[str], env: dict[str, str], stdin: bytes = b"") -> float:
    t = time.perf_counter()
    subprocess.run(argv, input=stdin, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t


def main(runs: int) -> None:
    tmp = tmpdir()
    try:
        env = world_env(tmp)
        cwd = str(tmp / "proj")
        os.makedirs(cwd, exist_ok=True)
        read = payload("Read", {"file_path": f"{cwd}/README.md"}, cwd)
        bash = payload("Bash", {"command": "git status && ls -la src | grep py", "description": "d"}, cwd)
        refuse = payload("Bash", {"command": "attend run"}, cwd)
        cases: dict[str, Callable[[], float]] = {
            "sh -c true": lambda: run_once(["/bin/sh", "-c", "true"], env),
            "python3 -c pass": lambda: run_once([sys.executable, "-c", "pass"], env),
            "guard, Read (pass)": lambda: run_once([SCRIPT], env, read),
            "guard, Bash (parsed)": lambda: run_once([SCRIPT], env, bash),
            "guard, Bash (refused)": lambda: run_once([SCRIPT], env, refuse),
        }
        for _ in range(3):  # warm the page cache and bytecode
            for fn in cases.values():
                fn()
        results = interleaved(cases, runs)
        base = statistics.median(results["python3 -c pass"])
        print(f"whole process, median of {runs}:")
        for name, xs in results.items():
            print(f"  {name:<24} {ms(xs):>9}   {statistics.median(xs) / base:.1f}x python3 -c pass")
        denv = {"HOME": env["HOME"]}
        for label, data in (("Read", read), ("Bash", bash)):
            doc = json.loads(data)
            n = 2000
            t = time.perf_counter()
            for _ in range(n):
                guard.decide(doc, denv)
            print(f"  in-process check, {label:<5} {(time.perf_counter() - t) / n * 1e6:.0f} µs per call")
    finally:
        cleanup(tmp)


if __name__ == "__main__":
    main(int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 30)
