"""Both inbound conduits together: the sensor loop and the Stop-hook drain race for the same
deliveries, and the rename claim makes exactly one of them show each message; a conduit killed
between claim and show leaves the entry in claimed/, and the next run of either shows it.

The loop and drain helpers (support.Loop, drain, maildir, ...) live in tests/support.py.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from attend.layout import LINK_BOUND, name_time
from tests.support import ATTEND, DEADLINE, World, drain, enroll, maildir, payload, stopped, wait_until


def drained_count(stdout: str) -> int:
    if not stdout.strip():
        return 0
    reason = json.loads(stdout)["reason"]
    m = re.match(r"\[attend\] (\d+) message\(s\) ", reason)
    return int(m.group(1)) if m else 0


def shown_count(lines: list[str]) -> int:
    """Messages a loop showed: one per message (its first chunk), or N per digest or fold line."""
    n = 0
    for line in lines:
        if (m := re.search(r"\] (\d+) (?:new messages: |messages from .* folded \(sending fast\))", line)) is not None:
            n += int(m.group(1))
        elif "] message from " in line and not re.search(r"\] message from .*? \((?:[2-9])/\d\): ", line):
            n += 1
    return n


# ---------------------------------------------------------------------- crash points


def test_a_drain_killed_between_claim_and_show_leaves_the_message_for_the_next_drain(world: World) -> None:
    s = world.session("proj")
    enroll(world, s)
    world.attend("send", "survive the crash")
    stop = world.tmp / "stop.json"
    stop.write_text(payload(s.session_id))
    out = world.tmp / "drain.out"
    # The session's own Stop hook (a child of its Claude), stopped by the seam after its claim.
    hook = f'exec "{ATTEND}" inbox --drain --format hook < "{stop}"'
    pid = s.spawn(["sh", "-c", hook], out, env={"ATTEND_PAUSE_AT": "claimed"})
    wait_until(lambda: stopped(pid), "the drain to stop after its claim")
    assert len(maildir(world, s.session_id, "claimed")) == 1
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not stopped(pid), "the drain to die")
    assert out.read_text() == ""  # killed before it showed anything

    again = drain(world, s.session_id)
    assert "survive the crash" in json.loads(again.stdout)["reason"]
    assert maildir(world, s.session_id, "claimed") == []
    assert len(maildir(world, s.session_id, "cur")) == 1


def test_a_loop_killed_between_claim_and_show_shows_the_message_when_it_restarts(world: World, loops) -> None:
    s = world.session("proj")
    first = loops(s, env={"ATTEND_PAUSE_AT": "claimed"})
    world.attend("send", "held in claimed")
    wait_until(lambda: stopped(first.pid), "the loop to stop after its claim")
    first.kill()
    assert len(maildir(world, s.session_id, "claimed")) == 1
    assert not any("held in claimed" in line for line in first.lines())

    second = loops(s)
    second.wait_for(lambda lines: any("held in claimed" in line for line in lines), "the recovered message")
    # Printed first, then marked seen: the rename out of claimed/ follows the line.
    wait_until(lambda: maildir(world, s.session_id, "claimed") == [], "the shown message to leave claimed/")


def test_a_governor_save_that_fails_after_the_line_never_shows_the_message_again(world: World, loops) -> None:
    s = world.session("proj")
    loop = loops(s)
    # A folder where the governor's state file goes: every save of it fails, after the line is out.
    planted = world.spool_root / "sessions" / s.session_id / "governor"
    planted.mkdir()
    (planted / "keep").write_text("")
    world.attend("send", "shown once")
    loop.wait_for(lambda lines: any("shown once" in line for line in lines), "the message")
    wait_until(lambda: maildir(world, s.session_id, "claimed") == [], "the shown message to be marked seen")
    assert len(maildir(world, s.session_id, "cur")) == 1
    world.attend("send", "and the next")
    loop.wait_for(lambda lines: any("and the next" in line for line in lines), "the next message")
    assert sum("shown once" in line for line in loop.lines()) == 1, loop.said()
    assert loop.stderr().count("attend run: governor failed") == 1, loop.stderr()


def test_a_drain_shows_what_a_killed_loop_left_in_claimed(world: World, loops) -> None:
    s = world.session("proj")
    loop = loops(s, env={"ATTEND_PAUSE_AT": "claimed"})
    world.attend("send", "the drain picks this up")
    wait_until(lambda: stopped(loop.pid), "the loop to stop after its claim")
    loop.kill()
    out = drain(world, s.session_id)
    assert "the drain picks this up" in json.loads(out.stdout)["reason"]


def test_a_sender_killed_mid_fan_out_is_repaired_by_the_loop(world: World, loops) -> None:
    a, b = world.session("proj"), world.session("other")
    for s in (a, b):
        loops(s).stop()  # enrolled by run, then down
    proc = subprocess.Popen(
        [ATTEND, "send", "half delivered"],
        env={**world.env, "ATTEND_PAUSE_AT": "fanout-partial"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_until(lambda: stopped(proc.pid), "the sender to stop after its first link")
    proc.kill()
    proc.wait()
    holding = [s for s in (a, b) if maildir(world, s.session_id, "new")]
    assert len(holding) == 1, "the sender stopped after exactly one recipient's link"
    for s in (a, b):
        loop = loops(s)
        loop.wait_for(lambda lines: any("half delivered" in line for line in lines), "the repaired message")
        assert loop.stop() == 0


def _cursor(world: World, sid: str, room: str = "open") -> str:
    try:
        return str(json.loads((world.spool_root / "sessions" / sid / "repair.json").read_text()).get(room, ""))
    except (OSError, ValueError):
        return ""


@pytest.mark.parametrize("point", ["room-record", "fanout-partial"])
def test_a_fan_out_interrupted_after_the_loops_settled_is_linked_at_their_next_repair_pass(
    world: World, loops, point: str
) -> None:
    # Repair is incremental: a room whose new/ has not changed since a pass read it whole is skipped
    # on one stat. A record a dead sender left in the room changes it, so the next pass still links it.
    a, b = world.session("proj"), world.session("other")
    out = world.attend("send", "--json", "settled first")
    first = json.loads(out.stdout)["id"]
    running = [loops(s) for s in (a, b)]
    for s in (a, b):
        # Each loop's cursor passed every record: its passes now skip #open until it changes.
        wait_until(lambda s=s: _cursor(world, s.session_id) >= first, "the repair cursors to pass the first record")
    sender = _stopped_sender(world, point, "send", "left short")
    sender.kill()
    sender.wait()
    for loop in running:
        loop.wait_for(lambda lines: any("left short" in line for line in lines), "the repaired message")
        assert loop.stop() == 0


def _stopped_sender(world: World, point: str, *argv: str) -> subprocess.Popen[bytes]:
    """``attend`` run by the human, stopped at the crash-window ``point`` (SIGSTOP, by the seam)."""
    proc = subprocess.Popen(
        [ATTEND, *argv],
        env={**world.env, "ATTEND_PAUSE_AT": point},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_until(lambda: stopped(proc.pid), f"the sender to stop at {point}")
    return proc


@pytest.mark.parametrize("stall", ["within the bound", "past the bound"])
def test_a_record_named_before_a_repaired_one_and_linked_after_it_is_still_repaired(
    world: World, loops, stall: str
) -> None:
    b = world.session("proj")
    loops(b).stop()  # enrolled by run, then down: repair runs only when we ask
    room = world.spool_root / "rooms" / "open"
    # A takes its name, writes its record and stalls before the link; later, killed before fan-out.
    slow = _stopped_sender(world, "tmp-written,room-record", "send", "named first, linked late")
    [first_name] = os.listdir(room / "tmp")
    assert world.attend("send", "named second, linked first").returncode == 0
    assert "repair: restored" in b.attend("doctor").stdout  # a repair pass over the room, past the second
    if stall == "past the bound":
        wait_until(lambda: time.time() > name_time(first_name) + LINK_BOUND, "the stalled name to pass the bound")
    os.kill(slow.pid, signal.SIGCONT)

    def linked() -> list[str]:
        return [n for n in os.listdir(room / "new") if b"named first" in (room / "new" / n).read_bytes()]

    wait_until(lambda: linked() and stopped(slow.pid), "the sender to link its record and stop before fan-out")
    slow.kill()
    slow.wait()
    [name] = linked()
    assert (name == first_name) == (stall == "within the bound")  # past the bound: re-named, never linked late
    assert not any(
        "named first" in (world.spool_root / "sessions" / b.session_id / "new" / n).read_text()
        for n in maildir(world, b.session_id, "new")
    )
    loop = loops(b)
    loop.wait_for(lambda lines: any("named first, linked late" in line for line in lines), "the repaired message")
    assert loop.stop() == 0


def test_a_record_durable_in_the_old_direct_room_is_delivered_after_a_clear(world: World, loops) -> None:
    b = world.session("proj")
    loops(b).stop()  # enrolled by run, then down: no repair pass runs until the next loop
    old = b.session_id
    sender = _stopped_sender(world, "room-record", "send", "--to", old, "sent before the clear")
    sender.kill()  # durable in d-<old>, never fanned out
    sender.wait()
    assert maildir(world, old, "new") == []
    b.write_record(session_id=old + "-cleared")  # /clear: same Claude process, new id
    loop = loops(b)
    loop.wait_for(lambda lines: any("sent before the clear" in line for line in lines), "the repaired message")
    assert loop.stop() == 0


# ---------------------------------------------------------------------- exactly once


def _sender_script(count: int, tag: str) -> str:
    return (
        "from attend.domain.sessions.context import Context\n"
        "from attend.verbs import send\n"
        "ctx = Context.default()\n"
        f"for i in range({count}):\n"
        f"    send.run(ctx, send.SendRequest(f'{tag}-{{i}}'))\n"
    )


def _race(world: World, loops, senders: int, per_sender: int, sessions: int) -> None:
    group = [world.session(f"p{i}") for i in range(sessions)]
    running = [loops(s) for s in group]
    sids = [s.session_id for s in group]
    drained: dict[str, list[str]] = {sid: [] for sid in sids}
    done = threading.Event()

    def drainer() -> None:
        i = 0
        while not done.is_set():
            sid = sids[i % len(sids)]
            out = drain(world, sid)
            assert out.returncode == 0, out.stderr
            if out.stdout.strip():
                drained[sid].append(out.stdout)
            i += 1

    threads = [threading.Thread(target=drainer, daemon=True) for _ in range(2)]
    for t in threads:
        t.start()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _sender_script(per_sender, f"s{k}")],
            env=world.env,
            cwd=str(world.project("senders")),
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(senders)
    ]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    total = senders * per_sender
    for sid in sids:
        wait_until(lambda sid=sid: len(maildir(world, sid, "cur")) == total, f"every message seen by {sid}", 300)
    done.set()
    for t in threads:
        t.join(DEADLINE)
    by_conduit = [0, 0]
    for loop, sid in zip(running, sids, strict=True):
        assert loop.stop() == 0
        assert maildir(world, sid, "new") == [] and maildir(world, sid, "claimed") == []
        by_loop = shown_count(loop.lines())
        by_drain = sum(drained_count(o) for o in drained[sid])
        assert by_loop + by_drain == total, (sid, by_loop, by_drain)
        by_conduit[0] += by_loop
        by_conduit[1] += by_drain
        # The bodies each conduit spelled out never repeat.
        bodies = [m.group(1) for line in loop.messages() if (m := re.search(r": (s\d+-\d+)", line))]
        for o in drained[sid]:
            bodies += re.findall(r"\n(s\d+-\d+)\n", json.loads(o)["reason"] + "\n")
        assert len(bodies) == len(set(bodies))
    assert all(by_conduit), f"both conduits should have raced (loop, drain): {by_conduit}"


@pytest.mark.slow  # a stress run: the full suite (CI) has it, the developer loop leaves it out
def test_loops_and_drains_racing_show_every_message_exactly_once(world: World, loops) -> None:
    _race(world, loops, senders=20, per_sender=50, sessions=5)


@pytest.mark.slow
def test_loops_and_drains_racing_show_every_message_exactly_once_at_full_size(world: World, loops) -> None:
    _race(world, loops, senders=20, per_sender=200, sessions=5)
