"""Identity resolution (DESIGN.md §4, docs/architecture/sessions.md), with real processes, real
session records and, for the sandbox rule, a real pid namespace (`unshare -pf --mount-proc`)."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from attend import identity
from attend.domain.sessions import sessions
from attend.errors import IdentityError
from attend.testing.standin import StandIn
from tests.support import ATTEND, World, drain, enroll, maildir, payload


def said(r: subprocess.CompletedProcess[str]) -> str:
    """What a refusal said: its stderr line, or with --json the message of the error document."""
    if r.stdout.startswith('{"error"'):
        return str(json.loads(r.stdout)["error"]["message"])
    return r.stderr


def test_the_ancestry_walk_finds_the_session_record_of_a_parent(world: World) -> None:
    s = world.session("proj", name="Hana")
    who = world.context(s).who()
    assert (who.kind, who.id, who.resolved, who.resolved_by) == ("agent", s.session_id, True, "ancestry")
    assert who.origin == str(s.cwd) and who.name == "Hana"


def test_a_record_whose_proc_start_does_not_match_is_refused_as_pid_reuse(world: World) -> None:
    s = world.session("proj")
    s.write_record(proc_start="1")  # the pid's real start time differs
    who = world.context(s).who()
    assert who.kind == "human"
    s.write_record()  # positive control: the true start time resolves
    assert world.context(s).who().id == s.session_id


def test_claude_config_dir_is_honoured(world: World, tmp_path: Path) -> None:
    custom = tmp_path / "custom-claude"
    world.env["CLAUDE_CONFIG_DIR"] = str(custom)
    s = world.session("proj")
    assert s.record_path.parent == custom / "sessions"
    assert world.context(s).who().id == s.session_id


def test_the_walk_stops_after_15_parents(world: World) -> None:
    s = world.session("proj")
    chain = {1000 + i: 1001 + i for i in range(20)}
    chain[1020] = s.pid
    sessions_dir = world.home / ".claude" / "sessions"
    assert identity.find_ancestor_record(1010, sessions_dir, parent=chain.get) is not None
    assert identity.find_ancestor_record(1000, sessions_dir, parent=chain.get) is None


def test_an_environment_id_that_disagrees_with_the_record_loses_with_a_note(world: World) -> None:
    s = world.session("proj")
    world.env["CLAUDE_CODE_SESSION_ID"] = "stale-id"
    who = world.context(s).who()
    assert who.id == s.session_id and who.notes == (
        f"CLAUDE_CODE_SESSION_ID stale-id disagrees with the session in the ancestry ({s.session_id}); ignored",
    )


def test_a_payload_id_that_agrees_with_the_ancestry_adds_nothing(world: World) -> None:
    s = world.session("proj")
    ctx = world.context(s)
    ctx.payload_sid = s.session_id
    who = ctx.who()
    assert (who.id, who.resolved_by, who.notes) == (s.session_id, "ancestry", ())


def test_a_payload_id_that_disagrees_with_the_ancestry_is_ignored_with_a_note(world: World) -> None:
    a, b = world.session("pa"), world.session("pb")
    ctx = world.context(a)
    ctx.payload_sid = b.session_id
    who = ctx.who()
    assert who.id == a.session_id
    assert who.notes == (
        f"the hook payload's session_id {b.session_id} disagrees with the session in the ancestry "
        f"({a.session_id}); ignored",
    )


def test_a_payload_id_without_ancestry_makes_no_identity_even_when_enrolled(world: World) -> None:
    b = world.session("pb")
    enroll(world, b)
    ctx = world.context()  # the test process: no session among its ancestors
    ctx.payload_sid = b.session_id
    who = ctx.who()
    assert (who.kind, who.id) == ("human", "fixture-human")
    assert who.notes == (f"the hook payload's session_id {b.session_id} has no session in the ancestry; ignored",)


def test_an_environment_id_without_ancestry_is_refused_in_its_sessions_own_pid_namespace(world: World) -> None:
    b = world.session("pb")
    enroll(world, b)
    before = sorted(os.listdir(world.spool_root / "rooms"))
    out = world.attend("send", "as B?", env={"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": b.session_id})
    assert out.returncode == 1 and out.stdout == ""
    [line] = out.stderr.splitlines()
    assert f"CLAUDE_CODE_SESSION_ID {b.session_id} is refused" in line and "sandbox rule" in line
    assert "another pid namespace" in line
    assert sorted(os.listdir(world.spool_root / "rooms")) == before  # nothing was sent
    # The variable alone, without CLAUDECODE, is refused the same way: it is never the human either.
    alone = world.attend("whoami", "--json", env={"CLAUDE_CODE_SESSION_ID": b.session_id})
    assert alone.returncode == 1 and "is refused" in said(alone)


def test_inside_the_bash_sandbox_a_caller_is_never_human(world: World) -> None:
    ctx = world.context()
    world.env["CLAUDECODE"] = "1"
    with pytest.raises(IdentityError, match="CLAUDE_CODE_SESSION_ID is unset"):
        ctx.who()
    world.env["CLAUDE_CODE_SESSION_ID"] = "sess-box"
    with pytest.raises(IdentityError, match="needs an enrolled session"):
        ctx.who()
    # Enrolled, but by a document that records no pid namespace (not through its ancestry).
    world.spool.write_state(b'{"ways": ["run"], "origin": "/x"}', "sessions", "sess-box", "enrolled")
    with pytest.raises(IdentityError, match="its enrollment records none"):
        ctx.who()


def test_a_record_without_a_valid_proc_start_is_refused(world: World) -> None:
    s = world.session("proj")
    record = json.loads(s.record_path.read_text())
    for start in (None, "", "abc", True, "-1"):
        if start is None:
            record.pop("procStart", None)
        else:
            record["procStart"] = start
        s.record_path.write_text(json.dumps(record))
        assert world.context(s).who().kind == "human", start
        assert identity.live_records(s.record_path.parent) == [], start
    s.write_record()  # positive control: the true start time resolves
    assert world.context(s).who().id == s.session_id


def _borrower(a: StandIn, b: StandIn, **more: str) -> dict[str, str]:
    """What a child of A sets to pass for B: another config dir, and B's id in the environment."""
    return {"CLAUDE_CONFIG_DIR": "/nonexistent", "CLAUDE_CODE_SESSION_ID": b.session_id, **more}


def test_a_claude_config_dir_pointed_elsewhere_does_not_hide_the_session(world: World) -> None:
    a, b = world.session("pa"), world.session("pb")
    enroll(world, a)
    enroll(world, b)
    for env in (_borrower(a, b), _borrower(a, b, HOME="/nonexistent", CLAUDECODE="1")):
        out = a.attend("whoami", "--json", env=env)
        assert out.rc == 0, out.stderr
        who = json.loads(out.stdout)
        assert (who["session_id"], who["resolved_by"]) == (a.session_id, "ancestry")
        home = env.get("HOME", str(world.home))  # the record shown as the caller's ~ sees it
        shown = str(a.record_path).replace(str(world.home), "~") if home == str(world.home) else str(a.record_path)
        assert who["evidence"].endswith(f"record {shown}")
        assert who["warnings"] == [
            f"CLAUDE_CODE_SESSION_ID {b.session_id} disagrees with the session in the ancestry "
            f"({a.session_id}); ignored"
        ]
    sent = a.attend("send", "--json", "--to", b.session_id, "who am I?", env=_borrower(a, b))
    assert sent.rc == 0, sent.stderr
    assert json.loads(sent.stdout)["from_id"] == a.session_id
    [line] = sent.stderr.splitlines()
    assert line == (
        f"attend: warning: CLAUDE_CODE_SESSION_ID {b.session_id} disagrees with the session in the "
        f"ancestry ({a.session_id}); ignored"
    )


def test_a_borrowing_drain_consumes_only_its_own_maildir(world: World) -> None:
    a, b = world.session("pa"), world.session("pb")
    enroll(world, a)
    enroll(world, b)
    sent = world.attend("send", "--json", "--to", b.session_id, "for B alone")
    assert sent.returncode == 0, sent.stderr
    mine = json.loads(sent.stdout)["id"]
    assert maildir(world, b.session_id, "new") == [mine]
    for form in (("--format", "hook"), ("--format", "plain")):
        for stdin in (payload(b.session_id), ""):
            out = a.attend("inbox", "--drain", *form, stdin=stdin, env=_borrower(a, b))
            assert out.rc == 0, out.stderr
            assert "for B alone" not in out.stdout
    assert maildir(world, b.session_id, "new") == [mine]  # B's message is still B's
    got = drain(world, b.session_id)  # B's own Stop hook, a child of B
    assert "for B alone" in json.loads(got.stdout)["reason"]


def test_a_borrowing_empty_drain_leaves_the_other_sessions_state_alone(world: World) -> None:
    a, b = world.session("pa"), world.session("pb")
    enroll(world, a)
    enroll(world, b)
    folder = world.spool_root / "sessions" / b.session_id
    (folder / "drain-rounds").write_text("3")
    (folder / "heartbeat").write_text("")
    os.utime(folder / "heartbeat", (1, 1))
    for out in (
        a.attend("inbox", "--drain", "--format", "hook", stdin=payload(b.session_id)),
        world.attend("inbox", "--drain", "--format", "hook", stdin=payload(b.session_id)),
    ):
        assert out.stdout == ""
    assert (folder / "drain-rounds").read_text() == "3" and (folder / "heartbeat").stat().st_mtime == 1
    assert drain(world, b.session_id).stdout == ""  # B's own: the fast path ends B's chain
    assert not (folder / "drain-rounds").exists() and (folder / "heartbeat").stat().st_mtime > 1


# ---------------------------------------------------------------------- the sandbox rule, for real


@functools.cache
def _unshare_works() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-pf", "--mount-proc", "true"], capture_output=True)
    return probe.returncode == 0


needs_pid_namespace = pytest.mark.skipif(
    not _unshare_works(), reason="`unshare -pf --mount-proc` is unavailable here (needs root or user namespaces)"
)


def _in_new_pid_namespace(world: World, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``argv`` as Claude Code's Bash sandbox runs a command: in a fresh pid namespace with its own
    /proc, where no Claude process is visible."""
    return subprocess.run(
        ["unshare", "-pf", "--mount-proc", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env={**world.env, **env},
        cwd=str(world.project("proj")),
    )


@needs_pid_namespace
def test_in_another_pid_namespace_an_enrolled_sessions_environment_id_is_accepted(world: World) -> None:
    b = world.session("pb")
    enroll(world, b)  # through its ancestry: the enrollment records B's Claude's pid namespace
    recorded = sessions.read_enrollment(world.spool, b.session_id)
    assert recorded is not None and recorded.pid_ns == identity.pid_namespace(b.pid)
    box = {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": b.session_id}
    out = _in_new_pid_namespace(world, [ATTEND, "whoami", "--json"], box)
    assert out.returncode == 0, out.stderr
    who = json.loads(out.stdout)
    assert (who["session_id"], who["kind"], who["resolved_by"]) == (b.session_id, "agent", "sandbox")
    assert who["origin_path"] == str(b.cwd)  # the enrollment's, not the caller's
    assert who["evidence"].startswith("sandbox: pid namespace pid:[")
    assert who["evidence"].endswith(f"differs from the enrollment's {recorded.pid_ns}")
    sent = _in_new_pid_namespace(world, [ATTEND, "send", "--json", "from the sandbox"], box)
    assert sent.returncode == 0, sent.stderr
    assert json.loads(sent.stdout)["from_id"] == b.session_id
    # The same command with the same environment, in the caller's own namespace: refused.
    here = world.attend("whoami", "--json", env=box)
    assert here.returncode == 1 and "another pid namespace" in said(here)


@needs_pid_namespace
def test_a_sandboxed_command_cannot_switch_to_another_enrolled_session(world: World) -> None:
    a, b = world.session("pa"), world.session("pb")
    enroll(world, a)
    enroll(world, b)
    # The sandbox was started for A (its first process has A's id); a command inside it claims B.
    script = f'CLAUDE_CODE_SESSION_ID={b.session_id} "{ATTEND}" whoami --json; exit $?'
    out = _in_new_pid_namespace(
        world, ["sh", "-c", script], {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": a.session_id}
    )
    assert out.returncode == 1, out.stdout
    assert f"this pid namespace was started for session {a.session_id}" in said(out)
    # Positive control: claiming the session it was started for is accepted.
    script = f'"{ATTEND}" whoami --json; exit $?'
    ok = _in_new_pid_namespace(world, ["sh", "-c", script], {"CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": a.session_id})
    assert ok.returncode == 0 and json.loads(ok.stdout)["session_id"] == a.session_id, ok.stderr


def test_an_enrollment_from_the_sandbox_keeps_the_recorded_namespace(world: World) -> None:
    b = world.session("pb")
    enroll(world, b)
    recorded = sessions.read_enrollment(world.spool, b.session_id)
    assert recorded is not None and recorded.pid_ns
    boxed = identity.Identity("agent", b.session_id, str(b.cwd), "sandbox", False)
    sessions.enroll(world.spool, boxed, "join")
    again = sessions.read_enrollment(world.spool, b.session_id)
    assert again is not None and again.pid_ns == recorded.pid_ns


@pytest.mark.parametrize(
    "terminal", [{}, {"TMUX": "/tmp/tmux-0/default,1,0"}, {"TERM_PROGRAM": "vscode"}, {"SSH_CONNECTION": "1 2 3 4"}]
)
def test_the_human_is_one_identity_whatever_the_terminal(world: World, terminal: dict[str, str]) -> None:
    world.env.update(terminal)
    who = world.context().who()
    assert (who.kind, who.id, who.resolved_by) == ("human", "fixture-human", "terminal")


def test_a_claude_worktree_tail_is_cut_from_the_origin(world: World) -> None:
    base = world.project("proj")
    nested = base / ".claude" / "worktrees" / "feature" / "src"
    nested.mkdir(parents=True)
    assert identity.normalise_origin(str(nested)) == str(base)


def test_a_git_worktree_maps_to_its_main_repository(world: World) -> None:
    main = world.project("mainrepo")
    env = {
        **world.env,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    subprocess.run(["git", "init", "-q", str(main)], check=True, env=env)
    subprocess.run(["git", "-C", str(main), "commit", "-q", "--allow-empty", "-m", "x"], check=True, env=env)
    wt = world.tmp / "wt"
    subprocess.run(["git", "-C", str(main), "worktree", "add", "-q", str(wt)], check=True, env=env)
    (wt / "pkg").mkdir()
    assert identity.normalise_origin(str(wt)) == str(main)
    assert identity.normalise_origin(str(wt / "pkg")) == str(main / "pkg")
    assert identity.normalise_origin(str(main)) == str(main)  # control


def test_the_nickname_is_stable_for_a_path() -> None:
    assert identity.nickname("/srv/a") == identity.nickname("/srv/a")
    assert identity.fnv1a64("foo") == 0xDCB27518FED9D577


def test_whoami_machine_prints_exactly_three_lines(world: World) -> None:
    s = world.session("proj")
    out = s.attend("whoami", "--machine")
    assert out.rc == 0
    keys = [line.split("=", 1)[0] for line in out.stdout.splitlines()]
    assert keys == ["session_id", "origin_path", "resolved"]


def test_whoami_json_names_how_it_resolved(world: World) -> None:
    s = world.session("proj")
    data = json.loads(s.attend("whoami", "--json").stdout)
    assert data["session_id"] == s.session_id and data["resolved_by"] == "ancestry" and data["warnings"] == []
    sessions.enroll(world.spool, world.context(s).who(), "join")
    assert json.loads(s.attend("whoami", "--json").stdout)["display"].endswith("-alpha")


def test_whoami_names_the_evidence_that_decided(world: World) -> None:
    a, b = world.session("pa"), world.session("pb")
    start = identity.proc_start(a.pid)
    ancestry = f"ancestry: claude pid {a.pid} (procStart {start}) record ~/.claude/sessions/{a.pid}.json"
    assert json.loads(a.attend("whoami", "--json").stdout)["evidence"] == ancestry
    text = a.attend("whoami", env={"CLAUDE_CODE_SESSION_ID": b.session_id})
    rows = dict(line.split(None, 1) for line in text.stdout.splitlines() if line and not line.startswith("spool:"))
    assert rows["evidence"] == ancestry
    assert rows["ignored"].startswith(f"CLAUDE_CODE_SESSION_ID {b.session_id} disagrees")
    assert text.stderr.count("ignored") == 1  # the note once on stderr, not again as a warning
    human = json.loads(world.attend("whoami", "--json").stdout)
    assert (human["kind"], human["evidence"]) == ("human", "human: no session in the ancestry")


def test_a_missing_pid_reads_as_not_alive() -> None:
    assert identity.pid_alive(os.getpid())
    assert not identity.pid_alive(2**22 + 12345)


def test_a_record_whose_session_id_is_not_a_plain_id_is_no_session(world: World) -> None:
    s = world.session("proj")
    plain = s.session_id
    s.write_record(session_id="../../escape")  # would name a folder outside sessions/
    assert world.context(s).who().kind == "human"
    s.write_record(session_id=plain)  # positive control: a plain id resolves
    assert world.context(s).who().id == plain


def test_a_fifo_planted_as_a_session_record_never_hangs_the_walk(world: World) -> None:
    s = world.session("proj")
    s.record_path.unlink()
    os.mkfifo(s.record_path)
    for argv in (("whoami", "--json"), ("inbox", "--drain", "--format", "hook")):
        out = s.run([ATTEND, *argv], stdin=payload(s.session_id), timeout=20)
        assert out.rc == 0, out.stderr  # finished: the FIFO is no record, so the caller is the human
    assert json.loads(s.attend("whoami", "--json").stdout)["kind"] == "human"


def test_one_resolution_reads_each_ancestors_stat_and_environ_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every host climbs the same ancestry: within one call each process's /proc stat and environ
    are read once and shared; the next call reads them afresh (nothing outlives a resolution)."""
    import contextlib
    from collections import Counter

    from attend.hosts import base

    stats: Counter[int] = Counter()
    environs: Counter[int] = Counter()
    real_stat, real_environ = base.full_stat, base.environ_of
    monkeypatch.setattr(base, "full_stat", lambda pid: stats.update([pid]) or real_stat(pid))
    monkeypatch.setattr(base, "environ_of", lambda pid: environs.update([pid]) or real_environ(pid))
    env = {"USER": "someone", "HOME": str(tmp_path), "PATH": os.environ.get("PATH", "")}

    def resolve_once() -> None:
        # This test may itself run inside a host (then it is refused): only the reads are counted.
        with contextlib.suppress(IdentityError):
            identity.authority(env=env, cwd=str(tmp_path))

    resolve_once()
    assert stats and environs  # positive control: the walk read /proc through the shared readers
    assert max(stats.values()) == 1, stats
    assert max(environs.values()) == 1, environs
    resolve_once()
    assert set(stats.values()) == {2}, stats  # read again by the next call, once each
