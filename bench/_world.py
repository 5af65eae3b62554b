"""A throwaway machine for the conduit benchmarks: a private HOME, a spool, and one enrolled session."""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from pathlib import Path

from attend import sessions
from attend.identity import Identity
from attend.spool import Spool

ATTEND = str(Path(sys.executable).parent / "attend")


def make_world() -> tuple[dict[str, str], Spool, Path]:
    home = Path(tempfile.mkdtemp(prefix="attend-bench-"))
    (home / ".claude" / "sessions").mkdir(parents=True)
    (home / "proj").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ATTEND", "XDG"))}
    env.update(HOME=str(home), USER="bench-human")
    os.environ.update(env)
    for k in list(os.environ):
        if k.startswith(("CLAUDE", "ATTEND", "XDG")):
            del os.environ[k]
    spool = Spool.open(home / ".cache" / "attend")
    return env, spool, home


def enrolled(spool: Spool, home: Path, sid: str | None = None, pid: int | None = None, start: str | None = None) -> str:
    sid = sid or str(uuid.uuid4())
    who = Identity("agent", sid, str(home / "proj"), "bench", True, pid, start, None)
    sessions.enroll(spool, who, "run")
    return sid
