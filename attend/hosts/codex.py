"""Codex CLI: a thread is proved by the writer lock its host process holds.

Codex keeps no pid-keyed session record. While a thread is loaded, the process hosting it holds
``$CODEX_HOME/thread-writer-locks/<thread id>.lock`` open. That process is the ``codex`` client itself
(``codex exec``, a TUI run without the daemon) or the shared app-server daemon, which hosts the threads
of every TUI at once. So the walk never takes "the nearest codex process" as the session: it takes
the thread id that is offered and accepts it only when the nearest codex ancestor holds that
thread's lock.

Where the id comes from, nearest evidence first:
- the environment of the process codex started (the ancestor just below the codex process, or the
  caller itself): ``CODEX_THREAD_ID``, which codex sets for its shell tool. Read from
  ``/proc/<pid>/environ``, so a command cannot switch sessions by setting the variable for itself;
- otherwise the id the caller was handed by codex: a hook's payload ``session_id``, or an MCP call's
  ``_meta.threadId`` (codex passes neither in the environment of hooks and MCP servers).

A process below a codex process that holds thread locks is inside Codex even when no id is proved,
so it is never the human. Codex's bwrap sandbox (``sandbox_mode = "workspace-write"``) runs the shell
tool in a pid namespace of its own whose pid 1 carries ``CODEX_THREAD_ID``: the sandbox rule serves it
(docs/architecture/sessions.md).

One codex process may host many threads, so a Codex session's process is never used to map a
process to one session (no ``/clear`` move is ever inferred from it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

from attend import safejson
from attend.hosts.base import (
    MAX_HOPS,
    QUEUE,
    Found,
    Host,
    Parent,
    environ_via,
    first_line,
    parent_pid,
    proc_start,
    stat_via,
)
from attend.hosts.base import comm_ppid as comm_ppid
from attend.layout import is_session_id

LOCKS = "thread-writer-locks"
THREAD_ENV = "CODEX_THREAD_ID"
META_LINE_MAX = 1 << 20  # bytes of a rollout's first line read for the session's cwd


def held(pid: int) -> dict[str, str]:
    """The threads process ``pid`` hosts: thread id -> the path of the writer lock it holds open."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return {}
    out: dict[str, str] = {}
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        folder, name = os.path.split(target)
        if name.endswith(".lock") and os.path.basename(folder) == LOCKS and is_session_id(name[:-5]):
            out[name[:-5]] = target
    return out


def rollout_of(pid: int, thread: str) -> str | None:
    """The thread's rollout file (``…/rollout-<time>-<thread id>.jsonl``), as its host process holds
    it open."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        name = os.path.basename(target)
        if name.startswith("rollout-") and name.endswith(f"-{thread}.jsonl"):
            return target
    return None


def rollout_cwd(pid: int, thread: str) -> str | None:
    """The thread's working directory, from the ``session_meta`` line of the rollout file its host
    process holds open."""
    path = rollout_of(pid, thread)
    line = first_line(path, META_LINE_MAX) if path is not None else None
    try:
        meta = safejson.loads(line) if line else None
    except ValueError:
        return None
    payload = meta.get("payload") if isinstance(meta, dict) else None
    cwd = safejson.text_field(payload, "cwd")  # a client's record: a path of bounded size, no NUL
    return cwd if cwd and cwd.startswith("/") else None


def codex_home(env: Mapping[str, str]) -> str:
    """Codex's folder: ``$CODEX_HOME``, else ``~/.codex``."""
    return env.get("CODEX_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".codex")


def dated_rollout(home: str, thread: str) -> str | None:
    """The rollout file of a thread in Codex's dated folders, ``<home>/sessions/YYYY/MM/DD/``. A thread
    id is a UUIDv7, whose first 48 bits are the moment it was made in milliseconds, and Codex names the
    day's folder by its local date at that moment: that day's folder and its neighbours are looked in
    (a clock across midnight, a time zone changed since). A resumed thread appends to the same file."""
    digits = thread.replace("-", "")
    if len(digits) != 32 or digits[12] != "7":
        return None  # not a UUIDv7: no date to look under
    try:
        made = int(digits[:12], 16) / 1000
    except ValueError:
        return None
    import time

    suffix = f"-{thread}.jsonl"
    for delta in (0, -86400, 86400):
        day = time.localtime(made + delta)
        folder = os.path.join(home, "sessions", f"{day.tm_year:04d}", f"{day.tm_mon:02d}", f"{day.tm_mday:02d}")
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if name.startswith("rollout-") and name.endswith(suffix):
                return os.path.join(folder, name)
    return None


def is_codex(comm: str) -> bool:
    # The client, the daemon's copy of it, and (truncated to 15 characters) its sandbox helper.
    return comm == "codex" or comm.startswith("codex-")


class Codex(Host):
    name = "codex"
    inside_env = ()  # its shell tool's CODEX_THREAD_ID marks it; hooks and MCP servers get nothing
    session_env = (THREAD_ENV,)
    one_session_per_process = False

    def host_process(self, pid: int, parent: Parent = parent_pid) -> tuple[int, int | None, int, dict[str, str]] | None:
        """The nearest codex ancestor that hosts threads: (its pid, the process it started on our
        side or None when that is the caller, hops, the threads it holds)."""
        return next(self.host_processes(pid, parent), None)

    def host_processes(
        self, pid: int, parent: Parent = parent_pid
    ) -> Iterator[tuple[int, int | None, int, dict[str, str]]]:
        """Every codex ancestor that hosts threads, nearest first, as ``host_process`` gives one."""
        below: int | None = None
        current = pid
        for hops in range(MAX_HOPS + 1):
            if current <= 1:
                return  # in a pid namespace the walk ends at its pid 1
            info = stat_via(parent, current)
            if info is None:
                return
            comm, ppid = info
            if is_codex(comm):
                threads = held(current)
                if threads:
                    yield current, below, hops, threads
            below, current = current, ppid

    def find(
        self, pid: int, env: Mapping[str, str], parent: Parent = parent_pid, claims: tuple[str, ...] = ()
    ) -> Found | None:
        chain = self.find_all(pid, env, parent, claims)
        return chain[0] if chain else None

    def find_all(
        self, pid: int, env: Mapping[str, str], parent: Parent = parent_pid, claims: tuple[str, ...] = ()
    ) -> list[Found]:
        """The thread each codex ancestor proves, nearest first, up to the first that proves none. Any
        process may be named codex and hold a lock file it made: one below the session's own codex is
        weighed by the identity rule as a session nested in that one, never taken in its place."""
        chain: list[Found] = []
        for codex, below, hops, threads in self.host_processes(pid, parent):
            spawned = environ_via(parent, below if below is not None else pid)
            offered = spawned.get(THREAD_ENV) if spawned is not None else env.get(THREAD_ENV)
            thread = next((t for t in ((offered,) if offered else claims) if t and t in threads), None)
            if thread is None:
                break
            path, cwd = threads[thread], rollout_cwd(codex, thread)
            chain.append(Found(self.name, thread, codex, proc_start(codex), path, cwd, None, hops))
        return chain

    def inside_ancestry(self, pid: int, parent: Parent = parent_pid) -> str | None:
        """Why this process is inside Codex though no thread was proved: a codex process hosting
        threads is among its ancestors."""
        host = self.host_process(pid, parent)
        return None if host is None else f"codex pid {host[0]} hosts threads {', '.join(sorted(host[3]))}"

    def serves(self, pid: int) -> tuple[str, ...]:
        return tuple(sorted(held(pid)))

    def processes(self, env: Mapping[str, str]) -> list[int]:
        """The codex processes of this machine that host threads (a scan of /proc)."""
        try:
            pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
        except OSError:
            return []
        return [p for p in pids if (info := comm_ppid(p)) is not None and is_codex(info[0]) and held(p)]

    def holds(self, session_id: str, env: Mapping[str, str]) -> list[int]:
        """The codex processes of this machine that hold the thread's writer lock (a scan of /proc,
        made only for a session found nested under another)."""
        if not is_session_id(session_id):
            return []
        try:
            pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
        except OSError:
            return []
        return [p for p in pids if (info := comm_ppid(p)) is not None and is_codex(info[0]) and session_id in held(p)]

    def evidence(self, found: Found) -> str:
        return f"ancestry: codex pid {found.pid} (procStart {found.proc_start}) holds {found.record_path}"

    def transcript(
        self, session_id: str, cwd: str | None, env: Mapping[str, str], pid: int | None = None
    ) -> str | None:
        """The thread's rollout file: the one its host process holds open, when that process is known;
        else the one in Codex's dated folders (``dated_rollout``)."""
        if not is_session_id(session_id):
            return None
        held_open = rollout_of(pid, session_id) if pid else None
        return held_open or dated_rollout(codex_home(env), session_id)

    # ------------------------------------------------------------------ delivery

    wake = QUEUE  # the Stop hook's detached waiter, through `codex queue`

    def wake_command(self, pid: int, session_id: str) -> tuple[int, list[str]] | None:
        """The codex process hosting the thread above ``pid``, and ``<its codex binary> queue --thread
        <id> --message``: the app-server (or a TUI's daemon) runs the queued message as a new turn."""
        host = self.host_process(pid)
        if host is None or session_id not in host[3]:
            return None
        return host[0], [os.readlink(f"/proc/{host[0]}/exe"), "queue", "--thread", session_id, "--message"]

    def turn_end(self, reason: str) -> dict[str, str]:
        """What the turn-end hook prints to hand the model ``reason``: the Stop hook's block."""
        return {"decision": "block", "reason": reason}


HOST = Codex()
