"""Who is calling: the Claude session among the caller's ancestors, the sandbox rule, or the human.

Resolved fresh on every call (docs/architecture/sessions.md, "Who is calling"). The ancestry decides:
1. a walk of at most 15 parents to a pid with ``<claude dir>/sessions/<pid>.json`` whose ``procStart``
   is present and matches the live process (a record without one, or with another, is refused);
   when the environment's claude dir finds nothing, each ancestor's own config dir is tried too, so
   pointing ``CLAUDE_CONFIG_DIR`` elsewhere cannot hide the session a process belongs to;
2. a hook payload's ``session_id`` or ``CLAUDE_CODE_SESSION_ID`` that disagrees with the ancestry is
   ignored, with a note; neither makes an identity by itself;
3. with no session in the ancestry, ``CLAUDE_CODE_SESSION_ID=B`` is accepted only under the sandbox
   rule: B is enrolled, and the caller's pid namespace differs from the one B's Claude runs in (as
   recorded when B enrolled through its ancestry): Claude Code's Bash sandbox, where the walk ends
   at the namespace's pid 1;
4. otherwise the human, ``$USER`` whatever the terminal, but never while ``CLAUDECODE=1`` or a
   session id is in the environment.

The walk reads /proc directly on Linux (~0.07 ms, and no psutil import on the hot paths);
psutil is the portable fallback where /proc is absent.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping

from attend.errors import IdentityError
from attend.layout import is_session_id
from attend.procfs import claude_record, stat_fields
from attend.record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path  # the hot paths (send, the drain) work in str: pathlib costs ~5 ms to import

MAX_HOPS = 15


class Identity(Record):
    kind: str  # "agent" | "human"
    id: str  # Claude session id, or the human's user name
    origin: str  # project path (worktrees normalised)
    resolved_by: str  # "ancestry" | "sandbox" | "terminal"
    resolved: bool  # an agent whose live session record was found
    claude_pid: int | None = None
    proc_start: str | None = None
    name: str | None = None  # the session's own name from its record, when set
    notes: tuple[str, ...] = ()  # ids that were offered and ignored, one line each
    evidence: str = ""  # what decided, in one line (``attend whoami`` shows it)
    pid_ns: str | None = None  # the pid namespace the session's Claude runs in (ancestry only)

    @property
    def is_agent(self) -> bool:
        return self.kind == "agent"


class SessionRecord(Record):
    pid: int
    session_id: str
    cwd: str | None
    proc_start: str | None
    name: str | None
    status: str | None
    raw: Mapping[str, object]


def claude_dir(env: Mapping[str, str] | None = None) -> Path:
    from pathlib import Path

    return Path(claude_home(env))


def claude_home(env: Mapping[str, str] | None = None) -> str:
    """``claude_dir`` as a str, for the hot paths."""
    env = os.environ if env is None else env
    if custom := env.get("CLAUDE_CONFIG_DIR"):
        return custom
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".claude")


def sessions_home(env: Mapping[str, str] | None = None) -> str:
    """Where Claude Code keeps its session records, ``<claude dir>/sessions``."""
    return os.path.join(claude_home(env), "sessions")


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


def read_record(sessions_dir: str | os.PathLike[str], pid: int) -> SessionRecord | None:
    return record_from(claude_record(os.fspath(sessions_dir), pid))


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
    """Live: the pid exists and the record's ``procStart`` is the live process's start time. A record
    without a valid start time proves nothing about which process wrote it, so it is refused."""
    if record.proc_start is None or not record.proc_start.isdigit() or not pid_alive(record.pid):
        return False
    live = proc_start(record.pid)
    if live is None:
        return not os.path.isdir("/proc")  # no /proc (not Linux): the start time cannot be checked
    return live == record.proc_start


def unattended(env: Mapping[str, str], claude_pid: int | None) -> bool:
    """Whether the client runs this session with no person at it (``claude -p``, the Agent SDK, a
    background session). It tells every child so (``CLAUDE_CODE_SESSION_ATTENDED=0``), and a
    ``claude -p`` run's record says ``"entrypoint": "sdk-cli"``. Such a run ends after its last turn
    unless a hook holds it, so attend's waiter must not (conduits.md)."""
    if env.get("CLAUDE_CODE_SESSION_ATTENDED") == "0":
        return True
    if claude_pid is None:
        return False
    raw = claude_record(sessions_home(env), claude_pid)
    return isinstance(raw, dict) and raw.get("entrypoint") == "sdk-cli"


def _walk(
    pid: int, sessions_dir_of: Callable[[int], str | None], parent: Callable[[int], int | None]
) -> tuple[SessionRecord, str] | None:
    """Climb at most 15 parents from ``pid`` to one with a live record in ``sessions_dir_of(pid)``."""
    current: int | None = pid
    for _ in range(MAX_HOPS + 1):
        if current is None or current <= 1:
            return None  # in a pid namespace the walk ends at its pid 1
        folder = sessions_dir_of(current)
        record = read_record(folder, current) if folder is not None else None
        if record is not None and folder is not None and record.pid == current and record_is_live(record):
            return record, os.path.join(folder, f"{current}.json")
        nxt = parent(current)
        if nxt == current:
            return None
        current = nxt
    return None


def find_ancestor_record(
    pid: int, sessions_dir: str | os.PathLike[str], parent: Callable[[int], int | None] = parent_pid
) -> SessionRecord | None:
    """Climb at most 15 parents from ``pid`` to one with a live session record in ``sessions_dir``."""
    folder = os.fspath(sessions_dir)
    found = _walk(pid, lambda _pid: folder, parent)
    return found[0] if found else None


def environ_of(pid: int) -> dict[str, str] | None:
    """The environment a process was started with, when this user may read it (Linux)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            data = f.read()
    except OSError:
        return None
    pairs = (item.split(b"=", 1) for item in data.split(b"\0") if b"=" in item)
    return {k.decode("utf-8", "replace"): v.decode("utf-8", "surrogateescape") for k, v in pairs}


def own_claude_dir(pid: int) -> str:
    """Where process ``pid`` keeps Claude Code's records: its own ``CLAUDE_CONFIG_DIR``, else its own
    ``~/.claude``, else (its environment unreadable) this user's ``~/.claude`` from the password file."""
    env = environ_of(pid)
    if env is not None and (env.get("CLAUDE_CONFIG_DIR") or env.get("HOME")):
        return claude_home(env)
    import pwd

    try:
        return os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".claude")
    except KeyError:
        return os.path.join(os.path.expanduser("~"), ".claude")


def find_session(
    pid: int, env: Mapping[str, str], parent: Callable[[int], int | None] = parent_pid
) -> tuple[SessionRecord, str] | None:
    """The session among ``pid``'s ancestors, and the record that proves it.

    First through the environment's claude dir (the hot paths: one walk). Only when that finds
    nothing, again through each ancestor's own config dir, so a caller cannot hide its session by
    pointing ``CLAUDE_CONFIG_DIR`` (or ``HOME``) elsewhere. Without /proc there is no environment to
    read, and the second walk is skipped."""
    first = sessions_home(env)
    found = _walk(pid, lambda _pid: first, parent)
    if found is not None or not os.path.isdir("/proc"):
        return found

    def own(p: int) -> str | None:
        folder = os.path.join(own_claude_dir(p), "sessions")
        return None if folder == first else folder  # already looked there

    return _walk(pid, own, parent)


def pid_namespace(pid: int | None = None) -> str | None:
    """The pid namespace of a process (``pid:[4026531836]``), or None where it cannot be read."""
    try:
        return os.readlink(f"/proc/{'self' if pid is None else pid}/ns/pid")
    except OSError:
        return None


def live_records(sessions_dir: str | os.PathLike[str]) -> list[SessionRecord]:
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
    for b in text.encode("utf-8", "surrogateescape"):  # a cwd that is not UTF-8 keeps its bytes
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


def _agent(record: SessionRecord, where: str, notes: tuple[str, ...]) -> Identity:
    home = os.path.expanduser("~")
    shown = where
    if shown.startswith(home + os.sep):
        shown = "~" + shown[len(home) :]
    return Identity(
        kind="agent",
        id=record.session_id,
        origin=normalise_origin(record.cwd or os.getcwd()),
        resolved_by="ancestry",
        resolved=True,
        claude_pid=record.pid,
        proc_start=record.proc_start,
        name=record.name,
        notes=notes,
        evidence=f"ancestry: claude pid {record.pid} (procStart {record.proc_start}) record {shown}",
        pid_ns=pid_namespace(record.pid),
    )


# What the sandbox rule asks of an enrolled session: (the pid namespace its Claude runs in, as
# recorded when it enrolled through its ancestry, or None; its origin). None: not enrolled.
EnrollmentProbe = Callable[[str], "tuple[str | None, str] | None"]

SANDBOX_FIX = "run attend from the session itself"


def _sandbox(env_sid: str | None, pid: int | None, probe: EnrollmentProbe) -> Identity:
    """The sandbox rule: no session in the ancestry, the environment names enrolled session B, and
    the caller is in another pid namespace than B's Claude. In B's own namespace B's Claude would be
    visible as an ancestor if it were one, so there the environment's id is refused."""
    if not env_sid:
        raise IdentityError(
            "CLAUDECODE=1 is set but no Claude session is among this process's ancestors and "
            f"CLAUDE_CODE_SESSION_ID is unset; {SANDBOX_FIX} (or unset CLAUDECODE to act as a human)"
        )
    rule = f"no Claude session is among this process's ancestors, so CLAUDE_CODE_SESSION_ID {env_sid} is refused"
    enrolled = probe(env_sid) if is_session_id(env_sid) else None
    if enrolled is None:
        raise IdentityError(f"{rule}: the sandbox rule needs an enrolled session, and it is not one; {SANDBOX_FIX}")
    theirs, origin = enrolled
    mine = pid_namespace(pid)
    if theirs is None or mine is None:
        raise IdentityError(
            f"{rule}: the sandbox rule needs the pid namespace {env_sid} enrolled from, and "
            f"{'its enrollment records none' if theirs is None else 'this one is unreadable'}; {SANDBOX_FIX}"
        )
    if mine == theirs:
        raise IdentityError(
            f"{rule}: the sandbox rule needs another pid namespace than its Claude's ({theirs}), where that "
            f"Claude would be visible if it were an ancestor; {SANDBOX_FIX}"
        )
    # Narrower where the evidence is there: the namespace's first process shows the id the sandbox
    # was started with, which a command inside it cannot change for its parent.
    first = environ_of(1) if pid is None else None
    started = (first or {}).get("CLAUDE_CODE_SESSION_ID")
    if started and started != env_sid:
        raise IdentityError(f"{rule}: this pid namespace was started for session {started}; {SANDBOX_FIX}")
    return Identity(
        kind="agent",
        id=env_sid,
        origin=origin,
        resolved_by="sandbox",
        resolved=False,
        evidence=f"sandbox: pid namespace {mine} differs from the enrollment's {theirs}",
    )


def resolve(
    *,
    payload_sid: str | None = None,
    env: Mapping[str, str] | None = None,
    pid: int | None = None,
    enrollment: EnrollmentProbe | None = None,
    cwd: str | None = None,
) -> Identity:
    """Resolve the caller; ``enrollment`` answers for the sandbox rule. The ancestry decides: an id
    offered by a hook payload or the environment never makes an identity by itself."""
    env = os.environ if env is None else env
    env_sid = env.get("CLAUDE_CODE_SESSION_ID") or None
    found = find_session(os.getpid() if pid is None else pid, env)
    offered = (("the hook payload's session_id", payload_sid), ("CLAUDE_CODE_SESSION_ID", env_sid))

    if found is not None:
        record, where = found
        notes = tuple(
            f"{what} {claimed} disagrees with the session in the ancestry ({record.session_id}); ignored"
            for what, claimed in offered
            if claimed and claimed != record.session_id
        )
        return _agent(record, where, notes)

    if env_sid or env.get("CLAUDECODE") == "1":
        who = _sandbox(env_sid, pid, enrollment or (lambda _sid: None))
        if payload_sid and payload_sid != who.id:
            note = f"the hook payload's session_id {payload_sid} disagrees with the sandbox's ({who.id}); ignored"
            return who._replace(notes=(note,))
        return who

    notes = ()
    if payload_sid:
        notes = (f"the hook payload's session_id {payload_sid} has no session in the ancestry; ignored",)
    return Identity(
        kind="human",
        id=human_id(env),
        origin=normalise_origin(cwd or os.getcwd()),
        resolved_by="terminal",
        resolved=False,
        notes=notes,
        evidence="human: no session in the ancestry",
    )


def transcript_path(env: Mapping[str, str], session_id: str, cwd: str | None) -> str | None:
    """Where the client writes a session's transcript: ``<claude dir>/projects/<slug>/<id>.jsonl``, the
    slug being the session's own working directory (not the normalised origin) with every character
    but letters and digits turned into ``-``."""
    if not cwd or not is_session_id(session_id):
        return None
    return os.path.join(claude_home(env), "projects", re.sub(r"[^A-Za-z0-9]", "-", cwd), f"{session_id}.jsonl")


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
