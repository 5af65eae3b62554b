"""The Stop-hook drain, `attend inbox --drain`: who it serves, what it prints, its guards (rounds
ceiling, fail-closed counter), its error path, and its stdlib-only fast path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from attend import layout
from attend.conduits import fastdrain
from attend.domain.core import rooms
from attend.domain.core.ids import sent_form as short
from attend.testing.standin import Result, StandIn
from tests.support import (
    ATTEND,
    T1,
    World,
    as_codex,
    drain,
    enroll,
    fake_mcp_marker,
    maildir,
    old_signal,
    payload,
    post,
    show_lock_held_by_a_stopped_process,
)


def reason(out: subprocess.CompletedProcess[str] | Result) -> str:
    rc = out.rc if isinstance(out, Result) else out.returncode
    assert rc == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 1, out.stdout
    decision = json.loads(lines[0])
    assert decision["decision"] == "block"
    return str(decision["reason"])


def snapshot(root: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every path below ``root``, with its content (files) and mtime: byte-identical or not."""
    out: dict[str, tuple[bytes | None, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            out[str(path.relative_to(root))] = (path.read_bytes() if path.is_file() else None, st.st_mtime_ns)
    return out


# ---------------------------------------------------------------------- what it prints


def test_a_drain_blocks_once_with_pending_messages_then_prints_nothing(world: World) -> None:
    s = world.session("proj")
    enroll(world, s)
    world.attend("send", "look at the build")
    text = reason(drain(world, s.session_id))
    header, item, body, *rest = text.split("\n")
    assert header == "[attend] 1 message(s) from humans, not typed at your prompt:"  # it may be the user's
    assert (
        item.startswith("[")
        and "] fixture-human (human; #open, id " in item
        and item.endswith("):")
        and ", from " not in item
    )
    assert body == "  look at the build"  # indented: no body line starts at the margin
    assert rest[-1] == 'attend reply "..." (the newest) / attend send "..." (new thread) / silence'
    assert maildir(world, s.session_id, "new") == [] and len(maildir(world, s.session_id, "cur")) == 1
    again = drain(world, s.session_id, True)
    assert again.returncode == 0 and again.stdout == ""


def test_the_reply_forms_close_the_first_drain_and_come_again_only_after_a_compaction(world: World) -> None:
    s = world.session("proj")
    enroll(world, s)
    closing = 'attend reply "..." (the newest) / attend send "..." (new thread) / silence'
    world.attend("send", "first")
    assert reason(drain(world, s.session_id)).split("\n")[-1] == closing
    world.attend("send", "second")
    later = reason(drain(world, s.session_id)).split("\n")
    assert later[-1] == "  second" and closing not in later  # said once: the model has them
    compact = s.attend(
        "recall",
        "--hook",
        stdin=json.dumps(
            {"session_id": s.session_id, "cwd": str(s.cwd), "hook_event_name": "SessionStart", "source": "compact"}
        ),
    )
    assert compact.rc == 0, compact.stderr
    world.attend("send", "third")
    assert reason(drain(world, s.session_id)).split("\n")[-1] == closing  # the compaction dropped them


def test_the_reason_renders_ten_messages_and_names_the_rest_by_id(world: World) -> None:
    s = world.session("proj")
    enroll(world, s)
    sends = [world.attend("send", "--json", "--to", s.session_id, f"body {i}") for i in range(14)]
    ids = [json.loads(r.stdout)["id"] for r in sends]
    text = reason(drain(world, s.session_id))
    assert text.startswith("[attend] 14 message(s)")
    assert [f"  body {i}" in text.split("\n") for i in range(14)] == [True] * 10 + [False] * 4
    assert f"(+4 more for you: ids {short(ids[10])} … {short(ids[13])})" in text


def test_the_drain_names_the_mcp_tools_when_an_mcp_server_is_live(world: World) -> None:
    s = world.session("proj")
    enroll(world, s)
    fake_mcp_marker(world, s.session_id)
    world.attend("send", "hi")
    text = reason(drain(world, s.session_id))
    assert text.endswith("mcp__attend__reply (the newest) / mcp__attend__send (new thread) / silence")


def test_reply_after_a_drain_threads_to_the_drained_message(world: World) -> None:
    s = world.session("proj")
    enroll(world, s)
    sent = json.loads(world.attend("send", "--json", "question?").stdout)["id"]
    item = reason(drain(world, s.session_id)).split("\n")[1]
    shown = item.split(", id ")[1].split(",")[0].removesuffix("):")
    assert shown == short(sent)
    r = s.attend("reply", "--json", "answer")
    assert r.rc == 0, r.stderr
    assert json.loads(r.stdout)["re"] == sent
    # The short form the reason shows names the message to reply and inbox alike.
    r = s.attend("reply", "--json", "--re", shown, "to that one")
    assert r.rc == 0 and json.loads(r.stdout)["re"] == sent, r.stderr
    r = s.attend("inbox", "--json", shown)
    assert r.rc == 0 and json.loads(r.stdout)["messages"][0]["id"] == sent, r.stderr


def test_the_plain_form_lists_and_counts(world: World) -> None:
    s = world.session("proj")
    enroll(world, s)
    empty = s.attend("inbox", "--drain")
    assert empty.rc == 0 and empty.stdout.strip() == "no pending messages"
    world.attend("send", "one")
    world.attend("send", "two")
    r = s.attend("inbox", "--drain", "--format", "plain")
    assert r.rc == 0, r.stderr
    assert "  message: one" in r.stdout and "  message: two" in r.stdout
    assert r.stdout.strip().endswith("2 message(s) drained")


def test_the_cold_start_note_rides_the_drain_once(world: World) -> None:
    for i in range(2):
        old_signal(world.spool, f"stale {i}", "open", age=600)
    s = world.session("proj")
    enroll(world, s)
    text = reason(drain(world, s.session_id))
    assert text == "[attend] 2 earlier messages not shown; attend inbox"
    assert drain(world, s.session_id).stdout == ""


def test_usage_errors_exit_2(world: World) -> None:
    s = world.session("proj")
    assert s.attend("inbox", "1796000000.M000000P1Q1R00000000.h", "--drain").rc == 2
    assert s.attend("inbox", "--drain", "--format", "xml").rc == 2
    assert s.attend("inbox", "--format", "hook").rc == 2
    assert s.attend("inbox", "--drain", "--limit", "5").rc == 2  # the drain takes everything pending


# ---------------------------------------------------------------------- who it serves


CLICK_MAIN = "import sys; from attend.cli.app import main; sys.argv[0] = 'attend'; main()"


@pytest.mark.parametrize("click_path", [False, True], ids=["fast-path", "click-path"])
def test_an_unenrolled_sessions_drain_writes_nothing(world: World, click_path: bool) -> None:
    s, other = world.session("proj"), world.session("other")
    enroll(world, other)
    world.attend("send", "pending for everyone")
    before = snapshot(world.spool_root)
    args = ["inbox", "--drain", "--format", "hook"]
    if click_path:  # the full path, as the entry point takes it when the fast path defers
        out = s.run([sys.executable, "-c", CLICK_MAIN, *args], stdin=payload(s.session_id))
    else:
        out = s.attend(*args, stdin=payload(s.session_id))
    assert (out.rc, out.stdout, out.stderr) == (0, "", "")
    assert snapshot(world.spool_root) == before
    # Positive control: the same drain for the enrolled session delivers.
    assert "pending for everyone" in reason(drain(world, other.session_id))


def test_a_drain_after_clear_moves_the_session_and_delivers(world: World) -> None:
    s = world.session("proj")
    enroll(world, s)
    old = s.session_id
    world.attend("send", "before the clear")
    new = str(uuid.uuid4())
    s.write_record(session_id=new)
    out = s.attend("inbox", "--drain", "--format", "hook", stdin=payload(new))
    assert "before the clear" in reason(out)
    assert (world.spool_root / "sessions" / new / "enrolled").exists()
    assert not (world.spool_root / "sessions" / old / "enrolled").exists()


# ---------------------------------------------------------------------- guards


def test_the_rounds_ceiling_stops_blocking_after_five_consecutive_rounds(world: World) -> None:
    s = world.session("proj")
    enroll(world, s)
    for round_no in range(1, 6):
        world.attend("send", f"round {round_no}")
        assert f"round {round_no}" in reason(drain(world, s.session_id, active=round_no > 1))
    world.attend("send", "round 6")
    sixth = drain(world, s.session_id, active=True)
    assert sixth.returncode == 0 and sixth.stdout == ""
    assert "drain round 6 > 5" in sixth.stderr
    assert len(maildir(world, s.session_id, "new")) == 1  # left for the next conduit
    # A new turn (stop_hook_active false) starts a new chain.
    assert "round 6" in reason(drain(world, s.session_id, active=False))


def test_the_drain_fails_closed_when_the_round_counter_cannot_be_written(world: World) -> None:
    """Tests run as root, where chmod does not stop a write; a folder planted where the counter
    file goes does, for root too (rename cannot replace a non-empty directory with a file)."""
    s = world.session("proj")
    enroll(world, s)
    planted = world.spool_root / "sessions" / s.session_id / "drain-rounds"
    planted.mkdir()
    (planted / "keep").write_text("")
    world.attend("send", "must wait")
    out = drain(world, s.session_id, active=True)
    assert (out.returncode, out.stdout) == (0, "")
    assert "cannot record the drain round" in out.stderr
    assert len(maildir(world, s.session_id, "new")) == 1
    assert "cannot record the drain round" in world.attend("log").stdout
    # Positive control: outside a stop-hook chain the drain still delivers.
    assert "must wait" in reason(drain(world, s.session_id, active=False))


# ---------------------------------------------------------------------- every host's turn end

# A process that looks like the Gemini CLI to /proc (argv[0] node, "gemini" in the code it runs): it
# records its session as attend's SessionStart hook does, then runs each command it is handed as its
# child, as Gemini runs its AfterAgent hook and its shell tool.
GEMINI = r"""
import json, subprocess, sys  # gemini
sid, python = sys.argv[1], sys.argv[2]
record = (
    "import os, sys; from attend.hosts import gemini; "
    "gemini.write_record(os.getppid(), sys.argv[1], os.getcwd(), os.environ)"
)
subprocess.run([python, "-c", record, sid], check=True)
for line in sys.stdin:
    argv, given = json.loads(line)
    done = subprocess.run(argv, input=given, capture_output=True, text=True, timeout=60)
    print(json.dumps([done.returncode, done.stdout, done.stderr]), flush=True)
"""
G1 = "g-drain-0001"


def codex_stop(active: bool) -> str:
    """Codex's Stop payload, in the shape Codex 0.171 sends it."""
    return json.dumps(
        {
            "session_id": T1,
            "turn_id": "01a234d4-9075-7000-8000-00000000abcd",
            "transcript_path": None,
            "cwd": "/",
            "hook_event_name": "Stop",
            "model": "gpt-5.5",
            "permission_mode": "bypassPermissions",
            "stop_hook_active": active,
            "last_assistant_message": "done.",
        }
    )


def after_agent(active: bool) -> str:
    """Gemini's AfterAgent payload, in the shape Gemini 0.61 sends it."""
    return json.dumps(
        {
            "session_id": G1,
            "transcript_path": "",
            "cwd": "/",
            "hook_event_name": "AfterAgent",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "prompt": "do the scripted things",
            "prompt_response": "done.",
            "stop_hook_active": active,
        }
    )


class Host:
    """A session of one client whose turn end runs attend's hook as that client runs it: Claude Code
    (a stand-in session and its Stop payload), Codex (a thread of the Codex stand-in, `attend hook
    codex-stop` and Codex's Stop payload) or Gemini (a stand-in gemini process, the drain and
    Gemini's AfterAgent payload)."""

    def __init__(self, world: World, name: str) -> None:
        self.world, self.name = world, name
        self.decision = "deny" if name == "gemini" else "block"
        self.claude = world.session("proj") if name == "claude" else None
        self.sid = {"claude": self.claude.session_id if self.claude else "", "codex": T1, "gemini": G1}[name]
        self.gemini: subprocess.Popen[str] | None = None
        if name == "gemini":
            node = world.tmp / "bin" / "node"  # the interpreter under the name the Gemini CLI runs as
            node.parent.mkdir(exist_ok=True)
            node.symlink_to(os.path.realpath(sys.executable))
            self.gemini = subprocess.Popen(
                [str(node), "-c", GEMINI, G1, sys.executable],
                env=world.env,
                cwd=str(world.project("gem")),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        if name == "codex":  # the waiter the Codex hook starts leaves at once: the drain is what is tested
            config = Path(layout.config_root(world.env)) / "config.yaml"
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text("conduits:\n  wake: off\n")

    def attend(self, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        """``attend …`` from the session's shell tool."""
        if self.claude is not None:
            r = self.claude.attend(*args, stdin=stdin)
            return subprocess.CompletedProcess([ATTEND, *args], r.rc, r.stdout, r.stderr)
        if self.gemini is not None:
            return self.gemini_runs([ATTEND, *args], stdin)
        return as_codex(self.world, [T1], [ATTEND, *args], {"CODEX_THREAD_ID": T1}, stdin=stdin)

    def gemini_runs(self, argv: list[str], stdin: str) -> subprocess.CompletedProcess[str]:
        assert self.gemini is not None and self.gemini.stdin and self.gemini.stdout
        self.gemini.stdin.write(json.dumps([argv, stdin]) + "\n")
        self.gemini.stdin.flush()
        line = self.gemini.stdout.readline()  # the stand-in bounds each command at 60 s
        assert line, "the gemini stand-in ended"
        rc, out, err = json.loads(line)
        return subprocess.CompletedProcess(argv, rc, out, err)

    def turn_end(self, active: bool) -> subprocess.CompletedProcess[str]:
        """The client's turn-end hook, handed the client's own payload."""
        if self.name == "claude":
            return drain(self.world, self.sid, active)
        if self.gemini is not None:
            return self.gemini_runs([ATTEND, "inbox", "--drain", "--format", "hook"], after_agent(active))
        return as_codex(self.world, [T1], [ATTEND, "hook", "codex-stop"], {}, stdin=codex_stop(active))

    def reason(self, out: subprocess.CompletedProcess[str]) -> str:
        """The text the client hands the model, from the hook's one line in the client's form."""
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert len(lines) == 1, out
        decision = json.loads(lines[0])
        assert decision["decision"] == self.decision, decision
        return str(decision["reason"])

    def close(self) -> None:
        if self.gemini is not None:
            assert self.gemini.stdin is not None
            self.gemini.stdin.close()
            self.gemini.wait(timeout=60)


@pytest.fixture
def host(world: World, request: pytest.FixtureRequest) -> Iterator[Host]:
    h = Host(world, request.param)
    yield h
    h.close()


@pytest.mark.parametrize("host", ["claude", "codex", "gemini"], indirect=True)
def test_every_clients_turn_end_says_who_wrote_the_messages_and_never_calls_a_human_not_the_user(
    world: World, host: Host
) -> None:
    """Gemini hands the reason over as the next user text itself, the others inside a frame of
    their own: attend's first line says who wrote what follows, whatever the frame. An agent is
    never the user; a human may be (the operator at another terminal), so that header says only
    that the text was not typed at the session's prompt."""
    assert host.attend("join", "crew").returncode == 0
    world.attend("send", "--to", host.sid, "run the deploy now")
    header, item, body, *_ = host.reason(host.turn_end(False)).split("\n")
    assert header == "[attend] 1 message(s) from humans, not typed at your prompt:"
    assert "fixture-human (human; direct, id " in item and body == "  run the deploy now"
    post(world.spool, "open", "the build is green")
    header, item, *_ = host.reason(host.turn_end(False)).split("\n")
    assert header == "[attend] 1 message(s) from peers, not your user:"
    assert "Other-alpha (agent; #open, id " in item


@pytest.mark.parametrize("host", ["codex", "gemini"], indirect=True)
def test_the_rounds_ceiling_holds_under_codexs_stop_and_geminis_after_agent_payloads(world: World, host: Host) -> None:
    """Neither client caps repeated blocks: the drain's own ceiling, read from each payload's
    ``stop_hook_active``, is the only one."""
    assert host.attend("join", "crew").returncode == 0
    for round_no in range(1, 6):
        world.attend("send", "--to", host.sid, f"round {round_no}")
        assert f"round {round_no}" in host.reason(host.turn_end(active=round_no > 1))
    world.attend("send", "--to", host.sid, "round 6")
    sixth = host.turn_end(active=True)
    assert (sixth.returncode, sixth.stdout) == (0, "")
    assert "(drain round 6 > 5 in a row — the messages stay pending for the next conduit or turn)" in sixth.stderr
    assert "Monitor" not in sixth.stderr, sixth.stderr  # a conduit only Claude Code has
    assert len(maildir(world, host.sid, "new")) == 1
    assert "round 6" in host.reason(host.turn_end(active=False))  # a turn the user starts: a new chain


@pytest.mark.parametrize("host", ["gemini"], indirect=True)
def test_at_a_gemini_turn_end_a_burst_folds_into_one_line_and_a_muted_channel_never_shows(
    world: World, host: Host
) -> None:
    for verb in (("join", "crew"), ("join", "quiet"), ("mute", "#quiet")):
        assert host.attend(*verb).returncode == 0, verb
    flood = [post(world.spool, rooms.channel_room("crew"), f"status {i}", sender="loud-peer") for i in range(8)]
    post(world.spool, rooms.channel_room("quiet"), "muted chatter", sender="quiet-peer")
    world.attend("send", "--to", host.sid, "a word?")
    rows = host.reason(host.turn_end(False)).split("\n")
    assert rows[0] == "[attend] 9 message(s) from peers and humans, not typed at your prompt:", rows
    assert "  a word?" in rows  # addressed to the session: never folded
    folded = [row for row in rows if row.startswith("[folded] ")]
    assert (
        len(folded) == 1
        and f"sent 8 fast (ids {short(flood[0])} … {short(flood[-1])}; attend inbox --from " in folded[0]
    ), rows
    assert not any(row == "  status 3" for row in rows) and not any("muted chatter" in row for row in rows)
    assert maildir(world, host.sid, "new") == [] and len(maildir(world, host.sid, "cur")) == 10  # none lost
    assert host.turn_end(True).stdout == ""  # and none shown again


def test_the_verbs_that_serve_a_session_refuse_the_human_without_naming_one_client(world: World) -> None:
    """Claude Code, Codex and Gemini sessions are all served: a refusal names no one client."""
    for args in (
        ("inbox", "--drain"),
        ("mute", "x"),
        ("unmute", "x"),
        ("notify", "list"),
        ("keepwarm", "on"),
        ("inbox", "--wait", "0"),
    ):
        out = world.attend(*args)
        assert "agent session" in out.stderr and "Claude" not in out.stderr, (args, out.stderr)


def test_an_internal_error_is_one_stderr_line_a_log_line_and_exit_0(world: World) -> None:
    s = world.session("proj")
    enroll(world, s)
    world.attend("send", "pending")
    claimed = world.spool_root / "sessions" / s.session_id / "claimed"
    claimed.rmdir()
    claimed.write_text("not a folder")  # the maildir is broken: listing claimed/ fails inside the drain
    try:
        out = drain(world, s.session_id)
    finally:
        claimed.unlink()
        claimed.mkdir(mode=0o700)
    assert (out.returncode, out.stdout) == (0, "")
    assert len(out.stderr.strip().splitlines()) == 1 and "the drain failed" in out.stderr
    log = world.attend("log", "--lines", "5")
    assert log.returncode == 0 and "the drain failed" in log.stdout
    assert "pending" in reason(drain(world, s.session_id))  # nothing was lost


@pytest.mark.parametrize("click_path", [False, True], ids=["fast-path", "click-path"])
def test_a_drain_with_its_stdin_closed_exits_0_without_a_traceback(world: World, click_path: bool) -> None:
    s = world.session("proj")
    enroll(world, s)
    world.attend("send", "pending")
    exe = f'"{sys.executable}" -c "{CLICK_MAIN}"' if click_path else f'"{ATTEND}"'
    r = s.run(["sh", "-c", f"exec {exe} inbox --drain --format hook <&-"])
    assert r.rc == 0 and "Traceback" not in r.stderr, r.stderr
    # With no payload, identity comes from the ancestry: the session is still served.
    assert "pending" in reason(r)


def test_a_refused_spool_gets_one_stderr_line_and_nothing_written(world: World) -> None:
    s = world.session("proj")
    enroll(world, s)
    world.attend("send", "pending")
    os.chmod(world.spool_root, 0o770)  # a spool others can write is refused: the drain cannot open it
    try:
        out = drain(world, s.session_id)
    finally:
        os.chmod(world.spool_root, 0o700)
    assert (out.returncode, out.stdout) == (0, "")
    assert len(out.stderr.strip().splitlines()) == 1 and "writable by group or others" in out.stderr
    assert not (world.spool_root / "log").exists()
    assert "pending" in reason(drain(world, s.session_id))


# ---------------------------------------------------------------------- the fast path


def _imports(world: World, stdin: str, s: StandIn | None = None) -> set[str]:
    """What the hook drain imported, run as a child of stand-in ``s`` (as its Stop hook is), or of
    this test process."""
    argv = [sys.executable, "-X", "importtime", "-m", "attend", "inbox", "--drain", "--format", "hook"]
    if s is not None:
        r = s.run(argv, stdin=stdin)
        rc, err = r.rc, r.stderr
    else:
        p = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=world.env)
        rc, err = p.returncode, p.stderr
    assert rc == 0, err
    return {line.split("|")[-1].strip() for line in err.splitlines() if line.startswith("import time:")}


def test_the_empty_drain_imports_no_click_psutil_portalocker_or_yaml(world: World) -> None:
    s = world.session("proj")
    enroll(world, s)
    heavy = {"click", "psutil", "portalocker", "yaml"}
    # Enrolled with nothing pending, as its own hook; not enrolled, from outside any session (a child
    # of s naming another id looks like a /clear, which the full path follows).
    for who, parent in ((s.session_id, s), (str(uuid.uuid4()), None)):
        imported = _imports(world, payload(who), parent)
        assert not heavy & imported
        assert "attend.conduits.drain" not in imported  # decided on the fast path
        assert not [m for m in imported if m.startswith("attend.verbs")]  # the drain verb is for the full path
    # A payload naming s from outside s's ancestry is not decided there: the full path resolves it.
    assert "attend.conduits.drain" in _imports(world, payload(s.session_id))
    world.attend("send", "now something is pending")
    assert "attend.conduits.drain" in _imports(world, payload(s.session_id), s)  # positive control: the full path


def test_a_turn_end_leaves_a_posted_batch_on_the_fast_path(world: World) -> None:
    """The socket conduit mid-show, its post in the client's queue (the show lock held, ``posted``
    there): the client shows the post once the hook returns, so the hook decides on the fast path,
    silently, and leaves the mail where it is (the full path cost the post ~140 ms more)."""
    s = world.session("proj")
    enroll(world, s)
    world.attend("send", "carried by the post")
    folder = world.spool_root / "sessions" / s.session_id
    (folder / layout.POSTED).write_text("{}")
    with show_lock_held_by_a_stopped_process(world, s.session_id):
        imported = _imports(world, payload(s.session_id), s)
        assert "attend.conduits.drain" not in imported
        assert drain(world, s.session_id).stdout == ""
    assert len(maildir(world, s.session_id, "new")) == 1  # the post's, not lost
    # Positive control: the record without a conduit holding the lock (one that died) is no post.
    assert "carried by the post" in reason(drain(world, s.session_id))


def test_an_empty_fast_drain_touches_the_heartbeat_and_ends_the_round_chain(world: World) -> None:
    s = world.session("proj")
    enroll(world, s)
    folder = world.spool_root / "sessions" / s.session_id
    (folder / "drain-rounds").write_text("3")
    (folder / "heartbeat").write_text("")
    os.utime(folder / "heartbeat", (1, 1))
    assert drain(world, s.session_id, True).stdout == ""
    assert not (folder / "drain-rounds").exists()
    assert (folder / "heartbeat").stat().st_mtime > 1


def test_only_the_exact_hook_arguments_take_the_fast_path() -> None:
    assert fastdrain.wants_fast_path(["attend", "inbox", "--drain", "--format", "hook"])
    assert fastdrain.wants_fast_path(["attend", "inbox", "--format=hook", "--drain"])
    assert not fastdrain.wants_fast_path(["attend", "inbox", "--drain"])
    assert not fastdrain.wants_fast_path(["attend", "inbox", "--drain", "--format", "hook", "--json"])
    assert not fastdrain.wants_fast_path([ATTEND])


def test_a_drain_never_hangs_on_a_conduit_stuck_mid_show(world: World) -> None:
    """A conduit holding the show lock (here: stopped mid-show) makes the drain leave the messages
    to it and end the turn, instead of blocking the agent until the hook's timeout."""
    s = world.session("proj")
    enroll(world, s)
    world.attend("send", "held for the loop")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom attend.spool import Spool\nfrom pathlib import Path\n"
            "sp = Spool.open(Path(sys.argv[1]))\nwith sp.show_lock(sys.argv[2]):\n    print('held', flush=True)\n"
            "    time.sleep(60)",
            str(world.spool_root),
            s.session_id,
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=world.env,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        out = drain(world, s.session_id)
        assert (out.returncode, out.stdout) == (0, "")
        assert len(maildir(world, s.session_id, "new")) == 1  # still owed, not lost
    finally:
        holder.kill()
        holder.wait()
    assert "held for the loop" in reason(drain(world, s.session_id))  # positive control once free


def test_a_turn_end_does_not_wait_on_a_conduit_whose_post_is_in_the_clients_queue(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The socket conduit holds the show lock until the client shows its post, and the client shows
    it only after the turn-end hook returns: a hook that waited for the lock held the post back
    (2 s each time a message landed as a turn ended). Here only the post's record can end the wait;
    the holder lets go after 30 s, when a waiting hook would claim the messages itself."""
    import threading

    from attend.conduits import drain as conduit

    monkeypatch.setattr(conduit, "SHOW_WAIT", 3600.0)
    s = world.session("proj")
    enroll(world, s)
    world.attend("send", "posted by the socket conduit")
    spool, sid = world.spool, s.session_id
    busy: list[bool] = []
    returned = threading.Event()

    def turn_end() -> None:
        with conduit.claimed(spool, sid, yield_to_post=True) as batch:
            busy.append(batch.busy)
        returned.set()

    with spool.show_lock(sid) as held:  # the conduit, mid-show
        assert held
        hook = threading.Thread(target=turn_end)
        hook.start()
        spool.write_state(b"{}", layout.SESSIONS, sid, layout.POSTED)  # its post is in the client's queue
        returned.wait(30)
    hook.join()
    assert busy == [True]
    assert len(maildir(world, sid, "new")) == 1  # left to the conduit, not lost


def test_a_plain_drain_says_so_when_another_conduit_is_mid_show(world: World) -> None:
    s = world.session("proj")
    enroll(world, s)
    world.attend("send", "being shown elsewhere")
    with show_lock_held_by_a_stopped_process(world, s.session_id):
        r = s.attend("inbox", "--drain")
    assert r.rc == 0 and "no pending messages" not in r.stdout
    assert r.stdout.strip().endswith("nothing drained")
    assert "being shown elsewhere" in s.attend("inbox", "--drain").stdout  # positive control once free


def test_the_fast_path_writes_nothing_into_a_spool_open_to_others(world: World) -> None:
    s = world.session("proj")
    enroll(world, s)
    heartbeat = world.spool_root / "sessions" / s.session_id / "heartbeat"
    assert drain(world, s.session_id).returncode == 0 and heartbeat.exists()
    os.utime(heartbeat, (1, 1))
    world.spool_root.chmod(0o777)
    out = drain(world, s.session_id)
    assert out.returncode == 0 and out.stdout == "" and "writable by group or others" in out.stderr
    assert heartbeat.stat().st_mtime == 1
    world.spool_root.chmod(0o700)  # positive control: the same drain touches the heartbeat
    assert drain(world, s.session_id).returncode == 0 and heartbeat.stat().st_mtime > 1


def test_the_fast_path_never_follows_a_planted_session_symlink(world: World, tmp_path: Path) -> None:
    s = world.session("proj")
    enroll(world, s)
    session = world.spool_root / "sessions" / s.session_id
    decoy = tmp_path / "decoy"
    session.rename(decoy)
    (decoy / "drain-rounds").write_text("3")
    os.symlink(decoy, session)
    out = drain(world, s.session_id)
    assert out.returncode == 0 and out.stdout == ""
    assert (decoy / "drain-rounds").read_text() == "3"  # nothing removed through the link


def test_the_drains_times_name_their_zone(world: World) -> None:
    world.env["TZ"] = "Asia/Kolkata"  # +05:30, named IST: neither UTC nor the machine's own zone
    s = world.session("proj")
    enroll(world, s)
    world.attend("send", "what time is it there")
    item = reason(drain(world, s.session_id)).split("\n")[1]
    stamp = item[1 : item.index("]")]
    assert stamp.endswith(" IST") and len(stamp) == len("16:40 IST"), item
