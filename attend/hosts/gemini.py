"""Gemini CLI: attend's own SessionStart hook records the session for the gemini process.

Gemini CLI passes no session id to its shell tool or its MCP servers (only ``GEMINI_CLI=1``) and keeps
no record that maps a process to a session; its hooks get the id (the payload's ``session_id``,
``GEMINI_SESSION_ID``). Hooks, MCP servers and shell tools are all children of one node process (the
relaunched child when the CLI relaunches itself), so attend's SessionStart hook, run as that
process's direct child, writes ``<gemini dir>/attend/sessions/<pid>.json`` for it in Claude Code's own
record shape (``pid``, ``sessionId``, ``cwd``, ``procStart``). ``/clear`` fires SessionStart again
with a new id for the same process, and the record is rewritten: the spool's /clear move follows.

The walk is then Claude Code's: climb to a pid with a live record whose ``procStart`` matches. The
writer refuses an id that a live record of another process already holds, so a process of one
session cannot name itself after another live one. ``acp`` mode fires no SessionStart: there is no
record, and such a session is refused rather than mistaken for the human.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping

from attend import safejson
from attend.hosts import claude
from attend.hosts.base import Found, Host, Parent, parent_pid, pid_alive, proc_start
from attend.layout import is_session_id

INSIDE_ENV = "GEMINI_CLI"
HOOK_ENV = "GEMINI_SESSION_ID"
RECORD_MAX = 1 << 16


def gemini_home(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".gemini")


def records_home(env: Mapping[str, str] | None = None) -> str:
    """Where attend keeps its records of running Gemini sessions."""
    return os.path.join(gemini_home(env), "attend", "sessions")


def user_records() -> str | None:
    """The records folder under this user's home from the password file: where a caller that points
    ``HOME`` elsewhere still finds (and cannot hide) the session it belongs to."""
    import pwd

    try:
        return os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".gemini", "attend", "sessions")
    except KeyError:
        return None


def cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            data = f.read(1 << 16)
    except OSError:
        return []
    return [a.decode("utf-8", "replace") for a in data.split(b"\0") if a]


def is_gemini_process(pid: int) -> bool:
    """A node process running the Gemini CLI (the command line names its bundle or its bin)."""
    argv = cmdline(pid)
    return bool(argv) and os.path.basename(argv[0]).startswith("node") and any("gemini" in a for a in argv[1:3])


class RecordError(Exception):
    """The SessionStart record was not written; the message says why, in one line."""


def write_record(pid: int, session_id: str, cwd: str | None, env: Mapping[str, str]) -> str:
    """Record ``session_id`` for the gemini process ``pid`` (the SessionStart hook's parent), and
    return the record's path. Refused: a process that is not the Gemini CLI, an id that is not a
    plain id, and an id a live record of another process (Gemini's or Claude Code's) already holds."""
    if not is_session_id(session_id):
        raise RecordError(f"the SessionStart payload's session_id {session_id[:80]!r} is not a session id")
    if not is_gemini_process(pid):
        raise RecordError(f"the SessionStart hook's parent (pid {pid}) is not a Gemini CLI process")
    start = proc_start(pid)
    if start is None:
        raise RecordError(f"the Gemini CLI process {pid} has gone")
    folder = records_home(env)
    for holder in (*claude.live_records(folder), *claude.live_records(claude.sessions_home(env))):
        if holder.session_id == session_id and holder.pid != pid:
            raise RecordError(f"session {session_id} is held by the live process {holder.pid}; not recorded for {pid}")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    record = {"pid": pid, "sessionId": session_id, "cwd": cwd, "procStart": start, "host": "gemini"}
    path = os.path.join(folder, f"{pid}.json")
    tmp = os.path.join(folder, f".{pid}.json.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(safejson.dumps(record))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    prune(folder)
    return path


def prune(folder: str) -> None:
    """Remove the records of processes that have ended (a pid reused later would not match anyway)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name.endswith(".json") and name[:-5].isdigit() and not pid_alive(int(name[:-5])):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, name))


class Gemini(Host):
    name = "gemini"
    inside_env = (INSIDE_ENV,)
    session_env = (HOOK_ENV,)
    one_session_per_process = True

    def find(
        self, pid: int, env: Mapping[str, str], parent: Parent = parent_pid, claims: tuple[str, ...] = ()
    ) -> Found | None:
        first = records_home(env)
        found = claude._walk(pid, lambda _pid: first, parent)
        if found is None and (second := user_records()) is not None and second != first:
            found = claude._walk(pid, lambda _pid: second, parent)
        if found is None:
            return None
        record, where, hops = found
        return Found(self.name, record.session_id, record.pid, record.proc_start, where, record.cwd, None, hops)

    def turn_end(self, reason: str) -> dict[str, str]:
        """The AfterAgent hook's deny: the next turn's user text is the reason, as it is."""
        return {"decision": "deny", "reason": reason}


HOST = Gemini()
