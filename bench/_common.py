"""Shared bench helpers: a private world (HOME, spool), stand-in sessions, and timing."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
ATTEND = str(BIN / "attend")

# The installed console script's own text, for a tree run from its checkout: what pip writes differs by
# version (older ones import re first), so the other tree pays exactly what the installed `attend` pays.
ENTRY = "import sys; sys.argv[0] = 'attend'\n" + (BIN / "attend").read_text().split("\n", 1)[1]


def world_env(tmp: Path) -> dict[str, str]:
    # Bytecode caching stays on, as in a normal install (pip compiles a wheel's modules; an editable
    # install writes its .pyc on first run), so the figures measure imports, not compilation.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CLAUDE", "ATTEND_", "XDG_")) and k != "PYTHONDONTWRITEBYTECODE"
    }
    env.update(
        HOME=str(tmp / "home"),
        XDG_CACHE_HOME=str(tmp / "home" / ".cache"),
        XDG_CONFIG_HOME=str(tmp / "home" / ".config"),
        USER="bench",
        PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    )
    (tmp / "home" / ".claude" / "sessions").mkdir(parents=True, exist_ok=True)
    return env


def tmpdir() -> Path:
    return Path(tempfile.mkdtemp(prefix="attend-bench-"))


def cleanup(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def time_process(
    argv: Sequence[str], runs: int, env: dict[str, str] | None = None, stdin: bytes = b"", cwd: str | None = None
) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(
            argv, input=stdin, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
        )
        out.append(time.perf_counter() - t)
    return out


def interleaved(cases: dict[str, Callable[[], float]], runs: int) -> dict[str, list[float]]:
    """Run each case once per round, round after round, so machine noise hits all alike."""
    results: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(runs):
        for name, fn in cases.items():
            results[name].append(fn())
    return results


def ms(xs: Sequence[float]) -> str:
    return f"{statistics.median(xs) * 1000:.1f} ms"


def pct(xs: Sequence[float], p: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(p / 100 * len(s)))]


def make_world() -> tuple[dict[str, str], Any, Path]:
    """A private HOME with a spool, made this process's environment too: the conduit benches call the
    library in process and spawn `attend` beside it. Returns (env, spool, home)."""
    from attend.spool import Spool

    tmp = tmpdir()
    env = world_env(tmp)
    home = tmp / "home"
    (home / "proj").mkdir()
    for key in [k for k in os.environ if k.startswith(("CLAUDE", "ATTEND", "XDG"))]:
        del os.environ[key]
    os.environ.update(env)
    return env, Spool.open(home / ".cache" / "attend"), home


def enrolled(spool: Any, home: Path, sid: str | None = None, pid: int | None = None, start: str | None = None) -> str:
    """Enroll a session (by `run`) whose project is home/proj; returns its id."""
    import uuid

    from attend.domain.sessions import sessions
    from attend.identity import Identity

    sid = sid or str(uuid.uuid4())
    sessions.enroll(spool, Identity("agent", sid, str(home / "proj"), "bench", True, pid, start, None), "run")
    return sid
