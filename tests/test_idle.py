"""What an idle sensor loop costs (issue 15): a hundred on one machine must cost next to nothing.

- every periodic timer falls on one grid, so an idle loop wakes once per tick, not once per timer;
- its own Claude process's end is an event (a pidfd), not a timer;
- a peer's record changing costs each loop that record, not the machine's whole list;
- the re-check for peers that died without removing their record is made by one loop a minute;
- a message that owes no reheat costs the disclosure sensor no write.

In process where the point is what the loop schedules or reads; with a real loop where it is what
reaches the disk.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from attend.conduits import loop as loop_mod
from attend.conduits.watch import Watcher
from attend.domain.core import envelope
from attend.domain.core.envelope import Signal
from attend.domain.messages import delivery, presence
from attend.domain.sessions import sessions
from attend.testing.standin import StandIn
from tests.support import Loop, World, enroll, has, maildir, name_at, post, wait_until


def sensor_for(world: World, s: StandIn) -> loop_mod.Sensor:
    ctx = world.context(s)
    who = ctx.who()
    lock = loop_mod.RunLock.take(ctx.spool, who.id)
    assert lock is not None
    return loop_mod.Sensor(ctx, lambda _line: None, lambda _line: None, who, lock)


def presence_bodies(world: World) -> list[tuple[str, str]]:
    out = []
    for name in world.spool.room_names(presence.ROOM):
        sig = envelope.parse(world.spool.read(world.spool.room_path(presence.ROOM, name)))
        out.append((sig.from_id, sig.body))
    return out


def test_an_idle_loops_timers_all_fall_on_one_tick_of_its_grid(world: World) -> None:
    s = world.session("proj")
    sensor = sensor_for(world, s)
    try:
        sensor.start()
        sensor.housekeeping()  # the sensors' first polls, made at start, schedule their next ones
        assert sensor.senses is not None
        periodic = [sensor.due["heartbeat"], sensor.due["liveness"], sensor.due["cleanup"], *sensor.senses.due.values()]
        if sensor.memo.settled:
            periodic.append(sensor.due["repair"])
        periodic = [t for t in periodic if t != float("inf")]
        assert len(periodic) >= 4
        ticks = [(t - sensor.base) / loop_mod.TICK for t in periodic]
        assert all(abs(k - round(k)) < 1e-6 and k >= 1 for k in ticks), ticks
        # The Claude process's end wakes the loop through its pidfd: no timer for it.
        assert sensor.claude_fd is not None and sensor.due["claude"] == float("inf")
    finally:
        sensor.watcher.close()
        sensor.lock.release()


def test_a_loop_whose_claude_ends_is_woken_by_the_pidfd_and_stops(world: World) -> None:
    s = world.session("proj")
    sensor = sensor_for(world, s)
    try:
        sensor.start()
        os.kill(s.pid, signal.SIGKILL)
        s.proc.wait()
        tags = sensor._sleep()  # its timers are all a tick away: only the pidfd can end this wait
        assert "wake" in tags
        sensor._claude_ended()
        assert sensor.stopping and sensor.claude_fd is None
    finally:
        sensor.watcher.close()
        sensor.lock.release()


def test_the_records_watch_names_what_changed_and_forgets_it_once_taken(tmp_path: Path) -> None:
    watcher = Watcher()
    try:
        watcher.add("records", tmp_path, named=True)
        assert watcher.take_names("records") is None  # nothing is known of before the watch
        (tmp_path / "101.json").write_text("{}")
        (tmp_path / "102.json").write_text("{}")
        assert watcher.wait(5) == {"records"}
        assert watcher.take_names("records") == {"101.json", "102.json"}
        assert watcher.take_names("records") == set()
        watcher.add("plain", tmp_path / "..")
        assert watcher.take_names("plain") is None  # not named: the caller looks at everything
    finally:
        watcher.close()


def test_a_peers_start_status_change_clear_and_end_cost_one_record_each(world: World) -> None:
    a = world.session("proj")
    watch = presence.PeerWatch(world.spool, world.home / ".claude" / "sessions")
    watch.baseline()
    b = world.session("other", name="Bea")
    name = f"{b.pid}.json"
    assert watch.update({name, f"{b.pid}.tmp", "notes.txt"}) == 1
    old = b.session_id
    b.write_record()  # a status change rewrites the record as it is
    b.write_record(session_id="1b1b1b1b-0000-4000-8000-000000000001")  # a /clear: same process
    assert watch.update({name}) == 0
    b.close()
    assert watch.update({name}) == 1
    assert presence_bodies(world) == [(old, "started"), ("1b1b1b1b-0000-4000-8000-000000000001", "ended")]
    assert a.session_id not in {sid for sid, _ in presence_bodies(world)}


def test_one_loop_a_minute_rechecks_every_record_and_finds_a_peer_killed_without_a_trace(world: World) -> None:
    a, b = world.session("proj"), world.session("proj")
    peer = world.session("other", name="Kim")
    first, second = sensor_for(world, a), sensor_for(world, b)
    try:
        first.start()
        second.start()
        os.kill(peer.pid, signal.SIGKILL)  # its record stays behind
        peer.proc.wait()
        assert peer.record_path.exists()
        first._check_peers()
        assert (peer.session_id, "ended") in presence_bodies(world)
        stamp = world.spool_root / "presence" / presence.CHECKED
        checked = stamp.stat().st_mtime_ns
        second._check_peers()  # within the minute: the other loop leaves it, on one stat
        assert stamp.stat().st_mtime_ns == checked
        assert presence.check_turn(world.spool, 60.0) is False
        assert presence.check_turn(world.spool, 60.0, now=time.time() + 61) is True
    finally:
        for sensor in (first, second):
            sensor.watcher.close()
            sensor.lock.release()


def test_a_message_that_owes_no_reheat_costs_the_disclosure_sensor_no_write(world: World) -> None:
    s = world.session("proj")
    loop = Loop(world, s)
    try:
        state = world.spool_root / "sessions" / s.session_id / "sensors.json"

        def decided(said: bool) -> Callable[[], bool]:
            return lambda: state.exists() and json.loads(state.read_text()).get("disclosure", {}).get("said") is said

        world.attend("send", "the first")
        loop.wait_for(has("the first"), "the first message")
        wait_until(decided(True), "the reheat said at the first message")
        world.attend("send", "the second")
        loop.wait_for(has("the second"), "the second message")
        wait_until(decided(False), "the decision not to say it again")
        before = state.stat()
        for n in range(3):
            world.attend("send", f"one more {n}")
            loop.wait_for(has(f"one more {n}"), "the next message")
    finally:
        assert loop.stop() == 0
    after = state.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def left_short(world: World, body: str, age: float) -> str:
    """A record in #open that no recipient was linked to: its sender was killed before the fan-out."""
    name = name_at(time.time() - age)
    sig = Signal("", "Other-alpha", "agent", "someone-else", "*", "open", "/elsewhere", body, 0.0)
    world.spool.publish(["open"], envelope.render(sig.with_id(name, time.time() - age)), name)
    return name


def test_a_repair_pass_examines_what_the_rooms_watch_told_it_and_lists_the_room_only_when_it_cannot_know(
    world: World,
) -> None:
    s = world.session("proj")
    enroll(world, s)
    sid, sp = s.session_id, world.spool
    for n in range(3):
        post(sp, "open", f"history {n}", age=60)
    memo = delivery.RepairMemo()

    def repair(told: set[str] | None) -> int:
        return delivery.repair(sp, sid, memo=memo, arrivals={"open": told}, rooms=["open"])

    repair(None)  # the watch is new: the room is listed once
    assert sessions.read_cursors(sp, sid)["open"]
    left_short(world, "not told", age=30)
    assert repair(set()) == 0  # told nothing: the room is not listed again, so this is not seen
    assert repair(None) == 1  # the queue overflowed: listed whole, and what it was not told is linked
    told = left_short(world, "told", age=30)
    assert repair({told}) == 1
    new = sp.root / "sessions" / sid / "new"
    bodies = [envelope.parse(sp.read(new / n)).body for n in maildir(world, sid, "new")]
    assert bodies == ["history 0", "history 1", "history 2", "not told", "told"]  # the history by the send
