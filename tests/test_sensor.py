"""The sensor loop, `attend run`: start-up order, Monitor lines, digest, reply hint, cold start,
presence, restarts and /clear, driven as a child of a stand-in session."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import uuid
from pathlib import Path

from attend.conduits import monitor
from attend.domain.core import envelope, rooms
from attend.domain.core.envelope import Signal
from attend.domain.messages import presence
from attend.domain.sessions import sessions
from attend.layout import unique_name
from tests.support import (
    World,
    enroll,
    fake_mcp_marker,
    maildir,
    old_signal,
    show_lock_held_by_a_stopped_process,
    wait_until,
)

PREFIX = "[attend sensor=peers priority="


def has(text: str):  # type: ignore[no-untyped-def]
    return lambda lines: any(text in line for line in lines)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process has used so far (not wall time)."""
    data = Path(f"/proc/{pid}/stat").read_text()
    fields = data[data.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def trying_show_lock(world: World, pid: int, sid: str) -> bool:
    """Whether process ``pid`` has the session's show lock file open: a conduit holds it open while it
    waits for the lock (and while it holds it), so this is the moment it reached the lock."""
    lock = os.path.realpath(world.spool_root / "sessions" / sid / "show.lock")
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except FileNotFoundError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == lock:
                return True
        except OSError:
            continue
    return False


def plant_in_claimed(world: World, sid: str, body: str) -> None:
    """A delivery a conduit claimed and died before showing: in claimed/, and nowhere else."""
    from attend.layout import name_time

    spool = world.spool
    name = unique_name()
    sig = Signal("", "planter", "human", "planter@tty", "*", rooms.OPEN, "/elsewhere", body, 0.0)
    spool.publish([rooms.OPEN], envelope.render(sig.with_id(name, name_time(name))), name)
    os.link(spool.room_path(rooms.OPEN, name), world.spool_root / "sessions" / sid / "claimed" / name)


# ---------------------------------------------------------------------- start-up


def test_the_loop_prints_a_banner_then_each_message_as_one_monitor_line(world: World, loops) -> None:
    s, peer = world.session("proj"), world.session("other")
    loop = loops(s)
    banner = loop.lines()[0]
    assert banner.startswith("[attend] watching ") and "#open" in banner and "project" in banner
    world.attend("send", "hello everyone")
    enroll(world, peer)
    assert peer.attend("send", "--to", s.session_id, "just for you").rc == 0
    lines = loop.wait_for(has("just for you"), "the direct message")
    assert f"{PREFIX}low] message from fixture-human (proj): hello everyone" in lines[1]
    direct = next(line for line in lines if "just for you" in line)
    assert direct.startswith(f"{PREFIX}high] message from ") and "(other): just for you" in direct
    assert loop.stop() == 0
    assert maildir(world, s.session_id, "new") == [] and len(maildir(world, s.session_id, "cur")) == 2


def test_a_second_loop_for_the_same_session_exits_cleanly(world: World, loops) -> None:
    s = world.session("proj")
    loops(s)
    r = s.attend("run")  # armed again under Monitor while the first still runs
    assert r.rc == 0, r.stderr
    assert r.stdout.strip() == f"another attend is already running for session {s.session_id}"


def test_the_run_lock_is_taken_before_enrolling(world: World, loops) -> None:
    s = world.session("proj")
    world.spool.make_dir("sessions", s.session_id)
    folder = world.spool.root / "sessions" / s.session_id
    fd = os.open(folder / "run.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        r = s.attend("run")
    finally:
        os.close(fd)
    assert r.rc == 0 and "another attend is already running" in r.stdout
    assert not (folder / "enrolled").exists()
    loops(s).stop()  # positive control: with the lock free, the loop enrolls
    assert (folder / "enrolled").exists()


def test_a_human_cannot_run_the_loop(world: World) -> None:
    r = world.attend("run")
    assert r.returncode == 2  # not a session: bad usage, as from every verb
    assert len(r.stderr.strip().splitlines()) == 1 and "Monitor" in r.stderr


def test_sigterm_and_sigint_stop_the_loop_cleanly(world: World, loops) -> None:
    s = world.session("proj")
    assert loops(s).stop(signal.SIGTERM) == 0
    assert loops(s).stop(signal.SIGINT) == 0


def test_sigterm_stops_a_loop_whose_show_lock_is_held_by_a_stopped_conduit(world: World, loops) -> None:
    s = world.session("proj")
    loop = loops(s)
    with show_lock_held_by_a_stopped_process(world, s.session_id):
        world.attend("send", "held up")
        wait_until(lambda: trying_show_lock(world, loop.pid, s.session_id), "the loop to try the show lock")
        assert loop.stop(signal.SIGTERM) == 0  # before the holder lets go
        assert not any("held up" in line for line in loop.lines())
    # Positive control: with the lock free, the next loop shows it.
    loops(s).wait_for(has("held up"), "the message once the lock is free")


def test_a_loop_delivers_what_arrives_after_its_show_lock_was_freed(world: World, loops) -> None:
    s = world.session("proj")
    loop = loops(s)
    with show_lock_held_by_a_stopped_process(world, s.session_id):
        world.attend("send", "during the hold")
        # The loop finds the lock taken and backs off: it opens the lock file, then gives up on it.
        wait_until(lambda: trying_show_lock(world, loop.pid, s.session_id), "the loop to try the show lock")
        wait_until(lambda: not trying_show_lock(world, loop.pid, s.session_id), "the loop to give up and back off")
    loop.wait_for(has("during the hold"), "the message after the holder died")
    world.attend("send", "after the hold")
    loop.wait_for(has("after the hold"), "the next message")
    assert loop.stop() == 0


def test_a_running_loop_shows_what_a_dead_conduit_left_in_claimed(world: World, loops) -> None:
    s = world.session("proj")
    loop = loops(s)
    plant_in_claimed(world, s.session_id, "left in claimed")
    loop.wait_for(has("left in claimed"), "the abandoned delivery, without a restart")
    # Print first, then mark seen: the line can be read an instant before claimed/ empties.
    wait_until(lambda: maildir(world, s.session_id, "claimed") == [], "claimed/ empty after the line")
    assert loop.stop() == 0


def test_the_loop_neither_spins_nor_stalls_when_its_claimed_folder_is_gone(world: World, loops) -> None:
    s = world.session("proj")
    loop = loops(s)
    (world.spool_root / "sessions" / s.session_id / "claimed").rmdir()
    before = cpu_seconds(loop.pid)
    world.attend("send", "nowhere to claim into")
    loop.wait_for(has("nowhere to claim into"), "the message once the loop remade claimed/")
    assert cpu_seconds(loop.pid) - before < 1.0  # a spinning loop burns a CPU second per second
    assert loop.stop() == 0


def test_a_failing_delivery_is_reported_once_and_the_loop_carries_on(world: World, loops) -> None:
    s = world.session("proj")
    loop = loops(s)
    claimed = world.spool_root / "sessions" / s.session_id / "claimed"
    claimed.rmdir()
    claimed.write_text("not a folder")  # claiming into it fails with an error, not a lost race
    world.attend("send", "after the repair")
    wait_until(lambda: "delivery failed" in loop.stderr(), "the loop to report the failure")
    assert "delivery failed" in world.attend("log").stdout
    claimed.unlink()
    claimed.mkdir(mode=0o700)
    loop.wait_for(has("after the repair"), "the message once claimed/ is a folder again")
    assert loop.stderr().count("delivery failed") == 1
    assert loop.stop() == 0


# ---------------------------------------------------------------------- restarts and bursts


def test_a_restart_shows_what_arrived_while_down_once_and_a_burst_as_one_digest(world: World, loops) -> None:
    s, peer = world.session("proj"), world.session("other")
    enroll(world, peer)
    loops(s).stop()
    for i in range(10):
        world.attend("send", f"while down {i}")
    peer.attend("send", "--to", s.session_id, "direct one")
    peer.attend("send", "--to", str(s.cwd), "project one")
    loop = loops(s)
    lines = loop.wait_for(has("new messages"), "the digest")
    assert lines[0] == monitor.RESTARTED
    assert f"{PREFIX}high] 12 new messages: 2 for you, 10 on #open — attend inbox for detail" in lines
    assert loop.stop() == 0
    again = loops(s)
    again.stop()
    assert again.lines() == [monitor.RESTARTED]  # shown once: nothing repeats


def test_long_bodies_split_at_words_into_at_most_three_chunks() -> None:
    words = " ".join(f"w{i:03d}" for i in range(300))  # 1,499 characters
    parts = monitor.chunks(words)
    assert len(parts) == 3
    assert all(len(p) <= monitor.CHUNK for p in parts)
    assert parts[-1].endswith("…see attend inbox for full message")
    assert all(not p.startswith(" ") for p in parts)
    assert monitor.chunks("short") == ["short"]
    two = monitor.chunks(" ".join(["abcd"] * 70))  # 349 characters: two chunks, no pointer
    assert len(two) == 2 and "see attend inbox" not in two[-1]
    sig = Signal("1", "Hana-beta", "agent", "x", "*", "open", "/p/proj", words, 0.0)
    lines = monitor.message_lines(sig)
    assert [line.split(": ", 1)[0][-5:] for line in lines] == ["(1/3)", "(2/3)", "(3/3)"]


def test_the_reply_hint_comes_once_and_names_the_cli_without_an_mcp_server(world: World, loops) -> None:
    s = world.session("proj")
    loop = loops(s)
    world.attend("send", "first")
    world.attend("send", "second")
    lines = loop.wait_for(has("second"), "both messages")
    hinted = [line for line in lines if "(reply: " in line]
    assert hinted == [f'{PREFIX}low] message from fixture-human (proj): first (reply: attend reply "…")']


def test_the_reply_hint_names_the_mcp_tool_when_an_mcp_server_is_live(world: World, loops) -> None:
    s = world.session("proj")
    loops(s).stop()
    fake_mcp_marker(world, s.session_id)
    loop = loops(s)
    world.attend("send", "first")
    loop.wait_for(has("first"), "the message")
    assert loop.messages()[-1].endswith("first (reply: the mcp__attend__reply tool)")


def test_the_loop_records_last_inbound_so_reply_threads_to_it(world: World, loops) -> None:
    s = world.session("proj")
    loop = loops(s)
    world.attend("send", "ask me")
    loop.wait_for(has("ask me"), "the message")
    newest = maildir(world, s.session_id, "cur")[-1].split(":")[0]
    # Recorded before the line is printed, so a reply made on seeing it threads to it.
    assert sessions.last_inbound(world.spool, s.session_id) == newest
    r = s.attend("reply", "--json", "on it")
    assert r.rc == 0 and json.loads(r.stdout)["re"] == newest, r.stdout + r.stderr


def test_an_unreadable_or_newer_delivery_is_set_aside_with_one_warning(world: World, loops) -> None:
    s = world.session("proj")
    loop = loops(s)
    new = world.spool_root / "sessions" / s.session_id / "new"
    (new / "1700000000.M000001P1Q1R00000000.junk").write_bytes(b"not a signal")
    newer = envelope.render(Signal("x", "a", "human", "a", "*", "open", "/p", "from the future", 0.0))
    (new / "1700000000.M000002P1Q1R00000000.future").write_bytes(
        newer.replace(f"Attend-Version: {envelope.VERSION}".encode(), b"Attend-Version: 9")
    )
    world.attend("send", "still flowing")
    loop.wait_for(has("still flowing"), "the next message")
    assert loop.stderr().count("set aside") == 2
    assert len(os.listdir(world.spool_root / "quarantine")) == 2
    assert loop.stop() == 0


# ---------------------------------------------------------------------- cold start


def test_the_cold_start_rule_delivers_fresh_and_addressed_mail_and_notes_the_rest(world: World, loops) -> None:
    s = world.session("proj")
    spool = world.spool
    for i in range(3):
        old_signal(spool, f"stale open {i}", rooms.OPEN, age=600)
    old_signal(spool, "old but addressed", rooms.project_room(str(s.cwd)), age=600)
    old_signal(spool, "fresh open", rooms.OPEN, age=5)
    loop = loops(s)
    lines = loop.wait_for(has("fresh open"), "the fresh message")
    lines = loop.wait_for(has("old but addressed"), "the addressed message")
    assert f"{PREFIX}medium] 3 earlier messages not shown; attend inbox" in lines
    assert not any("stale open" in line for line in lines)
    loop.stop()
    assert loops(s).stop() == 0  # the note is given once
    assert not (world.spool_root / "sessions" / s.session_id / "notice").exists()


# ---------------------------------------------------------------------- presence


def test_peer_sessions_starting_and_ending_become_one_presence_record_each(world: World, loops) -> None:
    a, b = world.session("proj"), world.session("other")
    la, lb = loops(a), loops(b)
    c = world.session("proj", name="Cleo")
    for loop, where in ((la, "same project"), (lb, "other project")):
        loop.wait_for(has(f"peer session started: Cleo (proj) [{where}]"), "the started line")
    c.close()
    for loop in (la, lb):
        loop.wait_for(has("peer session ended: Cleo (proj)"), "the ended line")
    records = world.spool.room_names(presence.ROOM)
    bodies = [envelope.parse(world.spool.read(world.spool.room_path(presence.ROOM, n))).body for n in records]
    assert bodies == ["started", "ended"]


# ---------------------------------------------------------------------- /clear


def test_after_clear_the_loop_moves_the_session_and_mail_to_the_old_id_still_arrives(world: World, loops) -> None:
    s = world.session("proj")
    loop = loops(s)
    old = s.session_id
    new = str(uuid.uuid4())
    s.write_record(session_id=new)
    loop.wait_for(has("session id changed"), "the move")
    assert (world.spool_root / "sessions" / new / "enrolled").exists()
    assert (world.spool_root / "sessions" / old / "moved-to").read_text() == new
    r = world.attend("send", "--to", old, "to the old id")
    assert r.returncode == 0, r.stderr
    loop.wait_for(has("to the old id"), "the message to the old id")
    world.attend("send", "and to everyone")
    loop.wait_for(has("and to everyone"), "the loop to keep delivering")
    assert len(maildir(world, new, "cur")) == 2
    assert loop.stop() == 0
