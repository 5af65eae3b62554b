"""A session's tools cannot write their way into another session, through any host's records.

Sessions share a uid, so a session's shell may write any host's session records: Claude Code's
(``~/.claude/sessions/<pid>.json``), attend's for Gemini CLI (``~/.gemini/attend/sessions``), in the
user's own folders or under a ``HOME`` of its choosing, for a process of its own. A record nested
under the caller's real session stands only when it names an id no other process holds: no live
record of any host names it, and the spool has not bound it to another process
(identity.find_caller). And a record rewritten to name a session that runs elsewhere is refused
(docs/architecture/sessions.md, "The authority rule").
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from attend.testing.standin import Result, StandIn
from tests.support import T1, World, as_codex, enroll, maildir

# Write a session record naming SID for this process (which then execs attend: the same pid), or for
# its parent (the session's own process) with "parent", in FOLDER, in the shape HOST's walk reads.
FORGE = """
import json, os, sys
host, folder, sid, cwd, whose, argv = *sys.argv[1:6], sys.argv[6:]
pid = os.getppid() if whose == "parent" else os.getpid()
with open(f"/proc/{pid}/stat") as f:
    start = f.read().rsplit(")", 1)[1].split()[19]
record = {"pid": pid, "sessionId": sid, "cwd": cwd, "procStart": start}
if host == "gemini":
    record["host"] = "gemini"
os.makedirs(folder, exist_ok=True)
with open(f"{folder}/{pid}.json", "w") as f:
    json.dump(record, f)
os.execv(argv[0], argv)
"""

ATTEND = [sys.executable, "-m", "attend"]


def forged(a: StandIn, host: str, folder: Path, sid: str, *argv: str, whose: str = "self", **env: str) -> Result:
    return a.run([sys.executable, "-c", FORGE, host, str(folder), sid, str(a.cwd), whose, *ATTEND, *argv], env=env)


def whoami(result: Result) -> str:
    assert result.rc == 0, result.stderr
    sid: str = json.loads(result.stdout)["session_id"]
    return sid


def mail_for(world: World, s: StandIn) -> list[str]:
    sent = world.attend("send", "--to", s.session_id, "for this session only")
    assert sent.returncode == 0, sent.stderr
    pending = maildir(world, s.session_id, "new")
    assert pending
    return pending


def gemini_records(home: Path) -> Path:
    return home / ".gemini" / "attend" / "sessions"


def test_a_gemini_record_a_claude_sessions_tools_write_never_borrows_a_running_session(world: World) -> None:
    a, b = world.session("pa"), world.session("pb")
    enroll(world, a)
    enroll(world, b)
    pending = mail_for(world, b)
    folder = gemini_records(world.home)
    assert whoami(forged(a, "gemini", folder, b.session_id, "whoami", "--json")) == a.session_id
    drained = forged(a, "gemini", folder, b.session_id, "inbox", "--drain")
    assert "for this session only" not in drained.stdout
    assert maildir(world, b.session_id, "new") == pending  # B's mail is where it was


def test_a_gemini_record_under_a_home_of_the_callers_choosing_never_borrows_a_session(world: World) -> None:
    a, b = world.session("pa"), world.session("pb")
    enroll(world, a)
    enroll(world, b)
    elsewhere = world.tmp / "elsewhere"
    out = forged(a, "gemini", gemini_records(elsewhere), b.session_id, "whoami", "--json", HOME=str(elsewhere))
    assert whoami(out) == a.session_id


def test_a_record_of_any_host_naming_a_parked_session_is_not_believed_under_a_running_one(world: World) -> None:
    """C enrolled and ended (parked, its mail waiting): a record A's tools write for a process of
    their own naming C, Claude Code's or Gemini's, leaves the caller A, and C's mail unread."""
    a, c = world.session("pa"), world.session("pc")
    enroll(world, a)
    enroll(world, c)
    c.close()
    pending = mail_for(world, c)
    for host, folder in (("claude", world.home / ".claude" / "sessions"), ("gemini", gemini_records(world.home))):
        assert whoami(forged(a, host, folder, c.session_id, "whoami", "--json")) == a.session_id, host
        drained = forged(a, host, folder, c.session_id, "inbox", "--drain")
        assert "for this session only" not in drained.stdout, host
    assert maildir(world, c.session_id, "new") == pending


def test_a_sessions_own_record_rewritten_to_name_a_running_session_is_refused(world: World) -> None:
    a, b = world.session("pa"), world.session("pb")
    enroll(world, a)
    enroll(world, b)
    pending = mail_for(world, b)
    folder = world.home / ".claude" / "sessions"
    out = forged(a, "claude", folder, b.session_id, "whoami", "--json", whose="parent")
    assert out.rc != 0 and f"held by its live process {b.pid}" in out.stdout, out
    drained = forged(a, "claude", folder, b.session_id, "inbox", "--drain", whose="parent")
    assert "for this session only" not in drained.stdout
    assert maildir(world, b.session_id, "new") == pending
    # B's own tools are still B.
    assert whoami(b.attend("whoami", "--json")) == b.session_id


def test_a_claude_record_a_codex_threads_shell_writes_never_borrows_a_claude_session(world: World) -> None:
    b = world.session("pb")
    enroll(world, b)
    pending = mail_for(world, b)
    folder = world.home / ".claude" / "sessions"
    code = (
        "import json, os, sys\n"
        "from attend import identity\n"
        f"folder, sid = {str(folder)!r}, {b.session_id!r}\n"
        "start = open(f'/proc/{os.getpid()}/stat').read().rsplit(')', 1)[1].split()[19]\n"
        "record = {'pid': os.getpid(), 'sessionId': sid, 'procStart': start}\n"
        "json.dump(record, open(f'{folder}/{os.getpid()}.json', 'w'))\n"
        "w = identity.resolve()\n"
        "print(json.dumps([w.kind, w.id, w.host]))\n"
    )
    out = as_codex(world, [T1], [sys.executable, "-c", code], {"CODEX_THREAD_ID": T1})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == ["agent", T1, "codex"]
    assert maildir(world, b.session_id, "new") == pending
