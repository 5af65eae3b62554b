"""/proc, read the one way both the identity walk and the drain's fast path need: standard library
only, so the fast path can import it. Linux; elsewhere every read says "unknown" (None)."""

from __future__ import annotations


def stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name: [0] state, [1] ppid, … [19] starttime."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("ascii", "replace")
    except OSError:
        return None
    # comm may hold spaces and ')': the fields start after the last ')'.
    return data[data.rfind(")") + 2 :].split()
