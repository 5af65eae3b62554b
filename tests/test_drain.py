"""The Stop-hook drain, `attend inbox --drain`: who it serves, what it prints, its guards (rounds
ceiling, fail-closed counter), its error path, and its stdlib-only fast path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from attend.conduits import fastdrain
from attend.testing.standin import Result, StandIn
from tests.support import (
    ATTEND,
    World,
    drain,
    enroll,
    fake_mcp_marker,
    maildir,
    old_signal,
    payload,
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
    assert header == "[attend] 1 message(s):"
    assert item.startswith("[") and "] fixture-human (#open, id " in item and ", from fixture-human):" in item
    assert body == "  look at the build"  # indented: no body line starts at the margin
    assert rest[-1] == (
        'attend reply "..." answers the newest; attend send "..." starts a thread; silence is a valid reply.'
    )
    assert maildir(world, s.session_id, "new") == [] and len(maildir(world, s.session_id, "cur")) == 1
    again = drain(world, s.session_id, True)
    assert again.returncode == 0 and again.stdout == ""


def test_the_reason_renders_ten_messages_and_names_the_rest_by_id(world: World) -> None:
    s = world.session("proj")
    enroll(world, s)
    sends = [world.attend("send", "--json", "--to", s.session_id, f"body {i}") for i in range(14)]
    ids = [json.loads(r.stdout)["id"] for r in sends]
    text = reason(drain(world, s.session_id))
    assert text.startswith("[attend] 14 message(s)")
    assert [f"  body {i}" in text.split("\n") for i in range(14)] == [True] * 10 + [False] * 4
    assert f"(+4 more for you: ids {ids[10]} … {ids[13]})" in text


def test_the_drain_names_the_mcp_tools_when_an_mcp_server_is_live(world: World) -> None:
    s = world.session("proj")
    enroll(world, s)
    fake_mcp_marker(world, s.session_id)
    world.attend("send", "hi")
    text = reason(drain(world, s.session_id))
    assert text.endswith(
        "mcp__attend__reply answers the newest; mcp__attend__send starts a thread; silence is a valid reply."
    )


def test_reply_after_a_drain_threads_to_the_drained_message(world: World) -> None:
    s = world.session("proj")
    enroll(world, s)
    world.attend("send", "question?")
    item = reason(drain(world, s.session_id)).split("\n")[1]
    msg_id = item.split(", id ")[1].split(",")[0]
    r = s.attend("reply", "--json", "answer")
    assert r.rc == 0, r.stderr
    assert json.loads(r.stdout)["re"] == msg_id


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
    assert len(maildir(world, s.session_id, "new")) == 1  # left for the Monitor conduit
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
