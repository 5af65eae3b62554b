"""`attend cleanup` over a large spool: records examined per second and peak memory.

Builds N records over 100 rooms (default 200,000; --big for 1,000,000 after checking free space and
inodes), send times spread evenly over the last 28 days, so the 14-day default policy removes about
half. Each size runs in a fresh child process (`attend cleanup --json`): first --dry-run (examines
and lists, removes nothing), then the real run. Peak memory is the child's max RSS; it must stay
flat as N grows, so a quarter-size spool is measured too and the ratio printed.

Goal: >= 50,000 records examined per second, or the real run within 1.5x of a bare unlink loop over
the same files (a twin spool built beside it; the loop takes half its rooms just before the run and
half just after); memory flat in the number of records. Baselines named in the output: that loop,
and the bare interpreter's own max RSS (python -c pass).
Run: .venv/bin/python bench/cleanup.py [--n 200000] [--big]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attend.domain.core import envelope
from attend.domain.core.envelope import Signal
from attend.layout import cutoff_name
from bench._common import BIN, cleanup, tmpdir, world_env

ROOMS = 100
SPAN = 28 * 86400.0


def build(root: Path, n: int) -> None:
    now = time.time()
    per_room = n // ROOMS
    for r in range(ROOMS):
        room = "open" if r == 0 else f"@chan{r:03d}"
        folder = root / "rooms" / room / "new"
        folder.mkdir(parents=True, exist_ok=True)
        (root / "rooms" / room / "tmp").mkdir(exist_ok=True)
        for i in range(per_room):
            at = now - SPAN * (1 - i / per_room)
            sec, usec = divmod(int(at * 1e6), 1_000_000)
            name = f"{sec:010d}.M{usec:06d}P{r}Q{i}R{i:08x}.bench"
            sig = Signal(name, "Bench-alpha", "agent", "bench-sid", "*", room, "/bench", f"record {i} in {room}", at)
            fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, envelope.render(sig))
            os.close(fd)
    for name in ("channels", "sessions"):
        (root / name).mkdir(exist_ok=True)
    for r in range(1, ROOMS):  # channels exist, so their rooms are not orphans
        (root / "channels" / f"chan{r:03d}" / "members").mkdir(parents=True, exist_ok=True)
        (root / "channels" / f"chan{r:03d}" / "meta.json").write_text('{"pinned": true}')
    os.chmod(root, 0o700)


def bare_unlink(root: Path, cut: str, half: int) -> tuple[int, float]:
    """The baseline: a bare loop over a twin spool built the same way, unlinking (relative to each
    room's folder, in listing order) the records older than ``cut``, the ones cleanup removes, in
    every other room (``half`` 0 or 1). Returns (files unlinked, seconds)."""
    count, t = 0, time.perf_counter()
    for room in sorted(os.listdir(root / "rooms"))[half::2]:
        fd = os.open(root / "rooms" / room / "new", os.O_RDONLY | os.O_DIRECTORY)
        try:
            for name in os.listdir(fd):
                if name < cut:
                    os.unlink(name, dir_fd=fd)
                    count += 1
        finally:
            os.close(fd)
    return count, time.perf_counter() - t


def run_child(argv: list[str], env: dict[str, str]) -> tuple[float, int, dict[str, object]]:
    """(seconds, max RSS in KiB of this child alone, parsed JSON)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of children is the max over all waited-for children; run the largest last
    # or read it per size in a fresh bench process (main() does the latter).
    return elapsed, max(after, before), json.loads(out.stdout)


def measure(n: int) -> None:
    tmp = tmpdir()
    try:
        env = world_env(tmp)
        root = tmp / "home" / ".cache" / "attend"
        twin = tmp / "twin"
        t = time.perf_counter()
        build(root, n)
        made = time.perf_counter() - t
        build(twin, n)  # the same files, for the bare unlink loop
        os.sync()  # write the built trees back first, so the runs do not pay for the build's writeback
        attend = shutil.which("attend", path=str(BIN)) or "attend"
        dry_s, dry_rss, dry = run_child([attend, "cleanup", "--dry-run", "--json"], env)
        os.sync()
        cut = cutoff_name(time.time() - 14 * 86400)  # the default policy's age limit, as the run takes it
        # The bare loop brackets the run, half its rooms before and half after, so a disk that other
        # work slows or frees during the run weighs on both figures alike.
        before_n, before_s = bare_unlink(twin, cut, 0)
        os.sync()
        real_s, real_rss, real = run_child([attend, "cleanup", "--json"], env)
        os.sync()
        after_n, after_s = bare_unlink(twin, cut, 1)
        bare_n, bare_s = before_n + after_n, before_s + after_s
        print(
            json.dumps(
                {
                    "n": n,
                    "build_s": round(made, 1),
                    "dry_examined": dry["examined"],
                    "dry_s": round(dry_s, 3),
                    "dry_rate": round(int(dry["examined"]) / dry_s),  # type: ignore[call-overload]
                    "real_examined": real["examined"],
                    "real_removed": real["files"],
                    "real_freed": real["bytes"],
                    "real_s": round(real_s, 3),
                    "real_rate": round(int(real["examined"]) / real_s),  # type: ignore[call-overload]
                    "max_rss_kib": max(dry_rss, real_rss),
                    "bare_unlinked": bare_n,
                    "bare_s": round(bare_s, 3),
                    "bare_unlinks_per_s": round(bare_n / bare_s),
                    "removal_rate": round(int(real["files"]) / real_s),  # type: ignore[call-overload]
                }
            )
        )
    finally:
        cleanup(tmp)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--big", action="store_true", help="1,000,000 records (checks free space and inodes first)")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        measure(args.one)
        return
    n = 1_000_000 if args.big else args.n
    probe = tmpdir()
    st = os.statvfs(probe)
    cleanup(probe)
    need_bytes, need_inodes = n * 4096 * 3, int(n * 2.4)  # the spool and its twin
    if st.f_bavail * st.f_frsize < need_bytes or st.f_favail < need_inodes:
        sys.exit(f"not enough room for {n} records: need ~{need_bytes / 1e9:.1f} GB and {need_inodes} inodes free")
    base = subprocess.run(
        [sys.executable, "-c", "import resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"],
        capture_output=True,
        text=True,
        check=True,
    )
    print(f"baseline: bare interpreter max RSS {base.stdout.strip()} KiB")
    rows = []
    for size in (n // 4, n):
        # A fresh bench process per size, so RUSAGE_CHILDREN's max belongs to that size alone.
        out = subprocess.run([sys.executable, __file__, "--one", str(size)], capture_output=True, text=True, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(
            f"{row['n']:>9} records: dry run {row['dry_rate']:,} records/s ({row['dry_s']} s), "
            f"real run {row['real_rate']:,} records/s ({row['real_s']} s, removed {row['real_removed']:,}, "
            f"freed {row['real_freed'] / 1e6:.1f} MB); peak RSS {row['max_rss_kib'] / 1024:.1f} MiB"
        )
        print(
            f"{'':>9}          removals {row['removal_rate']:,}/s; a bare unlink loop over the same "
            f"{row['bare_unlinked']:,} files (a twin spool, same disk) {row['bare_unlinks_per_s']:,}/s "
            f"({row['bare_s']} s): the whole cleanup process takes {row['real_s'] / row['bare_s']:.2f}x the loop"
        )
    small, large = rows
    fast = min(large["dry_rate"], large["real_rate"]) >= 50_000
    near = large["real_s"] <= 1.5 * large["bare_s"]
    print(f"goal >= 50,000 records/s, or within 1.5x of the bare loop: {'met' if fast or near else 'NOT met'}")
    print(
        f"memory: {large['max_rss_kib'] / 1024:.1f} MiB at {large['n']:,} vs {small['max_rss_kib'] / 1024:.1f} MiB "
        f"at {small['n']:,} (ratio {large['max_rss_kib'] / small['max_rss_kib']:.2f} for 4x the records)"
    )


if __name__ == "__main__":
    main()
