"""State files cannot be planted to silence delivery (issue 32, findings 3 and 8).

Any process of the user can write ``sessions/<sid>/socket`` or ``sessions/<sid>/waiter``. The waiter and
the socket conduit step aside only for a process that holds its slot of the file's lock (the evidence),
never for a number: a file naming an unrelated live process (a ``sleep``) names nobody. A number that
does not parse, 5,000 digits say, reads as absent in ``status`` and ``doctor``. The socket conduit's
pending-post record keeps a digest of the post's mark, never the mark, and its confirmation reads the
transcript on from the post's offset however much the turn wrote.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from attend import layout
from attend.conduits import inbox_client, waiter
from attend.procfs import stat_fields
from tests.support import Wait, World, drain, enroll, wait_until


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated live process of the user, as a planted file would name it."""
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    proc.kill()
    proc.wait()


def named(proc: subprocess.Popen[bytes]) -> str:
    fields = stat_fields(proc.pid)
    assert fields is not None
    return f"{proc.pid} {fields[19]}"


@pytest.fixture
def waits(world: World) -> Iterator[Callable[..., Wait]]:
    started: list[Wait] = []

    def start(s: object) -> Wait:
        w = Wait(world, s)  # type: ignore[arg-type]
        started.append(w)
        drain(world, s.session_id)  # type: ignore[attr-defined]
        wait_until(lambda: w.waiting() or w.exited(), "the waiter to be set up")
        return w

    yield start
    for w in started:
        if w.proc.poll() is None:
            w.proc.kill()
            w.proc.communicate(timeout=10)


def test_a_socket_file_naming_an_unrelated_live_process_does_not_silence_the_waiter(
    world: World, waits: Callable[..., Wait], sleeper: subprocess.Popen[bytes]
) -> None:
    s = world.session("proj")
    enroll(world, s)
    (world.spool_root / "sessions" / s.session_id / layout.SOCKET).write_text(named(sleeper))
    w = waits(s)
    assert not w.exited(), w.done()
    world.attend("send", "wake up")
    rc, _, err = w.done()
    assert rc == 2 and "  wake up" in err.splitlines(), err


def test_a_waiter_file_rewritten_to_name_an_unrelated_process_does_not_send_the_waiter_away(
    world: World, waits: Callable[..., Wait], sleeper: subprocess.Popen[bytes]
) -> None:
    s = world.session("proj")
    enroll(world, s)
    w = waits(s)
    (world.spool_root / "sessions" / s.session_id / layout.WAITER).write_text(named(sleeper))
    assert waiter.live_pid(world.spool, s.session_id, layout.WAITER) is None  # names nobody who serves
    world.attend("send", "still here?")
    rc, _, err = w.done()
    assert rc == 2 and "  still here?" in err.splitlines(), err


def test_a_codex_turn_end_is_not_talked_out_of_its_waiter_by_a_planted_waiter_file(
    world: World, sleeper: subprocess.Popen[bytes]
) -> None:
    s = world.session("proj")
    enroll(world, s)
    (world.spool_root / "sessions" / s.session_id / layout.WAITER).write_text(named(sleeper))
    assert not waiter.waiter_live(world.spool, s.session_id)


@pytest.mark.parametrize("name", [layout.SOCKET, layout.WAITER])
@pytest.mark.parametrize(
    "text",
    [
        pytest.param("9" * 5000, id="5000-digits"),
        pytest.param("١٢٣ 5", id="arabic-digits"),
        pytest.param("-1 2", id="negative"),
        pytest.param("12345678901 1", id="past-pid-max"),
        pytest.param("\x00\x00", id="nul"),
    ],
)
def test_a_number_in_a_state_file_that_does_not_parse_reads_as_absent_in_status_and_doctor(
    world: World, name: str, text: str
) -> None:
    s = world.session("proj")
    enroll(world, s)
    (world.spool_root / "sessions" / s.session_id / name).write_text(text)
    r = s.attend("status", "--json")
    assert r.rc == 0, r.stderr
    conduits = json.loads(r.stdout)["conduits"]
    assert not conduits["socket"] and not conduits["waiter"]
    r = s.attend("doctor", "--json")
    assert "Traceback" not in r.stderr and "ValueError" not in r.stderr, r.stderr
    json.loads(r.stdout)


@pytest.mark.parametrize("text", [pytest.param("9" * 5000, id="5000-digits"), pytest.param("²", id="superscript")])
def test_every_counter_read_from_a_state_file_is_bounded_before_conversion(text: str) -> None:
    assert layout.small_int(text) == 0
    assert layout.small_int(" 42\n") == 42


# ---------------------------------------------------------------------- the socket conduit's word


def test_the_pending_post_record_keeps_a_digest_of_the_mark_never_the_mark(tmp_path: Path) -> None:
    from attend.conduits import inbox_socket

    mark = inbox_socket.new_mark()
    assert len(mark) == 32  # 128 random bits: no digest is worth inverting
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(b"")
    record = inbox_client.posted_record(str(transcript), 0, mark, "1796527636.M1P1Q0R1.vm").decode()
    assert mark not in record
    assert inbox_client.shown_post(record) is None
    shown = {"type": "user", "message": {"role": "user", "content": f"{inbox_socket.HEADER} (post {mark})\nhi"}}
    transcript.write_text(json.dumps(shown) + "\n")
    assert inbox_client.shown_post(record) == "1796527636.M1P1Q0R1.vm"


def test_a_post_is_confirmed_past_a_turn_that_wrote_more_than_16_mib_and_read_on_not_again(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(b'{"type":"assistant"}\n')
    scan = inbox_client.Scan(str(transcript), transcript.stat().st_size)
    mark = "ab" * 16
    big = json.dumps({"type": "assistant", "message": {"content": "x" * (1 << 20)}}) + "\n"
    with transcript.open("a") as f:
        for _ in range(20):  # 20 MiB of the turn's own entries past the post's offset
            f.write(big)
    assert not inbox_client.confirmed_in(scan, mark)
    assert scan.pos == transcript.stat().st_size  # it read them once; the next look starts here
    with transcript.open("a") as f:
        f.write(json.dumps({"type": "user", "message": {"role": "user", "content": f"(post {mark})"}}) + "\n")
    assert inbox_client.confirmed_in(scan, mark)


def test_a_line_longer_than_the_line_bound_is_passed_over_and_the_next_one_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(inbox_client, "LINE_MAX", 1000)
    monkeypatch.setattr(inbox_client, "CHUNK", 256)
    mark = "cd" * 16
    transcript = tmp_path / "t.jsonl"
    post = json.dumps({"type": "user", "message": {"role": "user", "content": f"(post {mark})"}})
    transcript.write_text("y" * 5000 + f" (post {mark})\n" + post + "\n")
    scan = inbox_client.Scan(str(transcript), 0)
    assert scan.lines() == [post.encode()]
    assert os.path.getsize(transcript) == scan.pos


def test_a_post_whose_record_is_the_transcripts_last_line_not_yet_ended_is_confirmed(tmp_path: Path) -> None:
    mark = "ef" * 16
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": f"(post {mark})"}}))
    assert inbox_client.confirmed_in(inbox_client.Scan(str(transcript), 0), mark)
