"""peers, status's spool size, the inbox receipt (--status) and the inbox filters."""

from __future__ import annotations

import json

from tests.support import World, post


def test_peers_lists_live_sessions_with_display_project_channels_and_conduits(world: World) -> None:
    a = world.session("alpha-proj", name="Hana")
    b = world.session("beta-proj")
    assert a.attend("join", "ops").rc == 0
    out = b.attend("peers", "--json")
    assert out.rc == 0, out.stderr
    peers = {p["session_id"]: p for p in json.loads(out.stdout)["peers"]}
    assert set(peers) == {a.session_id, b.session_id}
    assert peers[a.session_id]["display"] == "Hana-alpha"
    assert peers[a.session_id]["channels"] == ["#ops"]
    assert peers[a.session_id]["project"] == str(a.cwd)
    assert peers[a.session_id]["status"] == "idle"
    assert peers[b.session_id]["self"] is True and peers[a.session_id]["self"] is False
    assert peers[a.session_id]["sensor"] is False and peers[a.session_id]["mcp"] is False
    b.close()
    after = json.loads(world.attend("peers", "--json").stdout)
    assert [p["session_id"] for p in after["peers"]] == [a.session_id]


def test_status_answers_without_walking_the_spool_for_its_size(world: World) -> None:
    # A walk of every file made status as slow as the spool is large (issue 15); the size figure it
    # fed is gone: du, or `attend cleanup --dry-run`, measure the spool.
    s = world.session("proj")
    post(world.spool, "open", "x" * 1000)
    out = s.attend("status", "--json")
    assert out.rc == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["spool"] == str(world.spool_root)
    assert "spool_bytes" not in doc and "spool_files" not in doc


def test_the_receipt_shows_each_recipient_delivered_claimed_or_seen(world: World) -> None:
    a = world.session("proj")
    b = world.session("proj")
    c = world.session("proj")
    for s in (a, b, c):
        assert s.attend("join", "ops").rc == 0
    msg = json.loads(a.attend("send", "--channel", "ops", "--json", "status check").stdout)["id"]
    spool = world.spool
    assert spool.claim_all(b.session_id, [msg])
    assert spool.claim_all(c.session_id, [msg])
    spool.mark_seen(c.session_id, [msg])
    out = a.attend("inbox", msg, "--status", "--json")
    assert out.rc == 0, out.stderr
    receipt = json.loads(out.stdout)["receipt"]
    states = {r["session_id"]: r["state"] for r in receipt["recipients"]}
    assert states == {b.session_id: "claimed", c.session_id: "seen"}
    text = a.attend("inbox", msg, "--status")
    assert text.stdout.splitlines()[0] == f"{msg} in #ops: 0 delivered, 1 claimed, 1 seen"
    d = world.session("proj")
    assert d.attend("join", "ops").rc == 0
    msg2 = json.loads(a.attend("send", "--channel", "ops", "--json", "second").stdout)["id"]
    states2 = {
        r["session_id"]: r["state"]
        for r in json.loads(a.attend("inbox", msg2, "--status", "--json").stdout)["receipt"]["recipients"]
    }
    assert states2[d.session_id] == "delivered"
    assert world.attend("inbox", "--status").returncode == 2


def test_inbox_filters_by_sender_room_body_and_age(world: World) -> None:
    spool = world.spool
    post(spool, "open", "deploy finished", sender="sid-one", age=3 * 3600)
    post(spool, "open", "lunch?", sender="sid-two", age=60)
    post(spool, "open", "Deploy started", sender="sid-two", age=30)
    post(spool, "@ops", "ops only deploy", sender="sid-one", age=10)

    def bodies(*args: str) -> list[str]:
        out = world.attend("inbox", "--json", *args)
        assert out.returncode == 0, out.stderr
        return [m["body"] for m in json.loads(out.stdout)["messages"]]

    assert bodies("--grep", "deploy") == ["Deploy started", "deploy finished"]
    assert bodies("--grep", "^deploy (started|finished)$") == ["Deploy started", "deploy finished"]
    assert bodies("--grep", "[unclosed") == []  # not a regex: matched literally
    assert bodies("--from", "sid-one") == ["deploy finished"]
    assert bodies("--from", "other") == ["Deploy started", "lunch?", "deploy finished"]  # display-name prefix
    assert bodies("--since", "2h") == ["Deploy started", "lunch?"]
    assert bodies("--room", "#ops") == ["ops only deploy"]
    assert bodies("--room", "ops", "--grep", "deploy", "--since", "1m") == ["ops only deploy"]
    bad = world.attend("inbox", "--since", "yesterday-ish")
    assert bad.returncode == 2 and "--since" in bad.stderr
