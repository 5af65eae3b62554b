"""peers, status's spool size, the inbox receipt (--status) and the inbox filters."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
from typing import Any
from zoneinfo import ZoneInfo

import anyio
import pytest
from mcp import Client

from tests.support import ATTEND, T1, World, as_codex, post, server_as, structured


def test_peers_lists_live_sessions_with_display_project_channels_and_conduits(world: World) -> None:
    a = world.session("alpha-proj", name="Hana")
    b = world.session("beta-proj")
    assert a.attend("join", "ops").rc == 0
    out = b.attend("peers", "--json")
    assert out.rc == 0, out.stderr
    peers = {p["session_id"]: p for p in json.loads(out.stdout)["peers"]}
    assert set(peers) == {a.session_id, b.session_id}
    assert peers[a.session_id]["display"] == "Hana"  # the client's name for it, as its record gives it
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


# ---------------------------------------------------------------------- peers and status without click

CLICK_MAIN = "import sys; from attend.cli.app import main; sys.argv[0] = 'attend'; main()"


@pytest.mark.parametrize(
    "args",
    [
        ["peers"],
        ["peers", "--json"],
        ["peers", "--utc"],
        ["peers", "--json", "--utc"],
        ["status"],
        ["status", "--json"],
    ],
)
def test_peers_and_status_answer_alike_without_click_and_through_it(world: World, args: list[str]) -> None:
    a = world.session("alpha-proj", name="Hana")
    assert a.attend("join", "ops").rc == 0
    probe = "import runpy, sys; sys.argv = [sys.argv[1], *sys.argv[2:]]\n"
    probe += "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\nexcept SystemExit: pass\n"
    probe += "print('click' in sys.modules, file=sys.stderr)"
    for who in (a, None):  # a session asks, and the human
        run = (lambda argv: a.run(argv)) if who else (lambda argv: _human(world, argv))
        fast = run([sys.executable, "-c", probe, ATTEND, *args])
        slow = run([sys.executable, "-c", CLICK_MAIN, *args])
        assert fast.stderr.strip().splitlines()[-1] == "False", fast.stderr  # the fast path: no click
        assert _normal(fast.stdout) == _normal(slow.stdout)
        assert "Hana" in fast.stdout or (args[0] == "status" and who is None)  # a human's status: its own


def test_peers_with_anything_more_is_left_to_click(world: World) -> None:
    out = world.attend("peers", "--jsn")
    assert out.returncode == 2 and "No such option" in out.stderr
    helped = world.attend("peers", "--help")
    assert helped.returncode == 0 and "--json" in helped.stdout


def _human(world: World, argv: list[str]) -> Any:
    out = subprocess.run(argv, capture_output=True, text=True, env=world.env, cwd=world.project("proj"))
    assert out.returncode == 0, out.stderr
    return out


def _normal(text: str) -> str:
    """Times move on between the two runs (an age, a heartbeat): compare the rest."""
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ|\d+(\.\d+)?", "<n>", text)


def test_peers_shows_a_humans_time_in_the_readers_zone(world: World) -> None:
    assert world.attend("send", "here I am").returncode == 0
    doc = json.loads(world.attend("peers", "--json").stdout)
    at = dt.datetime.fromisoformat(doc["humans"][0]["active_at"])
    for tz, name in (("Asia/Kolkata", "IST"), ("America/New_York", "E")):
        shown = world.attend("peers", env={"TZ": tz}).stdout
        local = at.astimezone(ZoneInfo(tz))
        assert f"active {local:%Y-%m-%d %H:%M:%S} {name}" in shown, shown


def test_peers_utc_shows_a_humans_time_in_utc_as_the_readme_says(world: World) -> None:
    assert world.attend("send", "here I am").returncode == 0
    at = dt.datetime.fromisoformat(json.loads(world.attend("peers", "--json").stdout)["humans"][0]["active_at"])
    shown = world.attend("peers", "--utc", env={"TZ": "Asia/Kolkata"})
    assert shown.returncode == 0, shown.stderr
    assert f"active {at.astimezone(dt.UTC):%Y-%m-%d %H:%M:%S} UTC" in shown.stdout, shown.stdout


def test_the_inbox_names_the_client_an_agent_sender_runs_in(world: World) -> None:
    from attend.domain.sessions import sessions
    from attend.verbs import send as send_verb

    hana = world.session("api", name="Hana")
    sessions.enroll(world.spool, world.context(hana).who(), "run")
    send_verb.run(world.context(), send_verb.SendRequest("from the human", to="fixture-human"))  # now addressable
    send_verb.run(world.context(hana), send_verb.SendRequest("from claude", to="fixture-human"))
    out = world.cli("inbox", "--all")
    assert out.returncode == 0, out.stderr
    assert "Hana (agent, claude)" in out.stdout, out.stdout


def test_the_inbox_names_a_direct_messages_recipients_as_peers_does_and_keeps_their_ids_in_json(
    world: World,
) -> None:
    hana = world.session("api", name="Hana")
    other = world.session("web")  # no client name: its Persona-ordinal
    for s in (hana, other):
        assert s.attend("join", "ops").rc == 0
    peers = {p["session_id"]: p["display"] for p in json.loads(world.attend("peers", "--json").stdout)["peers"]}
    assert peers[hana.session_id] == "Hana"
    both = f"{hana.session_id},{other.session_id}"
    assert world.attend("send", "--to", both, "to the two of you").returncode == 0
    assert world.attend("send", "--channel", "ops", "to the channel").returncode == 0
    out = hana.attend("inbox")
    assert out.rc == 0, out.stderr
    assert f"to:      Hana,{peers[other.session_id]}" in out.stdout, out.stdout
    assert hana.session_id not in out.stdout and other.session_id not in out.stdout, out.stdout
    assert "to:      #ops" in out.stdout, out.stdout
    doc = json.loads(hana.attend("inbox", "--json").stdout)
    direct = next(m for m in doc["messages"] if m["body"] == "to the two of you")
    assert direct["to"] == both and direct["to_name"] == f"Hana,{peers[other.session_id]}"
    # One message read by id names them too, and so does the sender's --sent listing.
    one = other.attend("inbox", direct["id"])
    assert f"to:      Hana,{peers[other.session_id]}" in one.stdout, one.stdout
    sent = world.attend("inbox", "--sent")
    assert f"to:      Hana,{peers[other.session_id]}" in sent.stdout, sent.stdout


def test_status_names_the_client_a_session_runs_in_on_the_cli_and_in_the_mcp_result(world: World) -> None:
    hana = world.session("api", name="Hana")
    assert json.loads(hana.attend("status", "--json").stdout)["client"] == "claude"
    assert re.search(r"^client +claude$", hana.attend("status").stdout, re.M), hana.attend("status").stdout

    async def mcp_status() -> dict[str, Any]:
        async with Client(server_as(world, hana), mode="legacy") as client:
            return structured(await client.call_tool("status", {}))

    assert anyio.run(mcp_status)["client"] == "claude"
    codex = as_codex(world, [T1], [ATTEND, "status", "--json"], {"CODEX_THREAD_ID": T1})
    assert codex.returncode == 0, codex.stderr
    assert json.loads(codex.stdout)["client"] == "codex"
    human = world.attend("status", "--json")
    assert human.returncode == 0, human.stderr
    assert json.loads(human.stdout)["client"] is None  # a human runs in no agent client
