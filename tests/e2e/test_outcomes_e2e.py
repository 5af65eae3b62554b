"""Outcomes, the inbound rule and stable names with the real client (docs/architecture/outcomes.md):

- a session the client renames mid-run (its record's ``name`` rewritten, same pid, same session id)
  still receives a message sent to the name it had, and it reaches the model once;
- a session that holds shows its model nothing of a held message until the human accepts it (with
  `attend inbound accept`, as the human at a terminal: the verb chat's ``/accept`` calls), and then
  shows it once.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.e2e.fake_api import Reply, Request, bash, done
from tests.e2e.harness import E2EWorld, expect_ok, session_id_of, wait_for

pytestmark = pytest.mark.e2e


def record_of(e2e: E2EWorld, sid: str) -> dict[str, Any]:
    records = [json.loads(p.read_text()) for p in (e2e.claude_dir / "sessions").glob("*.json")]
    [record] = [r for r in records if r.get("sessionId") == sid]
    return record


def test_a_session_renamed_by_the_client_mid_run_still_receives_a_send_to_its_earlier_name(e2e: E2EWorld) -> None:
    out = e2e.attend("install", "--target", str(e2e.claude_dir))
    assert out.returncode == 0, out.stdout + out.stderr
    body = f"to the earlier name {uuid.uuid4().hex[:8]}"
    state: dict[str, Any] = {}

    def joined(req: Request) -> Reply:
        expect_ok(req, "attend join")
        sid = state["sid"] = session_id_of(req)
        state["first"] = record_of(e2e, sid)["name"]
        return done("Joined.")

    def renamed(req: Request) -> Reply:
        sid = state["sid"]
        state["now"] = record_of(e2e, sid)["name"]
        state["peer"] = next(
            p for p in json.loads(e2e.attend("peers", "--json").stdout)["peers"] if p["session_id"] == sid
        )
        sent = e2e.attend("send", "--json", "--to", state["first"], body)
        state["sent"] = json.loads(sent.stdout) if sent.returncode == 0 else sent.stderr
        return done("Renamed; the turn ends.")

    def heard(req: Request) -> Reply:
        return done("Read it.")

    client = e2e.start([bash("attend join e2e"), joined, renamed, heard, done("Done.")], "join", stream_input=True)
    assert client.api.wait_for_turns(2, 90), "the first prompt's turns"
    client.say("/rename e2e-renamed")  # the client's own rename: it rewrites the session record's name
    wait_for(lambda: record_of(e2e, state["sid"]).get("name") == "e2e-renamed", 60, "the client to rename")
    client.say("carry on")
    run = client.wait()

    assert run.rc == 0 and not run.timed_out and not run.api.errors, run.explain()
    assert state["first"] != state["now"] == "e2e-renamed", state
    assert state["peer"]["display"] == "e2e-renamed" and state["first"] in state["peer"]["earlier"], state["peer"]
    sent = state["sent"]
    assert isinstance(sent, dict), sent
    assert sent["to"] == state["sid"] and [r["outcome"] for r in sent["recipients"]] == ["delivered"], sent
    assert run.deliveries(body) == 1, run.explain()  # it reached the model, once


def test_a_session_that_holds_shows_nothing_until_the_human_accepts(e2e: E2EWorld) -> None:
    out = e2e.attend("install", "--target", str(e2e.claude_dir))
    assert out.returncode == 0, out.stdout + out.stderr
    body = f"held until accepted {uuid.uuid4().hex[:8]}"
    state: dict[str, Any] = {}

    def holds(req: Request) -> Reply:
        expect_ok(req, "attend join")
        state["sid"] = session_id_of(req)
        return bash("attend inbound hold --from humans")

    def held(req: Request) -> Reply:
        expect_ok(req, "attend inbound")
        state["sent"] = e2e.human_send("--to", state["sid"], body)
        return done("Nothing for me yet; the turn ends.")  # the drain runs here: it must show nothing

    def heard(req: Request) -> Reply:
        return done("Read it.")

    script = [bash("attend join e2e"), holds, held, done("Carrying on."), heard, done("Done."), done("Done.")]
    client = e2e.start(script, "join", stream_input=True)
    assert client.api.wait_for_turns(3, 90), "the first prompt's turns"
    drained = e2e.spool_root / "sessions"

    def verdict() -> str:
        sid = state.get("sid")
        path = drained / str(sid) / "drained"
        return path.read_text() if sid and path.exists() else ""

    wait_for(lambda: verdict().endswith("none"), 60, "the turn end's drain")
    assert not any(body in str(r.messages) for r in client.api.turns)  # the model saw nothing of it, held
    waiting = json.loads(e2e.attend("inbound", "--json").stdout)["waiting"]  # the human, at a terminal
    accepted = e2e.attend("inbound", "--json", "accept", state["sent"]["id"])
    assert accepted.returncode == 0, accepted.stderr
    client.say("carry on")
    wait_for(lambda: any(body in str(r.messages) for r in client.api.turns), 90, "the accepted message shown")
    run = client.wait()

    assert run.rc == 0 and not run.timed_out and not run.api.errors, run.explain()
    assert [r["outcome"] for r in state["sent"]["recipients"]] == ["held"], state["sent"]
    assert [w["id"] for w in waiting] == [state["sent"]["id"]]
    assert json.loads(accepted.stdout)["decided"] == [state["sent"]["id"]]
    assert run.deliveries(body) == 1, run.explain()  # accepted: shown once
