"""Benchmark for bounded standard input (issue 32, finding 4): the peak memory of `attend send` and
`attend reply` (click's path) refusing an oversized body piped in, and of a send at the limit.

Each run pipes N MiB of `a` into the real command (a writer thread feeds the pipe until the reader
closes it) and reads the child's peak resident set (``ru_maxrss`` of the waited child, via
``os.wait4``); the bytes the writer got into the pipe before the refusal are printed too.

Run: .venv/bin/python bench/stdin_bound.py [--mib N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ATTEND, cleanup, tmpdir, world_env


def piped(argv: list[str], env: dict[str, str], cwd: str, offered: int) -> tuple[int, int, int]:
    """(exit code, peak RSS in KiB, bytes written into the pipe)."""
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd, bufsize=0
    )
    assert proc.stdin is not None
    written = [0]

    def feed() -> None:
        chunk = b"a" * (1 << 20)
        try:
            while written[0] < offered:
                n = proc.stdin.write(chunk[: offered - written[0]])  # type: ignore[union-attr]
                written[0] += n or 0
            proc.stdin.close()  # type: ignore[union-attr]
        except (BrokenPipeError, ValueError):
            pass

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    t.join(5)
    return proc.returncode, usage.ru_maxrss, written[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=256, help="MiB piped into each refused command")
    args = ap.parse_args()
    tmp = tmpdir()
    try:
        env = world_env(tmp)
        cwd = str(tmp)
        print(f"{'command':<40} {'exit':>4} {'peak RSS':>10} {'piped in':>12}")
        for label, argv, offered in (
            (f"send, {args.mib} MiB (fast path)", [ATTEND, "send"], args.mib << 20),
            (f"send --to '#open', {args.mib} MiB", [ATTEND, "send", "--to", "#open"], args.mib << 20),
            (f"reply --re x, {args.mib} MiB (click)", [ATTEND, "reply", "--re", "x"], args.mib << 20),
            ("send, 64 KiB (at the limit)", [ATTEND, "send"], 64 * 1024),
        ):
            code, rss, wrote = piped(argv, env, cwd, offered)
            print(f"{label:<40} {code:>4} {rss / 1024:>7.1f} MB {wrote / (1 << 20):>9.2f} MiB")
    finally:
        cleanup(tmp)


if __name__ == "__main__":
    main()
