"""What a host tells the rest of attend: how to find the caller's session and its evidence, which
sessions are live, where a session's transcript is, and how a turn end delivers.

A host is an agent client that starts sessions (Claude Code, Codex CLI, Gemini CLI). It answers
(docs/architecture/hosts.md):

- ``name``: how it is shown and recorded ("claude");
- ``find``: the session among a process's ancestors, with the evidence that proves it (``Found``);
- ``inside_env`` and ``session_env``: the environment variables that mark a process as started inside
  the host (such a process is never the human) and those that offer a session id (never an identity
  by themselves: checked against the ancestry, or accepted under the sandbox rule);
- ``evidence``: the one line ``attend whoami`` shows for a session found in the ancestry;
- ``live_records``: the live sessions its own records name (``peers`` lists them);
- ``transcript``: the file the host writes as a session works (``peers`` shows working or waiting);
- ``turn_end``: what the turn-end hook prints to hand the model a reason;
- ``wake``, ``wake_refusal``, ``wake_command``: how an idle session is woken. The host names its
  strategy (``REWAKE``, ``QUEUE``, ``STEER``); attend.conduits.waiter runs it. This layer lies below
  the conduits, so a host names the waiter it needs rather than importing it.

What install writes for a host is its setup adapter's (attend/setup/hosts.py), above this layer.

Standard library only, and cheap to import: the hot paths (``send``, the turn-end drain) resolve the
caller through it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from attend.procfs import stat_fields
from attend.record import Record

MAX_HOPS = 15  # parents climbed from the caller, at most

Parent = Callable[[int], "int | None"]

TYPE_CHECKING = False  # typing only for mypy: `send` and the turn-end drain import this module
if TYPE_CHECKING:
    from typing import Final, Literal

    # How an idle session of a host is woken (docs/architecture/hosts.md, "The idle wake"): the
    # strategy's name, which attend.conduits.waiter maps to its waiter.
    Wake = Literal["none", "rewake", "queue", "steer"]

NO_WAKE: Final = "none"  # none: the session hears its mail at its next turn end
# The client runs a Stop hook in the background, whose exit 2 starts a turn with its stderr
# (``attend wait --hook``, Claude Code's asyncRewake).
REWAKE: Final = "rewake"
# A waiter the Stop hook leaves behind hands the reason to a command of the client that queues it as
# the session's next turn (``attend wait --codex <id>``; the command is ``wake_command``'s).
QUEUE: Final = "queue"
# The model keeps a background shell command running whose end the client turns into a turn, its
# output the text (``attend wait --once``), where ``wake_refusal`` finds the client's settings allow it.
STEER: Final = "steer"


class SessionRecord(Record):
    """A host's record of one running session, in Claude Code's shape (Gemini's records, which attend
    writes, take the same)."""

    pid: int
    session_id: str
    cwd: str | None
    proc_start: str | None
    name: str | None
    status: str | None
    raw: Mapping[str, object]


class Found(Record):
    """A session found among the caller's ancestors, and the evidence that proves it."""

    host: str  # the host's name
    session_id: str
    pid: int  # the host's process that owns the session
    proc_start: str | None  # that process's start time, as its record gives it (and as it was checked)
    record_path: str  # the file that names the session
    cwd: str | None  # the session's working directory, from its record
    name: str | None  # the client's name for the session, when it gives one
    hops: int  # parents climbed from the caller to ``pid`` (0: the caller itself); the nearest wins
    # Found where the process keeps its evidence, not only where the caller's environment pointed
    # (a record in a folder of the caller's choosing): such evidence counts only when no host has any.
    own: bool = True


class Host:
    """One host's part of the identity rule. Subclasses set the names and implement ``find``."""

    name: str = ""
    inside_env: tuple[str, ...] = ()  # any set (non-empty): this process runs inside the host
    session_env: tuple[str, ...] = ()  # the first set offers a session id
    # One session per host process at a time (a /clear replaces it): the process can stand for the
    # session (liveness, the /clear move). False where one process hosts many sessions (Codex's daemon).
    one_session_per_process: bool = True

    def find(self, pid: int, env: Mapping[str, str], parent: Parent, claims: tuple[str, ...] = ()) -> Found | None:
        """The host's session nearest above ``pid`` (``pid`` itself included), climbing at most
        ``MAX_HOPS`` parents with ``parent``; None when there is none with live evidence. ``claims``:
        ids the caller was handed by the client (a hook's payload, an MCP call's metadata), for a host
        whose evidence proves an offered id rather than naming one."""
        raise NotImplementedError

    def find_all(self, pid: int, env: Mapping[str, str], parent: Parent, claims: tuple[str, ...] = ()) -> list[Found]:
        """Every session of this host that stands among ``pid``'s ancestors by the host's own rules,
        nearest first: a session started inside another's tools lies below that one. The identity
        layer weighs them against every other host's (``identity.find_caller``). Default: ``find``'s."""
        found = self.find(pid, env, parent, claims)
        return [] if found is None else [found]

    def unattended(self, env: Mapping[str, str], pid: int | None) -> bool:
        """Whether the client runs this session with no person at it (a headless run that must end
        after its last turn, so no conduit may hold it open). Default: never said."""
        return False

    def holds(self, session_id: str, env: Mapping[str, str]) -> list[int]:
        """The live processes whose evidence names ``session_id`` (any of the user's folders): a
        session nested under another stands only when no other process holds its id."""
        return []

    def is_client(self, pid: int, parent: Parent | None = None) -> bool:
        """Whether process ``pid`` is this host's client itself (its executable, as the kernel shows
        it), not a process that merely has a record naming it: a record alone does not make a session
        that is already enrolled from another process (docs/architecture/sessions.md). Default: yes."""
        return True

    def serves(self, pid: int) -> tuple[str, ...]:
        """The sessions host process ``pid`` proves by itself, for a host whose evidence proves an
        offered id (Codex: the threads whose writer locks it holds). Default: none to offer."""
        return ()

    def processes(self, env: Mapping[str, str]) -> list[int]:
        """The live processes of this host that serve sessions of this user (their records, or a scan):
        a process left without its parent is weighed against them by what it holds open
        (attend.hosts.kin). Default: none."""
        return []

    def inside_ancestry(self, pid: int, parent: Parent) -> str | None:
        """Why ``pid`` is inside this host although ``find`` proved no session (so it is never the
        human), or None. Default: the environment alone says so (``inside``)."""
        return None

    def turn_end(self, reason: str) -> dict[str, str]:
        """What the turn-end hook prints to hand the model ``reason`` and keep the turn going."""
        return {"decision": "block", "reason": reason}

    def edit_answer(self, event: str, line: str, refuse: bool) -> dict[str, object] | None:
        """What the pre-tool hook prints for an edit of a file under another session's lease: ``line``
        handed to the model beside the edit, or as the refusal (docs/architecture/leases.md). None: say
        nothing at this event. Default: a PreToolUse hook's answer (Claude Code's, Codex's)."""
        if event != "PreToolUse":
            return None
        if refuse:
            return {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": line,
                }
            }
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": line}}

    # ------------------------------------------------------------------ the idle wake

    wake: Wake = NO_WAKE

    def wake_refusal(self, pid: int, env: Mapping[str, str]) -> str | None:
        """Why an idle session of the host's process ``pid`` cannot be woken by ``wake`` (the way the
        client runs, its settings), in a few words; None when it can. Default: it can."""
        return None

    def wake_command(self, pid: int, session_id: str) -> tuple[int, list[str]] | None:
        """For a ``QUEUE`` host: the host's process serving ``session_id`` among ``pid``'s ancestors
        (``pid`` itself included), and the command (the text to follow as its last argument) that
        queues text as the session's next turn; None when no such process is there."""
        return None

    # ------------------------------------------------------------------ sessions and transcripts

    # Whether the transcript carries the model's usage as Claude Code's entries do (read by
    # attend.domain.sessions.transcript: the context figure ``peers`` and the context sensor show).
    usage_in_transcript: bool = False

    def live_records(self, env: Mapping[str, str]) -> list[SessionRecord]:
        """Every live session the host's own records name, one per process. Empty for a host that keeps
        no record by process (``one_session_per_process`` false: its sessions are listed from their
        enrollments, live by a conduit or a heartbeat)."""
        return []

    def transcript(
        self, session_id: str, cwd: str | None, env: Mapping[str, str], pid: int | None = None
    ) -> str | None:
        """The file the host appends to while the session works (its age says working or waiting), or
        None where it cannot be told. ``cwd``: the session's own working directory; ``pid``: the host's
        process that owns the session, when known (a process holds or names its own files)."""
        return None

    def offered_id(self, env: Mapping[str, str]) -> tuple[str, str] | None:
        """(variable, session id) the environment offers, or None."""
        for var in self.session_env:
            if value := env.get(var):
                return var, value
        return None

    def inside(self, env: Mapping[str, str]) -> bool:
        """Whether the environment says this process was started inside the host."""
        return any(env.get(var) for var in self.inside_env) or self.offered_id(env) is not None

    def evidence(self, found: Found) -> str:
        return f"ancestry: {self.name} pid {found.pid} (procStart {found.proc_start}) record {tilde(found.record_path)}"


def first_line(path: str, limit: int) -> bytes | None:
    """A file's first line, at most ``limit`` bytes, opened without following a link or blocking on a
    FIFO; None when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.pread(fd, limit, 0)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.split(b"\n", 1)[0]


def tilde(path: str) -> str:
    """A path under the home folder, shown from ``~``."""
    home = os.path.expanduser("~")
    return "~" + path[len(home) :] if path.startswith(home + os.sep) else path


# ---------------------------------------------------------------------- processes (Linux /proc; psutil elsewhere)


def proc_start(pid: int) -> str | None:
    """Process start time in clock ticks since boot (field 22 of ``/proc/<pid>/stat``)."""
    fields = stat_fields(pid)
    return fields[19] if fields is not None else None


def parent_pid(pid: int) -> int | None:
    fields = stat_fields(pid)
    if fields is not None:
        return int(fields[1])
    if os.path.isdir("/proc"):
        return None  # the process is gone
    import psutil  # portable fallback where /proc does not exist

    try:
        return int(psutil.Process(pid).ppid())
    except psutil.Error:
        return None


def full_stat(pid: int) -> tuple[str, list[str]] | None:
    """A process's command name and the fields of ``/proc/<pid>/stat`` after it ([0] state, [1] ppid,
    [2] process group, [3] session, [4] controlling terminal, … [19] start time), from one read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    open_, close = data.find("("), data.rfind(")")
    fields = data[close + 2 :].split()
    if open_ < 0 or close < 0 or len(fields) < 20 or not fields[1].isdigit():
        return None
    return data[open_ + 1 : close], fields


def comm_ppid(pid: int) -> tuple[str, int] | None:
    """A process's command name and parent pid, from one read of ``/proc/<pid>/stat``."""
    got = full_stat(pid)
    return (got[0], int(got[1][1])) if got is not None else None


class Procs:
    """The /proc reads of one identity resolution, each made once: every host climbs the same
    ancestry, so each ancestor's ``stat`` (parent and command name) and ``environ`` are read once and
    shared. Made anew for each resolution (``identity.remembered``), so nothing outlives the call.
    Called with a pid it answers as ``parent`` does."""

    def __init__(self, parent: Parent = parent_pid) -> None:
        self._parent = parent
        self._parents: dict[int, int | None] = {}
        self._stats: dict[int, tuple[str, list[str]] | None] = {}
        self._environs: dict[int, dict[str, str] | None] = {}

    def __call__(self, pid: int) -> int | None:
        if pid not in self._parents:
            info = self.comm_ppid(pid) if self._parent is parent_pid else None
            self._parents[pid] = info[1] if info is not None else self._parent(pid)
        return self._parents[pid]

    def comm_ppid(self, pid: int) -> tuple[str, int] | None:
        got = self.stat(pid)
        return (got[0], int(got[1][1])) if got is not None else None

    def stat(self, pid: int) -> tuple[str, list[str]] | None:
        """``full_stat(pid)``, read once."""
        if pid not in self._stats:
            self._stats[pid] = full_stat(pid)
        return self._stats[pid]

    def environ(self, pid: int) -> dict[str, str] | None:
        """``environ_of(pid)``, read once (the same dict each time: callers only read it)."""
        if pid not in self._environs:
            self._environs[pid] = environ_of(pid)
        return self._environs[pid]


def stat_via(parent: Parent, pid: int) -> tuple[str, int] | None:
    """``comm_ppid(pid)``, from the resolution's reads when ``parent`` keeps them."""
    return parent.comm_ppid(pid) if isinstance(parent, Procs) else comm_ppid(pid)


def environ_via(parent: Parent, pid: int) -> dict[str, str] | None:
    """``environ_of(pid)``, from the resolution's reads when ``parent`` keeps them."""
    return parent.environ(pid) if isinstance(parent, Procs) else environ_of(pid)


def cmdline(pid: int) -> list[str]:
    """A process's arguments (``/proc/<pid>/cmdline``, its first 64 KiB)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            data = f.read(1 << 16)
    except OSError:
        return []
    return [a.decode("utf-8", "replace") for a in data.split(b"\0") if a]


# ---------------------------------------------------------------------- a process left without its parent


def stat_of(parent: Parent, pid: int) -> tuple[str, list[str]] | None:
    """``full_stat(pid)``, from the resolution's reads when ``parent`` keeps them."""
    return parent.stat(pid) if isinstance(parent, Procs) else full_stat(pid)


def num(fields: list[str], i: int) -> int:
    try:
        return int(fields[i])
    except (IndexError, ValueError):
        return 0


def terminal(pid: int, parent: Parent | None = None) -> int:
    """The device number of ``pid``'s controlling terminal; 0 when it has none."""
    got = stat_of(parent, pid) if parent is not None else full_stat(pid)
    return num(got[1], 4) if got is not None else 0


def adopted(pid: int, parent: Parent) -> int | None:
    """The process of ``pid``'s own session (``pid`` itself or an ancestor in the same session) that
    was handed to another parent, or None.

    Climbing within the caller's session to its edge, the first process whose parent lies outside it:
    - one that is not its session's leader was adopted: a process only leaves its parent's session
      by ``setsid``, which makes it the leader (``nohup … &`` or a double fork, its parent gone);
    - a leader was started in that session by its parent (a terminal, tmux, sshd, cron, a client's
      shell tool), except one with no terminal whose parent is the namespace's init or a user service
      manager (``systemd``) that is not the first process of its own control group: ``setsid -f``,
      whose parent exits at once. A service the manager started is the eldest of its unit's group.
    A parent of 0 (the namespace's first process, or one entered from outside it) ends the climb."""
    current = pid
    for _ in range(64):
        me = stat_of(parent, current)
        if me is None:
            return None
        ppid, sid = num(me[1], 1), num(me[1], 3)
        if ppid <= 0:
            return None
        up = stat_of(parent, ppid)
        if up is None:
            return None
        if num(up[1], 3) == sid:
            current = ppid
            continue
        if sid != current:
            return current
        if num(me[1], 4) == 0 and (ppid == 1 or up[0] == "systemd") and not eldest_of_its_group(current):
            return current
        return None
    return None


def eldest_of_its_group(pid: int) -> bool:
    """Whether ``pid`` is the first process of its own control group (cgroup v2): the main process of
    a unit a service manager started. False where it cannot be told (no cgroup v2, the root group)."""
    try:
        with open(f"/proc/{pid}/cgroup", "rb") as f:
            lines = f.read(1 << 16).decode("utf-8", "replace").splitlines()
    except OSError:
        return False
    path = next((line[3:] for line in lines if line.startswith("0::")), "")
    if path in ("", "/") or ".." in path.split("/"):
        return False
    try:
        with open(os.path.join("/sys/fs/cgroup", path.lstrip("/"), "cgroup.procs"), "rb") as f:
            members = [int(p) for p in f.read(1 << 20).split() if p.isdigit()]
    except (OSError, ValueError):
        return False
    mine = _start(pid)
    if mine is None:
        return False
    return all(p == pid or (s := _start(p)) is None or s >= mine for p in members)


def _start(pid: int) -> int | None:
    got = full_stat(pid)
    return num(got[1], 19) if got is not None else None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def environ_of(pid: int) -> dict[str, str] | None:
    """The environment a process was started with, when this user may read it (Linux)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            data = f.read()
    except OSError:
        return None
    pairs = (item.split(b"=", 1) for item in data.split(b"\0") if b"=" in item)
    return {k.decode("utf-8", "replace"): v.decode("utf-8", "surrogateescape") for k, v in pairs}


def pid_namespace(pid: int | None = None) -> str | None:
    """The pid namespace of a process (``pid:[4026531836]``), or None where it cannot be read."""
    try:
        return os.readlink(f"/proc/{'self' if pid is None else pid}/ns/pid")
    except OSError:
        return None
