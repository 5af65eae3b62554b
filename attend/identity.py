"""Who is calling: hook payload, environment, ancestry walk, or a human at a terminal.

Resolved fresh on every call (docs/architecture/sessions.md, "Who is calling"), in order:
1. a hook payload's ``session_id``, accepted when the ancestry record agrees, or when no record is
   reachable and ``sessions/<id>`` is enrolled;
2. ``CLAUDE_CODE_SESSION_ID``, cross-checked against the ancestry record (the record wins);
3. a walk of at most 15 parents to a pid with ``<claude dir>/sessions/<pid>.json`` whose
   ``procStart`` matches the live process (a mismatch is pid reuse, and the record is refused);
4. otherwise the human, ``$USER`` whatever the terminal, but never inside Claude Code's Bash sandbox
   (``CLAUDECODE=1`` or a session id in the environment, and no record reachable).

The walk reads /proc directly on Linux (~0.07 ms, and no psutil import on the hot paths);
psutil is the portable fallback where /proc is absent.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from attend.errors import IdentityError
from attend.layout import is_session_id
from attend.procfs import stat_fields

MAX_HOPS = 15


@dataclass(frozen=True)
class Identity:
    kind: str  # "agent" | "human"
    id: str  # Claude session id, or the human's user name
    origin: str  # project path (worktrees normalised)
    resolved_by: str  # "payload" | "env" | "ancestry" | "sandbox-env" | "terminal"
    resolved: bool  # an agent whose live session record was found
    claude_pid: int | None = None
    proc_start: str | None = None
    name: str | None = None  # the session's own name from its record, when set
    notes: tuple[str, ...] = field(default=())

    @property
    def is_agent(self) -> bool:
        return self.kind == "agent"


@dataclass(frozen=True)
class SessionRecord:
    pid: int
    session_id: str
    cwd: str | None
    proc_start: str | None
    name: str | None
    status: str | None
    raw: Mapping[str, object]


def claude_dir(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if custom := env.get("CLAUDE_CONFIG_DIR"):
        return Path(custom)
    return Path(env.get("HOME") or os.path.expanduser("~")) / ".claude"


# ---------------------------------------------------------------------- processes


def proc_start(pid: int) -> str | None:
    """Process start time in clock ticks since boot, as Claude Code records it in ``procStart``."""
    fields = stat_fields(pid)
    if fields is not None:
        return fields[19]  # field 22 of /proc/<pid>/stat
    return None


def parent_pid(pid: int) -> int | None:
    fields = stat_fields(pid)
    if fields is not None:
        return int(fields[1])
    if os.path.isdir("/proc"):
        return None  # the process is gone
    import psutil  # portable fallback where /proc does not exist

    try:
        return psutil.Process(pid).ppid()
    except psutil.Error:
        return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ---------------------------------------------------------------------- session records


def read_record(sessions_dir: Path, pid: int) -> SessionRecord | None:
    try:
        with open(sessions_dir / f"{pid}.json", "rb") as f:
            raw = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return record_from(raw)


def record_from(raw: object) -> SessionRecord | None:
    if not isinstance(raw, dict):
        return None
    pid, sid = raw.get("pid"), raw.get("sessionId")
    # The id names a spool folder and a room: one that is not a plain id (say "../x") is no session.
    if not isinstance(pid, int) or not isinstance(sid, str) or not is_session_id(sid):
        return None
    cwd, start, name, status = (raw.get(k) for k in ("cwd", "procStart", "name", "status"))
    return SessionRecord(
        pid=pid,
        session_id=sid,
        cwd=cwd if isinstance(cwd, str) else None,
        proc_start=str(start) if isinstance(start, (str, int)) else None,
        name=name if isinstance(name, str) and name else None,
        status=status if isinstance(status, str) else None,
        raw=raw,
    )


def record_is_live(record: SessionRecord) -> bool:
    """Live: the pid exists and, when the record names a start time, it matches (no pid reuse)."""
    if not pid_alive(record.pid):
        return False
    if record.proc_start is None:
        return True
    live = proc_start(record.pid)
    return live is None or live == record.proc_start


def find_ancestor_record(
    pid: int, sessions_dir: Path, parent: Callable[[int], int | None] = parent_pid
) -> SessionRecord | None:
    """Climb at most 15 parents from ``pid`` to one with a live session record."""
    current: int | None = pid
    for _ in range(MAX_HOPS + 1):
        if current is None or current <= 1:
            return None
        record = read_record(sessions_dir, current)
        if record is not None and record.pid == current and record_is_live(record):
            return record
        nxt = parent(current)
        if nxt == current:
            return None
        current = nxt
    return None


def live_records(sessions_dir: Path) -> list[SessionRecord]:
    """Every live Claude session on the machine, from its record."""
    try:
        names = sorted(os.listdir(sessions_dir))
    except OSError:
        return []
    records = []
    for name in names:
        if not name.endswith(".json") or not name[:-5].isdigit():
            continue
        record = read_record(sessions_dir, int(name[:-5]))
        if record is not None and record.pid == int(name[:-5]) and record_is_live(record):
            records.append(record)
    return records


# ---------------------------------------------------------------------- origin and persona


def normalise_origin(cwd: str) -> str:
    """The project a working directory belongs to: cut a .claude/worktrees tail; map a git worktree."""
    path = os.path.normpath(cwd)
    marker = os.sep + ".claude" + os.sep + "worktrees"
    cut = path.find(marker + os.sep)
    if cut <= 0 and path.endswith(marker):
        cut = len(path) - len(marker)
    if cut > 0:
        return path[:cut]
    return _git_main_root(path) or path


def _git_main_root(path: str) -> str | None:
    """For a path inside a linked git worktree, the same place in the main repository."""
    probe = path
    for _ in range(64):
        dotgit = os.path.join(probe, ".git")
        if os.path.isdir(dotgit):
            return None  # the main repository itself
        if os.path.isfile(dotgit):
            try:
                with open(dotgit, encoding="utf-8") as f:
                    line = f.readline().strip()
            except OSError:
                return None
            if not line.startswith("gitdir:"):
                return None
            gitdir = os.path.normpath(os.path.join(probe, line[len("gitdir:") :].strip()))
            parts = gitdir.split(os.sep)
            if len(parts) >= 3 and parts[-2] == "worktrees" and parts[-3] == ".git":
                main = os.sep.join(parts[:-3]) or os.sep
                rest = os.path.relpath(path, probe)
                return main if rest == "." else os.path.join(main, rest)
            return None
        parent = os.path.dirname(probe)
        if parent == probe:
            return None
        probe = parent
    return None


_NAMES = [
    "Ada",
    "Alba",
    "Aiko",
    "Anya",
    "Arlo",
    "Asha",
    "Ava",
    "Bea",
    "Bo",
    "Cai",
    "Cora",
    "Dara",
    "Dev",
    "Eda",
    "Eli",
    "Ema",
    "Enzo",
    "Esme",
    "Ezra",
    "Faye",
    "Fenn",
    "Gia",
    "Gus",
    "Hana",
    "Idris",
    "Ilse",
    "Ines",
    "Ira",
    "Isla",
    "Ivo",
    "Jae",
    "Jax",
    "Juno",
    "Kai",
    "Kaya",
    "Kit",
    "Lana",
    "Leo",
    "Lior",
    "Lulu",
    "Luz",
    "Mae",
    "Mara",
    "Milo",
    "Mina",
    "Nia",
    "Nico",
    "Noa",
    "Nora",
    "Odin",
    "Olli",
    "Omar",
    "Opal",
    "Oren",
    "Otto",
    "Pax",
    "Pia",
    "Quin",
    "Rafa",
    "Remy",
    "Rhea",
    "Rio",
    "Rumi",
    "Saga",
    "Sami",
    "Sana",
    "Suki",
    "Tam",
    "Tao",
    "Tess",
    "Theo",
    "Uma",
    "Uri",
    "Vera",
    "Vik",
    "Wren",
    "Xan",
    "Yara",
    "Yuki",
    "Zane",
    "Zara",
    "Zeno",
    "Zia",
    "Zoe",
]


def fnv1a64(text: str) -> int:
    h = 0xCBF29CE484222325
    for b in text.encode("utf-8"):
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def nickname(origin: str) -> str:
    """A stable persona for a project path (the same path always gives the same name)."""
    return _NAMES[fnv1a64(origin) % len(_NAMES)]


def persona(identity: Identity) -> str:
    if identity.kind == "human":
        return identity.id.split("@", 1)[0]
    return identity.name or nickname(identity.origin)


# ---------------------------------------------------------------------- humans


def _login_name() -> str:
    """The account name from the password database, when the environment names none."""
    import pwd

    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return "unknown"


def human_id(env: Mapping[str, str]) -> str:
    """The human is ``$USER``, whatever the terminal: one person, one identity, one set of channels."""
    user = env.get("USER") or env.get("LOGNAME") or _login_name()
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in user)


# ---------------------------------------------------------------------- resolution


def _agent(record: SessionRecord, how: str, notes: tuple[str, ...] = ()) -> Identity:
    return Identity(
        kind="agent",
        id=record.session_id,
        origin=normalise_origin(record.cwd or os.getcwd()),
        resolved_by=how,
        resolved=True,
        claude_pid=record.pid,
        proc_start=record.proc_start,
        name=record.name,
        notes=notes,
    )


def resolve(
    *,
    payload_sid: str | None = None,
    env: Mapping[str, str] | None = None,
    pid: int | None = None,
    is_enrolled: Callable[[str], bool] | None = None,
    cwd: str | None = None,
) -> Identity:
    """Resolve the caller. ``is_enrolled`` answers for the sandbox and payload rules."""
    env = os.environ if env is None else env
    sessions_dir = claude_dir(env) / "sessions"
    record = find_ancestor_record(os.getpid() if pid is None else pid, sessions_dir)
    enrolled = is_enrolled or (lambda _sid: False)

    if payload_sid:
        if record is not None and record.session_id == payload_sid:
            return _agent(record, "payload")
        if record is None and is_session_id(payload_sid) and enrolled(payload_sid):
            return Identity(
                kind="agent",
                id=payload_sid,
                origin=normalise_origin(cwd or env.get("CLAUDE_PROJECT_DIR") or os.getcwd()),
                resolved_by="payload",
                resolved=False,
            )

    env_sid = env.get("CLAUDE_CODE_SESSION_ID") or None
    if record is not None:
        if env_sid and env_sid != record.session_id:
            note = (
                f"CLAUDE_CODE_SESSION_ID {env_sid} disagrees with the session record "
                f"({record.session_id}); using the record"
            )
            return _agent(record, "ancestry", (note,))
        return _agent(record, "env" if env_sid else "ancestry")

    if env_sid or env.get("CLAUDECODE") == "1":
        if env_sid and is_session_id(env_sid) and enrolled(env_sid):
            return Identity(
                kind="agent",
                id=env_sid,
                origin=normalise_origin(env.get("CLAUDE_PROJECT_DIR") or cwd or os.getcwd()),
                resolved_by="sandbox-env",
                resolved=False,
            )
        raise IdentityError(
            "running inside Claude Code's Bash sandbox, where no session record is reachable and "
            "this session is not enrolled; run attend from the session itself (or unset CLAUDECODE "
            "to act as a human)"
        )

    return Identity(
        kind="human",
        id=human_id(env),
        origin=normalise_origin(cwd or os.getcwd()),
        resolved_by="terminal",
        resolved=False,
    )


def transcript_path(env: Mapping[str, str], session_id: str, cwd: str | None) -> Path | None:
    """Where the client writes a session's transcript: ``<claude dir>/projects/<slug>/<id>.jsonl``, the
    slug being the session's own working directory (not the normalised origin) with every character
    but letters and digits turned into ``-``."""
    if not cwd or not is_session_id(session_id):
        return None
    return claude_dir(env) / "projects" / re.sub(r"[^A-Za-z0-9]", "-", cwd) / f"{session_id}.jsonl"


WORKING_WINDOW = 30.0  # seconds: a transcript written this recently means the session is working


def transcript_status(env: Mapping[str, str], record: SessionRecord, window: float = WORKING_WINDOW) -> str:
    """ "working" when the session's transcript was written in the last ``window`` seconds, else "waiting"."""
    path = transcript_path(env, record.session_id, record.cwd)
    if path is None:
        return "unknown"
    try:
        age = time.time() - os.stat(path).st_mtime
    except OSError:
        return "unknown"
    return "working" if age < window else "waiting"
