"""`attend --help` as a whole process: median wall and CPU time, interleaved with `python -c pass`
and a plain `attend send`, and their ratios. The top-level help prints a generated text
(attend/cli/toplevel.py) without importing click or any verb; a subcommand's help still goes
through click (`attend send --help` is measured beside it for comparison).

Run: .venv/bin/python bench/help.py [--runs N]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import BIN, cleanup, interleaved, ms, tmpdir, world_env


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    tmp = tmpdir()
    env = world_env(tmp)
    project = tmp / "proj"
    project.mkdir()
    attend = str(BIN / "attend")
    subprocess.run([attend, "send", "warm-up"], env=env, cwd=project, capture_output=True, check=True)
    cpu: dict[str, list[float]] = {}

    def case(name: str, argv: list[str]) -> float:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(argv, env=env, cwd=project, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.setdefault(name, []).append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        return wall

    cases = {
        "python -c pass": lambda: case("python -c pass", [sys.executable, "-c", "pass"]),
        "attend --help": lambda: case("attend --help", [attend, "--help"]),
        "attend send": lambda: case("attend send", [attend, "send", "-q", "a bench message"]),
        "attend send --help": lambda: case("attend send --help", [attend, "send", "--help"]),
    }
    walls = interleaved(cases, args.runs)
    base = statistics.median(walls["python -c pass"])
    base_cpu = statistics.median(cpu["python -c pass"])
    print(f"{'case':<20} {'wall':>10} {'cpu':>10} {'wall/pass':>10} {'cpu/pass':>9}")
    for name, xs in walls.items():
        c = statistics.median(cpu[name])
        ratio = statistics.median(xs) / base
        print(f"{name:<20} {ms(xs):>10} {c * 1000:>7.1f} ms {ratio:>9.2f}x {c / base_cpu:>8.2f}x")
    cleanup(tmp)


if __name__ == "__main__":
    main()
