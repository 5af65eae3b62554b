"""One name per session, with the real client: the name Claude Code gives a session in its record (the
one its own `/peers` and status line show) is the name `attend peers` prints, in its table and its
JSON, and `send --to` accepts, and the message sent to it by that name reaches the model, once (by
whichever conduit serves)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.e2e.fake_api import Reply, Request, bash, done
from tests.e2e.harness import E2EWorld, expect_ok, session_id_of

pytestmark = pytest.mark.e2e


def test_the_name_in_the_session_record_is_the_one_peers_prints_and_send_to_accepts(e2e: E2EWorld) -> None:
    out = e2e.attend("install", "--target", str(e2e.claude_dir))
    assert out.returncode == 0, out.stdout + out.stderr
    body = f"by name {uuid.uuid4().hex[:8]}"
    state: dict[str, Any] = {}

    def named(req: Request) -> Reply:
        expect_ok(req, "attend join")
        sid = state["sid"] = session_id_of(req)
        records = [json.loads(p.read_text()) for p in (e2e.claude_dir / "sessions").glob("*.json")]
        [record] = [r for r in records if r.get("sessionId") == sid]
        state["record"] = record
        peers = json.loads(e2e.attend("peers", "--json").stdout)["peers"]
        state["display"] = next(p["display"] for p in peers if p["session_id"] == sid)
        state["peers_text"] = e2e.attend("peers").stdout  # the table a person reads
        sent = e2e.attend("send", "--json", "--to", str(record.get("name")), body)
        state["sent"] = json.loads(sent.stdout) if sent.returncode == 0 else sent.stderr
        return done("Joined; the turn ends.")

    def heard(req: Request) -> Reply:
        return done("Read it.")

    run = e2e.claude([bash("attend join e2e"), named, heard], timeout=90)

    assert run.rc == 0 and not run.timed_out and not run.api.errors, run.explain()
    record = state["record"]
    assert record.get("name") and record.get("nameSource") == "derived", record
    assert state["display"] == record["name"], state
    lines = state["peers_text"].splitlines()
    [row] = [line.split() for line in lines if line.split()[:1] == [record["name"]]]
    assert "#e2e" in row and "(not" not in row, lines  # its row, by that name, enrolled in the channel
    assert not [line for line in lines if f"{record['name']}-" in line], lines  # no second name beside it
    sent = state["sent"]
    assert isinstance(sent, dict), sent
    assert (sent["to"], sent["to_name"], sent["delivered"]) == (state["sid"], record["name"], 1), sent
    assert run.deliveries(body) == 1, run.explain()  # it reached the model, once
