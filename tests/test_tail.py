"""tail: records print as they land (event-driven), in the rooms the caller receives or in every
room with --all, including rooms that appear while tailing."""

from __future__ import annotations

import json
import select
import subprocess

from attend.domain.messages import channels
from tests.support import ATTEND, World, post


def start_tail(world: World, *args: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [ATTEND, "tail", *args],
        env=world.env,
        cwd=str(world.project("proj")),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    ready, _, _ = select.select([proc.stderr], [], [], 30)
    assert ready, "tail never said it was watching"
    assert "tailing" in proc.stderr.readline()
    return proc


def finish(proc: subprocess.Popen[str]) -> list[str]:
    out, _ = proc.communicate(timeout=30)
    return out.splitlines()


def test_tail_prints_new_records_in_the_callers_rooms_as_they_land(world: World) -> None:
    post(world.spool, "open", "before the tail started", age=1)
    proc = start_tail(world, "--count", "2")
    try:
        post(world.spool, "@elsewhere", "a channel the human is not in")
        post(world.spool, "open", "hello everyone\nsecond line")
        post(world.spool, "open", "and again")
        lines = finish(proc)
    finally:
        proc.kill()
    assert [line.split()[1:] for line in lines] == [
        ["#open", "Other-alpha", "hello", "everyone", "⏎", "second", "line"],
        ["#open", "Other-alpha", "and", "again"],
    ]


def test_tail_all_follows_rooms_that_appear_while_tailing(world: World) -> None:
    world.spool.make_dir("rooms")
    proc = start_tail(world, "--all", "--count", "1", "--json")
    try:
        post(world.spool, "@brand-new", "first in a new room")
        lines = finish(proc)
    finally:
        proc.kill()
    record = json.loads(lines[0])
    assert record["room"] == "@brand-new" and record["body"] == "first in a new room"


def test_tail_covers_the_channels_a_human_joined(world: World) -> None:
    channels.add_member(world.spool, "ops", "fixture-human", "human")
    proc = start_tail(world, "--count", "1")
    try:
        post(world.spool, "@ops", "ops news")
        lines = finish(proc)
    finally:
        proc.kill()
    assert lines[0].split()[1:] == ["#ops", "Other-alpha", "ops", "news"]
