"""A bare ``attend reply`` answers a socket post the model was shown, even while the conduit that
posted it has not yet read the transcript's word: the model can answer within milliseconds of seeing
the post (a real run answered 20 ms after the client recorded it), before the conduit marks it seen."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from attend import layout as L
from attend.conduits import inbox_client
from tests.support import World, enroll, maildir, post, wait_until
from tests.test_inbox_socket import Setup


@pytest.fixture
def slow_word(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's conduit never reads the transcript's word (the `attend reply` child reads it)."""
    monkeypatch.setattr(inbox_client, "confirmed_in", lambda *a: False)


def test_a_bare_reply_answers_a_post_the_transcript_shows_before_its_conduit_has_read_it(
    world: World, slow_word: Any
) -> None:
    s = Setup(world)
    try:
        s.start()
        name = post(world.spool, "open", "which port does the api use?")
        wait_until(lambda: s.inbox.posts and (world.spool.root / "sessions" / s.sid / L.POSTED).exists(), "the post")
        wait_until(lambda: s.transcript.read_text(), "the client to record the post as put before the model")
        assert maildir(world, s.sid, "claimed") and not maildir(world, s.sid, "cur")  # not yet marked seen

        out = s.s.attend("reply", "--json", "8080")
        assert out.rc == 0, out.stderr
        assert json.loads(out.stdout)["re"] == L.base_name(name)
    finally:
        s.close()


def test_a_bare_reply_ignores_a_post_the_transcript_does_not_show(world: World, slow_word: Any) -> None:
    s = Setup(world, drop=1)  # the client accepts the post and never shows it
    try:
        s.start()
        post(world.spool, "open", "never shown to the model")
        wait_until(lambda: (world.spool.root / "sessions" / s.sid / L.POSTED).exists(), "the post")
        out = s.s.attend("reply", "a guess")
        assert out.rc == 1 and "nothing to reply to" in out.stderr, out.stdout + out.stderr
    finally:
        s.close()


def test_a_planted_post_record_naming_a_fifo_does_not_hang_a_reply(world: World) -> None:
    s = world.session("proj")
    enroll(world, s)
    fifo = world.tmp / "fifo"
    os.mkfifo(fifo)
    record = inbox_client.posted_record(str(fifo), 0, "x", "1796527636.M1P1Q0R1.vm")
    world.spool.write_state(record, "sessions", s.session_id, L.POSTED)
    out = s.attend("reply", "a guess")
    assert out.rc == 1 and "nothing to reply to" in out.stderr, out.stdout + out.stderr
