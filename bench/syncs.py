"""What the two syncs of a send cost, and what the kernel offers in their place (issue 39).

A send writes its record in `rooms/<room>/tmp/`, syncs it, links it into `rooms/<room>/new/` and syncs
that folder (docs/architecture/spool.md, "Delivery"). This times, on the spool's own filesystem (a
folder under $HOME's cache unless given one), the steps as the gate does them and the alternatives:

- `fsync` of the file, then `fsync` of `new/` (what the gate does);
- `fdatasync` of the file in place of its `fsync` (the file is new, so its size, the metadata a read
  needs, is written either way: the same guarantee, less only the timestamps);
- the file opened with `O_DSYNC` (each write synced as it is made; one call fewer);
- `sync_file_range` of the file (starts and waits for the data's writeback, but neither writes the
  file's metadata nor flushes the disk's cache: not durable, timed only to show what it would save);
- no sync at all (the floor: what the rest of the steps cost).

Run: .venv/bin/python bench/syncs.py [--n 200] [--dir DIR]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

RECORD = b"x" * 600  # a record of a short message, headers and all
SYNC_FILE_RANGE_WAIT_BEFORE, SYNC_FILE_RANGE_WRITE, SYNC_FILE_RANGE_WAIT_AFTER = 1, 2, 4


def sync_file_range(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    flags = SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER
    if libc.sync_file_range(fd, ctypes.c_longlong(0), ctypes.c_longlong(0), flags) != 0:
        raise OSError(ctypes.get_errno(), "sync_file_range")


def one(root: Path, i: int, variant: str) -> float:
    """tmp/ write, the file's sync, the link into new/, the folder's sync, the tmp name's unlink."""
    tmp, new = root / "tmp", root / "new"
    name = f"{variant}-{i}"
    extra = os.O_DSYNC if variant == "O_DSYNC" else 0
    t = time.perf_counter()
    fd = os.open(tmp / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | extra, 0o600)
    try:
        os.write(fd, RECORD)
        if variant == "fsync":
            os.fsync(fd)
        elif variant == "fdatasync":
            os.fdatasync(fd)
        elif variant == "sync_file_range (not durable)":
            sync_file_range(fd)
    finally:
        os.close(fd)
    os.link(tmp / name, new / name)
    if variant != "no sync (not durable)":
        d = os.open(new, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(d)
        finally:
            os.close(d)
    os.unlink(tmp / name)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--dir", type=Path, default=Path.home() / ".cache")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="attend-bench-syncs-", dir=args.dir))
    (root / "tmp").mkdir()
    (root / "new").mkdir()
    variants = ["fsync", "fdatasync", "O_DSYNC", "sync_file_range (not durable)", "no sync (not durable)"]
    times: dict[str, list[float]] = {v: [] for v in variants}
    step: Callable[[int, str], float] = lambda i, v: one(root, i, v)  # noqa: E731
    for i in range(args.n):  # interleaved, so the disk's moods hit every variant alike
        for v in variants:
            times[v].append(step(i, v))
    fs = os.statvfs(root)
    print(
        f"write, sync, link into new/, sync new/, unlink ({args.n} each, interleaved; {root.parent}, "
        f"block {fs.f_bsize}; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}):"
    )
    for v in variants:
        xs = sorted(times[v])
        print(f"   {v}: p50 {statistics.median(xs) * 1000:.2f} ms, p90 {xs[int(0.9 * len(xs))] * 1000:.2f} ms")
    for name in os.listdir(root / "new"):
        os.unlink(root / "new" / name)
    os.rmdir(root / "new")
    os.rmdir(root / "tmp")
    os.rmdir(root)


if __name__ == "__main__":
    main()
