"""Identity resolution, in DESIGN.md §4's order, with real processes and real session records."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from attend import identity
from attend.domain import sessions
from attend.errors import IdentityError
from tests.support import World


def test_the_ancestry_walk_finds_the_session_record_of_a_parent(world: World) -> None:
    s = world.session("proj", name="Hana")
    who = world.context(s).who()
    assert (who.kind, who.id, who.resolved, who.resolved_by) == ("agent", s.session_id, True, "ancestry")
    assert who.origin == str(s.cwd) and identity.persona(who) == "Hana"


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
    assert who.id == s.session_id and who.notes and "disagrees" in who.notes[0]


def test_a_payload_id_is_accepted_when_the_record_agrees(world: World) -> None:
    s = world.session("proj")
    ctx = world.context(s)
    ctx.payload_sid = s.session_id
    assert ctx.who().resolved_by == "payload"
    ctx.payload_sid = "someone-else"
    assert ctx.who().id == s.session_id  # the record wins over a disagreeing payload


def test_a_payload_id_without_a_record_needs_enrollment(world: World) -> None:
    ctx = world.context()
    ctx.payload_sid = "sess-orphan"
    assert ctx.who().kind == "human"
    world.spool.write_state(b'{"ways": ["join"], "origin": "/x"}', "sessions", "sess-orphan", "enrolled")
    who = ctx.who()
    assert (who.kind, who.id, who.resolved_by) == ("agent", "sess-orphan", "payload")


def test_inside_the_bash_sandbox_a_caller_is_never_human(world: World) -> None:
    ctx = world.context()
    world.env["CLAUDECODE"] = "1"
    with pytest.raises(IdentityError, match="sandbox"):
        ctx.who()
    world.env["CLAUDE_CODE_SESSION_ID"] = "sess-box"
    with pytest.raises(IdentityError, match="sandbox"):
        ctx.who()
    world.spool.write_state(b'{"ways": ["run"], "origin": "/x"}', "sessions", "sess-box", "enrolled")
    who = ctx.who()
    assert (who.kind, who.id, who.resolved_by) == ("agent", "sess-box", "sandbox-env")


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
