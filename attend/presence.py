"""Presence: the MCP server's marker files, and a session's activity from its transcript.

A marker is ``sessions/<sid>/mcp/<pid>.json`` holding pid, procStart, start time and version.
Readers treat a marker whose process is gone (or whose pid was reused) as absent.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping

from attend import identity
from attend.identity import SessionRecord
from attend.spool import Spool

WORKING_WINDOW = 30.0  # seconds: a transcript written this recently means the session is working


def live_markers(spool: Spool, sid: str) -> list[dict[str, object]]:
    folder = spool.root / "sessions" / sid / "mcp"
    try:
        names = sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    live = []
    for name in names:
        if not name.endswith(".json"):
            continue
        try:
            raw = json.loads(spool.read(folder / name))
        except (OSError, ValueError):
            continue
        if not isinstance(raw, dict):
            continue
        pid = raw.get("pid")
        if not isinstance(pid, int) or not identity.pid_alive(pid):
            continue
        start = raw.get("procStart")
        if start is not None and identity.proc_start(pid) not in (None, str(start)):
            continue
        live.append(raw)
    return live


def mcp_live(spool: Spool, sid: str) -> bool:
    return bool(live_markers(spool, sid))


def transcript_status(env: Mapping[str, str], record: SessionRecord) -> str:
    if not record.cwd:
        return "unknown"
    slug = re.sub(r"[^A-Za-z0-9]", "-", record.cwd)
    path = identity.claude_dir(env) / "projects" / slug / f"{record.session_id}.jsonl"
    try:
        age = time.time() - os.stat(path).st_mtime
    except OSError:
        return "unknown"
    return "working" if age < WORKING_WINDOW else "waiting"
