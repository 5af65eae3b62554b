"""The pre-tool hook's fast path (``attend hook edit``): decide "no other session's lease covers this
edit" on the standard library alone, as the drain's fast path does for an empty turn end.

The client runs the hook before each edit tool call (docs/architecture/leases.md, "The check at the
edit"). Here: the payload's edited paths, resolved; one listing of ``sessions/`` for the holders'
lease files (through the gate); each file of another session read and matched; with a relay, one
look at its mirror for other hosts' leases. No lease covers the
edit: exit 0 with no output, so the edit costs the model nothing. One does: the full check
(``attend.leases.check``) judges the holder's life, the caller and ``leases.enforce``, and answers.
Any surprise here hands over to the full check, which fails open.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from attend import layout as L
from attend import safejson
from attend.leases import tree
from attend.leases.record import MAX_FILE, parse
from attend.spool import Spool

# Where an edit tool's input names its file: Claude Code's Edit, Write and MultiEdit (file_path) and
# NotebookEdit (notebook_path), Gemini CLI's write_file and replace (file_path), a patch's headers.
PATH_KEYS = ("file_path", "notebook_path", "path", "absolute_path")
PATCH_MARKS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")
MAX_PATHS = 64
MAX_INPUT = 4 << 20  # bytes of a hook payload read


def read_payload() -> bytes:
    import sys

    try:
        return sys.stdin.buffer.read(MAX_INPUT) if sys.stdin is not None else b""
    except (OSError, ValueError):
        return b""


def _patch_paths(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        for mark in PATCH_MARKS:
            if line.startswith(mark):
                out.append(line[len(mark) :].strip())
    return out


def edit_paths(payload: Mapping[str, object]) -> list[str]:
    """The real paths an edit tool call's input names (relative ones against the payload's ``cwd``)."""
    given = payload.get("tool_input")
    cwd = payload.get("cwd")
    base = cwd if isinstance(cwd, str) and os.path.isabs(cwd) else os.getcwd()
    found: list[str] = []
    if isinstance(given, str):
        found += _patch_paths(given)
    elif isinstance(given, dict):
        for key, value in given.items():
            if not isinstance(value, str):
                continue
            if key in PATH_KEYS:
                found.append(value)
            elif "*** " in value:
                found += _patch_paths(value)
    out: list[str] = []
    for path in found[:MAX_PATHS]:
        if path and "\0" not in path:
            real = tree.resolve(path, base)
            if real not in out:
                out.append(real)
    return out


def covered(spool: Spool, paths: list[str], caller: str | None) -> bool:
    """Whether a lease of a session other than ``caller`` covers one of ``paths`` (life not judged)."""
    for sid, has in spool.survey(L.SESSIONS, (L.LEASES,)).items():
        if sid == caller or not isinstance(has, tuple) or not has[0]:
            continue
        try:
            holding = parse(sid, spool.read(L.SESSIONS, sid, L.LEASES, limit=MAX_FILE))
        except OSError:
            continue
        if holding is not None and any(x.covers(p) for x in holding.leases for p in paths):
            return True
    return False


def remote_leases(spool: Spool) -> bool:
    """Whether the relay's mirror holds another host's leases (the full check then matches them)."""
    try:
        return b'"kind": "leases"' in spool.read(L.RELAY, L.RELAY_PEERS, limit=1 << 20)
    except OSError:
        return False


def decide(data: bytes, env: Mapping[str, str]) -> int | None:
    """0 when no other session's lease covers the edit (nothing printed); None for the full check."""
    payload = safejson.loads(data or b"{}")
    if not isinstance(payload, dict):
        return 0  # not a tool call's payload: nothing to check
    paths = edit_paths(payload)
    if not paths:
        return 0
    sid = payload.get("session_id")
    spool = Spool(L.default_root(env))
    if covered(spool, paths, sid if isinstance(sid, str) else None) or remote_leases(spool):
        return None
    return 0
