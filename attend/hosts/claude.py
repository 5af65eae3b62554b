"""Claude Code: its session records, and the walk that finds the caller's session among its ancestors.

Claude Code writes ``<claude dir>/sessions/<pid>.json`` for each running session (``pid``,
``sessionId``, ``cwd``, ``procStart``, ``name``, ``status``), the claude dir being
``$CLAUDE_CONFIG_DIR``, else ``~/.claude``. A record proves a session only when its ``procStart`` is
present, all digits, and the live process's start time (a record without one proves nothing about
which process wrote it; another one is pid reuse). It sets ``CLAUDECODE=1`` and
``CLAUDE_CODE_SESSION_ID`` in the processes it starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from attend import safejson
from attend.hosts.base import (
    REWAKE,
    Found,
    Host,
    Parent,
    SessionRecord,
    ancestry,
    cmdline,
    comm_ppid,
    environ_of,
    environ_via,
    live_records,
    parent_pid,
    read_record,
    record_is_live,
    stat_via,
)
from attend.layout import ALNUM, is_session_id, made_safe
from attend.procfs import session_record
from attend.record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path  # the hot paths work in str: pathlib costs ~5 ms to import


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


def unattended(env: Mapping[str, str], host_pid: int | None) -> bool:
    """Whether the client runs this session with no person at it (``claude -p``, the Agent SDK, a
    background session). It tells every child so (``CLAUDE_CODE_SESSION_ATTENDED=0``), and a
    ``claude -p`` run's record says ``"entrypoint": "sdk-cli"``. Such a run ends after its last turn
    unless a hook holds it, so attend's waiter must not (conduits.md)."""
    if env.get("CLAUDE_CODE_SESSION_ATTENDED") == "0":
        return True
    if host_pid is None:
        return False
    raw = session_record(sessions_home(env), host_pid)
    return isinstance(raw, dict) and raw.get("entrypoint") == "sdk-cli"


def find_ancestor_record(
    pid: int, sessions_dir: str | os.PathLike[str], parent: Parent = parent_pid
) -> SessionRecord | None:
    """The nearest live session record in ``sessions_dir`` among ``pid`` and its parents (the same
    bound as the identity walk)."""
    folder = os.fspath(sessions_dir)
    for p in ancestry(pid, parent):
        record = read_record(folder, p)
        if record is not None and record.pid == p and record_is_live(record):
            return record
    return None


def own_claude_dir(pid: int, env: Mapping[str, str] | None = None) -> str:
    """Where process ``pid`` keeps Claude Code's records: its own ``CLAUDE_CONFIG_DIR``, else its own
    ``~/.claude``, else (its environment unreadable) this user's ``~/.claude`` from the password file.
    ``env``: its environment, when already read."""
    env = environ_of(pid) if env is None else env
    if env is not None and (env.get("CLAUDE_CONFIG_DIR") or env.get("HOME")):
        return claude_home(env)
    return user_claude_dir()


def is_claude_process(pid: int, parent: Parent | None = None) -> bool:
    """Whether process ``pid`` is Claude Code itself: the kernel names it ``claude`` (the native
    binary), or it is node running the ``claude-code`` package. A shell
    or any other program a session's tools start is not, whatever record names it."""
    info = stat_via(parent, pid) if parent is not None else comm_ppid(pid)
    if info is not None and info[0].startswith("claude"):
        return True
    argv = cmdline(pid)
    return bool(argv) and os.path.basename(argv[0]).startswith("node") and any("claude-code" in a for a in argv[1:3])


def _same_folder(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


class Candidate(Record):
    record: SessionRecord
    path: str
    folder: str
    hops: int
    own: bool  # found where the process it names keeps its records (not only where the caller looked)


def sessions_in_ancestry(pid: int, env: Mapping[str, str], parent: Parent = parent_pid) -> list[Candidate]:
    """Every live session record among ``pid``'s ancestors, nearest first: for each ancestor, in the
    caller's claude dir, then where that ancestor itself keeps Claude Code's records (its own
    ``CLAUDE_CONFIG_DIR`` or ``HOME``, from ``/proc/<pid>/environ``), which the caller cannot move.
    Without /proc (not Linux) there is no environment to read: the caller's claude dir only."""
    procfs = os.path.isdir("/proc")
    mine = sessions_home(env)
    found: list[Candidate] = []
    for hops, p in enumerate(ancestry(pid, parent)):
        own = os.path.join(own_claude_dir(p, environ_via(parent, p)), "sessions") if procfs else mine
        for folder in dict.fromkeys((mine, own)):
            record = read_record(folder, p)
            if record is not None and record.pid == p and record_is_live(record):
                found.append(Candidate(record, os.path.join(folder, f"{p}.json"), folder, hops, folder == own))
    return found


def choose(found: list[Candidate], started: str | None = None) -> Candidate | None:
    """The caller's session among the records in its ancestry (nearest first), or None: the nearest
    of ``standing``."""
    chain = standing(found, started)
    return chain[-1] if chain else None


def standing(found: list[Candidate], started: str | None = None) -> list[Candidate]:
    """The records in the caller's ancestry (nearest first) that stand, outermost first.

    Only records found where their own process keeps them count, when there are any: the caller
    may point its claude dir anywhere and write records there for any pid, its ancestors' too. (With
    none, as for a process that is no session's but was pointed at one, the caller's dir decides.)
    Taken from the outermost inward, a record stands when:
    - it lies in the same folder as the outermost one that stands (a session started inside another
      keeps its records where that one does; a record in a folder of the caller's choosing, its own
      ``CLAUDE_CONFIG_DIR`` or ``HOME``, under a real session is not believed);
    - no other live record in that folder names the same session (one session, one process);
    - where the pid namespace's first process was started for a session (``started``, Claude Code's
      Bash sandbox), it names that session or one of the records above it.
    The nearest that stands is the caller's session."""
    if any(c.own for c in found):
        found = [c for c in found if c.own]
    chain: list[Candidate] = []
    for c in reversed(found):
        sid = c.record.session_id
        if started and sid != started and not any(s.record.session_id == started for s in chain):
            continue
        if chain:
            if not _same_folder(c.folder, chain[0].folder):
                continue
            if any(r.session_id == sid and r.pid != c.record.pid for r in live_records(c.folder)):
                continue
        chain.append(c)
    return chain


def found_of(host: str, c: Candidate) -> Found:
    r = c.record
    return Found(host, r.session_id, r.pid, r.proc_start, c.path, r.cwd, r.name, c.hops, c.own)


def holders(session_id: str, folders: tuple[str, ...]) -> list[int]:
    """The pids of the live records in ``folders`` that name ``session_id``."""
    return sorted(
        {r.pid for folder in dict.fromkeys(folders) for r in live_records(folder) if r.session_id == session_id}
    )


def user_claude_dir() -> str:
    """This user's ``~/.claude``, from the password file: where no caller's environment can move it."""
    import pwd

    try:
        return os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".claude")
    except KeyError:
        return os.path.join(os.path.expanduser("~"), ".claude")


class Claude(Host):
    name = "claude"
    inside_env = ("CLAUDECODE",)
    session_env = ("CLAUDE_CODE_SESSION_ID",)

    def find(
        self, pid: int, env: Mapping[str, str], parent: Parent = parent_pid, claims: tuple[str, ...] = ()
    ) -> Found | None:
        chain = self.find_all(pid, env, parent, claims)
        return chain[0] if chain else None

    def find_all(
        self, pid: int, env: Mapping[str, str], parent: Parent = parent_pid, claims: tuple[str, ...] = ()
    ) -> list[Found]:
        found = sessions_in_ancestry(pid, env, parent)
        if not found:
            return []
        first = environ_via(parent, 1) or {}  # the pid namespace's first process: in the sandbox, started for a session
        return [found_of(self.name, c) for c in reversed(standing(found, first.get(self.session_env[0])))]

    def unattended(self, env: Mapping[str, str], pid: int | None) -> bool:
        return unattended(env, pid)

    wake = REWAKE  # the asyncRewake Stop hook (attend wait --hook)

    def holds(self, session_id: str, env: Mapping[str, str]) -> list[int]:
        return holders(session_id, (sessions_home(env), os.path.join(user_claude_dir(), "sessions")))

    def is_client(self, pid: int, parent: Parent | None = None) -> bool:
        return is_claude_process(pid, parent)

    def processes(self, env: Mapping[str, str]) -> list[int]:
        folders = dict.fromkeys((sessions_home(env), os.path.join(user_claude_dir(), "sessions")))
        return sorted({r.pid for folder in folders for r in live_records(folder)})

    usage_in_transcript = True

    def live_records(self, env: Mapping[str, str]) -> list[SessionRecord]:
        return live_records(sessions_home(env))

    def config_home(self, env: Mapping[str, str] | None = None) -> str:
        return claude_home(env)

    def records_home(self, env: Mapping[str, str] | None = None) -> str:
        return sessions_home(env)

    worktrees = os.path.join(".claude", "worktrees")

    inbox_env = ("CLAUDE_CODE_MESSAGING_SOCKET", "CLAUDE_CODE_MESSAGING_TOKEN")
    # Either turns off the client's non-essential traffic, and with it, on some versions, Monitor.
    monitor_off_env = ("DISABLE_TELEMETRY", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC")

    def inbound_setting(self, env: Mapping[str, str], cwd: str | None) -> str | None:
        return inbound_setting(env, cwd)

    def transcript(
        self, session_id: str, cwd: str | None, env: Mapping[str, str], pid: int | None = None
    ) -> str | None:
        return transcript_path(env, session_id, cwd)


def inbound_setting(env: Mapping[str, str], cwd: str | None) -> str | None:
    """The session's ``crossSessionInbound`` setting (project local, project, then user), or None."""
    from pathlib import Path

    files = [Path(claude_home(env)) / "settings.json"]
    if cwd:
        files[:0] = [Path(cwd) / ".claude" / "settings.local.json", Path(cwd) / ".claude" / "settings.json"]
    for f in files:
        try:
            data = safejson.loads(f.read_bytes()[: 1 << 20])
        except (OSError, ValueError):
            continue
        value = data.get("crossSessionInbound") if isinstance(data, dict) else None
        if isinstance(value, str):
            return value
    return None


def transcript_path(env: Mapping[str, str], session_id: str, cwd: str | None) -> str | None:
    """Where Claude Code writes a session's transcript: ``<claude dir>/projects/<slug>/<id>.jsonl``,
    the slug being the session's own working directory (not the normalised origin) with every
    character but letters and digits turned into ``-``."""
    if not cwd or not is_session_id(session_id):
        return None
    return os.path.join(claude_home(env), "projects", made_safe(cwd, ALNUM), f"{session_id}.jsonl")


HOST = Claude()
