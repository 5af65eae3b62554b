"""/proc, and a host's session records (``<pid>.json``), read the one way both the identity walk and the drain's
fast path need: standard library only, so the fast path can import it. Linux; elsewhere every /proc
read says "unknown" (None)."""

from __future__ import annotations

import os
import stat

from attend import safejson


def stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name: [0] state, [1] ppid, … [19] starttime."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("ascii", "replace")
    except OSError:
        return None
    # comm may hold spaces and ')': the fields start after the last ')'.
    return data[data.rfind(")") + 2 :].split()


def session_record(folder: str, pid: int) -> object | None:
    """The parsed JSON of a host's session record ``<folder>/<pid>.json``; None when it is
    missing, unreadable, not JSON, or not a regular file (a FIFO planted there never blocks a reader)."""
    try:
        fd = os.open(os.path.join(folder, f"{pid}.json"), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            data: object = safejson.loads(f.read(1 << 20))
            return data
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
