"""The drain's fast path: decide "nothing to deliver" on the standard library alone.

The Stop hook runs at every turn end of every session, so its common case (nothing pending) must
cost about a bare interpreter start: no click, psutil, portalocker or yaml, not even attend.spool.
It takes identity from the payload's ``session_id`` and the enrollment file, as DESIGN.md §4
allows, and answers with a few stat calls:

- not enrolled, and no sign of a /clear: exit 0 silently, writing nothing;
- enrolled, nothing in ``new/`` or ``claimed/`` and no cold-start note: touch the heartbeat, end
  the chain of drain rounds, exit 0 silently;
- anything else (pending mail, an opt-out, a /clear, an odd payload): hand the payload to the
  full path in ``attend.conduits.drain``.

The spool root and the file names below restate attend.spool and attend.domain.sessions; a test holds
the two in agreement.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Mapping

FAST_ARGS = (
    ("--drain", "--format", "hook"),
    ("--format", "hook", "--drain"),
    ("--drain", "--format=hook"),
    ("--format=hook", "--drain"),
)
MAX_HOPS = 15  # as identity.MAX_HOPS


def read_payload() -> bytes:
    """The Stop payload from stdin; empty when there is no stdin to read (a closed descriptor makes
    ``sys.stdin`` None), so the drain decides from its environment instead of crashing."""
    import sys

    try:
        return sys.stdin.buffer.read() if sys.stdin is not None else b""
    except (OSError, ValueError):
        return b""


def wants_fast_path(argv: list[str]) -> bool:
    return len(argv) >= 2 and argv[1] == "inbox" and tuple(argv[2:]) in FAST_ARGS


def spool_root(env: Mapping[str, str]) -> str:
    """As attend.spool.default_root: $ATTEND_HOME, else an absolute $XDG_CACHE_HOME/attend, else
    ~/.cache/attend."""
    if home := env.get("ATTEND_HOME"):
        return os.path.abspath(home)
    xdg = env.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "attend")
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache", "attend")


def _valid_sid(sid: object) -> bool:
    return (
        isinstance(sid, str)
        and 0 < len(sid) <= 128
        and not sid.startswith("-")
        and all(c.isalnum() or c in "-_" for c in sid)
    )


def _exists(path: str) -> bool:
    try:
        os.lstat(path)
    except OSError:
        return False
    return True


def _private(root: str, sid: str) -> bool:
    """The checks attend.spool makes before writing: a root that is ours and not open to others, and
    real folders (never a planted symlink) down to the session's own."""
    try:
        st = os.stat(root)
        if st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return False
        return all(stat.S_ISDIR(os.lstat(p).st_mode) for p in (f"{root}/sessions", f"{root}/sessions/{sid}"))
    except OSError:
        return False


def _nonempty(folder: str) -> bool:
    try:
        with os.scandir(folder) as it:
            return any(not e.name.startswith(".") for e in it)
    except FileNotFoundError:
        return False


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("ascii", "replace")
    except OSError:
        return None
    return data[data.rfind(")") + 2 :].split()


def _cleared(root: str, sid: str, env: Mapping[str, str]) -> bool:
    """Whether a Claude process in our ancestry enrolled under another id (a /clear to follow)."""
    start = env.get("CLAUDE_PID", "")
    pid: int | None = int(start) if start.isdigit() else os.getppid()
    for _ in range(MAX_HOPS + 1):
        if pid is None or pid <= 1:
            return False
        fields = _stat_fields(pid)
        if fields is None:
            return not os.path.isdir("/proc")  # no /proc: let the full path walk with psutil
        try:
            with open(os.path.join(root, "by-claude", f"{pid}-{fields[19]}"), "rb") as f:
                old = f.read().decode("utf-8", "replace").strip()
        except OSError:
            pid = int(fields[1])
            continue
        return old != sid
    return False


def decide(data: bytes, env: Mapping[str, str]) -> int | None:
    """0 when the drain is decided here (nothing printed); None to take the full path."""
    try:
        payload = json.loads(data or b"{}")
    except ValueError:
        return None
    if not isinstance(payload, dict):
        return None
    sid = payload.get("session_id")
    if not _valid_sid(sid):
        return None
    assert isinstance(sid, str)
    root = spool_root(env)
    base = os.path.join(root, "sessions", sid)
    if not _exists(os.path.join(base, "enrolled")):
        return None if _cleared(root, sid, env) else 0
    if _exists(os.path.join(base, "optout")) or _exists(os.path.join(base, "notice")):
        return None
    if _nonempty(os.path.join(base, "new")) or _nonempty(os.path.join(base, "claimed")):
        return None
    if not _private(root, sid):
        return None  # the full path refuses it, with the reason
    heartbeat = os.path.join(base, "heartbeat")
    try:
        os.utime(heartbeat, follow_symlinks=False)
    except FileNotFoundError:
        return None  # let the full path create it, with the spool's checks
    with contextlib.suppress(OSError):  # an empty drain ends the chain of rounds
        os.unlink(os.path.join(base, "drain-rounds"))
    return 0
