"""A Codex thread idle in the app-server (no TTY, as an IDE hosts it) is woken by a send: the Stop
hook attend install wired starts a waiter at the turn end; the human's message lands; the waiter
queues it with `codex queue`; the app-server runs a new turn with it, once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.fake_api import Reply, Request, done
from tests.e2e.fake_codex import FakeResponses, latest_output, shell
from tests.e2e.harness import ATTEND_BIN, wait_for
from tests.e2e.hosts import AppServer, HostWorld, codex_bin, install

WAKE_DEADLINE = 90.0  # seconds: the app-server polls its queue (measured 2-10 s); a busy machine more


@pytest.fixture
def hw(tmp_path: Path) -> Iterator[HostWorld]:
    codex_bin()
    w = HostWorld(tmp_path)
    yield w
    w.close()


def test_a_codex_thread_idle_in_the_app_server_is_woken_by_a_send_once(hw: HostWorld) -> None:
    api = FakeResponses([])
    hw.codex_setup(api)
    install(hw, "codex")

    def joined(req: Request) -> Reply:
        out = latest_output(req)
        assert "joined #e2e" in out, out
        return done("Joined; idle now.")

    def woken(req: Request) -> Reply:
        return done("Woken, and read it.")

    api.script = [shell(f"{ATTEND_BIN} join e2e"), joined, woken, done("(no more)")]
    server = AppServer(hw, api)
    try:
        thread = server.start_thread()
        server.turn(thread, "join e2e, then wait")
        server.wait_count("turn/completed", 1, 60)
        # The turn end's Stop hook started the waiter; it names itself in the session's folder.
        waiter = hw.spool_root / "sessions" / thread / "waiter"
        wait_for(waiter.exists, 30, "the Codex waiter")
        hw.human_send("--to", thread, "wake up, codex: from the human")
        server.wait_count("turn/completed", 2, WAKE_DEADLINE)
        wakes = [t for t in api.user_texts() if "wake up, codex" in t]
        assert len(wakes) == 1 and "[attend] 1 message(s) from humans, not typed at your prompt:" in wakes[0], (
            api.user_texts()
        )
        assert api.consumed == 3, api.user_texts()
    finally:
        server.close()
