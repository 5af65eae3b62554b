"""Per-recipient outcomes and the inbound rule (docs/architecture/outcomes.md): every outcome through
the CLI and MCP, hold / accept / decline / refuse, all refused (exit 1, nothing written), the held
message shown exactly once after accept, and no rule settable by another session."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from mcp import Client

from attend.domain.core import outcomes
from attend.domain.messages import addressing
from attend.testing.standin import StandIn
from attend.verbs import inbound as inbound_verb
from tests.support import (
    Loop,
    World,
    drain,
    error_text,
    join_channel,
    maildir,
    server_as,
    structured,
    wait_until,
)


def name_of(world: World, s: StandIn) -> str:
    return addressing.session_names(world.spool, world.context(s).sessions_dir)[s.session_id]


def ran(out: Any) -> tuple[int, str, str]:
    """A stand-in's (rc) or the human's (returncode) command, alike."""
    return (out.rc if hasattr(out, "rc") else out.returncode), out.stdout, out.stderr


def send_json(s: StandIn | World, *args: str) -> dict[str, Any]:
    rc, stdout, stderr = ran(s.attend("send", "--json", *args))
    assert rc == 0, stderr
    return json.loads(stdout)


def outcomes_of(doc: dict[str, Any]) -> dict[str, str]:
    return {r["id"]: r["outcome"] for r in doc["recipients"]}


def inbound(s: StandIn | World, *args: str) -> dict[str, Any]:
    rc, stdout, stderr = ran(s.attend("inbound", "--json", *args))
    assert rc == 0, stderr
    return json.loads(stdout)


@pytest.fixture
def three(world: World) -> tuple[StandIn, StandIn, StandIn]:
    a, b, c = world.session("pa"), world.session("pb"), world.session("pc")
    for s in (a, b, c):
        assert s.attend("join", "crew").rc == 0
    return a, b, c


# ---------------------------------------------------------------------- every outcome, through the CLI


def test_send_json_lists_each_recipient_with_its_outcome(world: World, three: tuple[StandIn, ...]) -> None:
    a, b, c = three
    d = world.session("pd")
    assert d.attend("join", "crew").rc == 0
    inbound(b, "hold")
    inbound(c, "refuse", "--from", "local")
    assert d.attend("mute", name_of(world, a)).rc == 0
    e = world.session("pe")
    assert e.attend("join", "crew").rc == 0
    e.close()  # enrolled, not running: parked
    doc = send_json(a, "--channel", "crew", "hello crew")
    assert outcomes_of(doc) == {
        b.session_id: "held",
        c.session_id: "refused",
        d.session_id: "muted",
        e.session_id: "parked",
    }
    assert {r["name"] for r in doc["recipients"]} == {name_of(world, s) for s in (b, c, d, e)}
    assert all(r["kind"] == "agent" for r in doc["recipients"])
    # where each now stands: held out of new/, refused nowhere, muted and parked linked
    assert doc["id"] in maildir(world, b.session_id, "held") and doc["id"] not in maildir(world, b.session_id, "new")
    assert world.spool.delivery_state(c.session_id, doc["id"]) is None
    assert doc["id"] in maildir(world, d.session_id, "new") and doc["id"] in maildir(world, e.session_id, "new")


def test_delivered_to_a_live_session_and_to_a_human(world: World, three: tuple[StandIn, ...]) -> None:
    a, b, _c = three
    assert world.attend("inbox").returncode == 0  # the human used the bus: a mailbox, and recent
    doc = send_json(a, "--to", f"{b.session_id},fixture-human", "hi both")
    assert outcomes_of(doc) == {b.session_id: "delivered", "fixture-human": "delivered"}
    assert [r["kind"] for r in doc["recipients"]] == ["agent", "human"]


def test_throttled_when_the_recipient_folds_the_sender_now(world: World, three: tuple[StandIn, ...]) -> None:
    a, b, _c = three
    world.spool.touch("sessions", a.session_id, "folded-by", b.session_id)  # what b's governor notes on a fold
    doc = send_json(a, "--to", b.session_id, "one more")
    assert outcomes_of(doc) == {b.session_id: "throttled"}
    assert doc["id"] in maildir(world, b.session_id, "new")  # kept: it shows in a digest once a slows


def test_the_human_line_counts_by_outcome_and_names_those_not_delivered(
    world: World, three: tuple[StandIn, ...]
) -> None:
    a, b, _c = three
    inbound(b, "hold")
    out = a.attend("send", "--channel", "crew", "hello")
    assert out.rc == 0
    line = out.stdout.strip()
    assert "\n" not in line
    assert line.endswith(f"(2 recipients: 1 delivered, 1 held ({name_of(world, b)}))"), line


def test_all_refused_exits_1_with_one_line_and_writes_nothing(world: World, three: tuple[StandIn, ...]) -> None:
    a, b, _c = three
    inbound(b, "refuse")
    before = world.spool.room_names(f"d-{b.session_id}")
    out = a.attend("send", "--to", b.session_id, "anyone?")
    assert out.rc == 1 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and "refuses" in out.stderr and "nothing was written" in out.stderr
    assert world.spool.room_names(f"d-{b.session_id}") == before
    assert world.spool.listing(b.session_id, "new") == [] and maildir(world, b.session_id, "held") == []


def test_a_refused_direct_room_among_others_is_not_written(world: World, three: tuple[StandIn, ...]) -> None:
    a, b, c = three
    inbound(b, "refuse")
    doc = send_json(a, "--to", f"{b.session_id},{c.session_id}", "to two")
    assert outcomes_of(doc) == {c.session_id: "delivered", b.session_id: "refused"}
    assert world.spool.room_names(f"d-{b.session_id}") == []


def test_a_rule_per_sender_class(world: World, three: tuple[StandIn, ...]) -> None:
    a, b, _c = three
    inbound(b, "hold", "--from", "humans")
    assert outcomes_of(send_json(a, "--to", b.session_id, "from a session")) == {b.session_id: "delivered"}
    assert outcomes_of(send_json(world, "--to", b.session_id, "from the human")) == {b.session_id: "held"}
    assert inbound(b)["rule"] == {"local": "accept", "humans": "hold", "hosts": "accept"}


def test_an_unreadable_rule_reads_as_hold(world: World, three: tuple[StandIn, ...]) -> None:
    a, b, _c = three
    rule = world.spool_root / "sessions" / b.session_id / "inbound"
    for planted in (b"local maybe\n", b"\xff\xfe", b"local accept\nlocal accept extra\n"):
        rule.write_bytes(planted)
        assert outcomes_of(send_json(a, "--to", b.session_id, "hm")) == {b.session_id: "held"}
    rule.unlink()
    rule.mkdir()  # a folder planted in its place
    assert outcomes_of(send_json(a, "--to", b.session_id, "hm")) == {b.session_id: "held"}


def test_a_project_overlay_sets_the_default_and_a_session_rule_wins(world: World) -> None:
    overlay = world.project("held") / ".claude" / "attend.yaml"
    overlay.parent.mkdir(parents=True, exist_ok=True)
    overlay.write_text("inbound:\n  local: hold\n")
    a, b = world.session("pa"), world.session("held")
    for s in (a, b):
        assert s.attend("join", "crew").rc == 0
    assert outcomes_of(send_json(a, "--to", b.session_id, "first")) == {b.session_id: "held"}
    inbound(b, "accept", "--from", "local")
    assert outcomes_of(send_json(a, "--to", b.session_id, "second")) == {b.session_id: "delivered"}


# ---------------------------------------------------------------------- waiting, accept, decline


def test_held_waits_unshown_until_accepted_then_shown_once(world: World, three: tuple[StandIn, ...]) -> None:
    a, b, _c = three
    inbound(b, "hold")
    msg = send_json(a, "--to", b.session_id, "the secret plan")["id"]
    shown = drain(world, b.session_id)
    assert "the secret plan" not in shown.stdout  # no conduit shows it
    listed = inbound(b)["waiting"]
    assert [(w["id"], w["session"], w["unreviewed"]) for w in listed] == [(msg, b.session_id, False)]
    accepted = inbound(b, "accept", msg)
    assert accepted["decided"] == [msg] and accepted["waiting"] == []
    assert "the secret plan" in drain(world, b.session_id).stdout
    assert "the secret plan" not in drain(world, b.session_id).stdout  # once
    again = b.attend("inbound", "accept", msg)
    assert again.rc == 1 and "nothing with id" in again.stderr


def test_the_human_sees_and_decides_what_waits_for_any_session(world: World, three: tuple[StandIn, ...]) -> None:
    a, b, c = three
    inbound(b, "hold")
    inbound(c, "hold")
    one = send_json(a, "--to", b.session_id, "for b")["id"]
    two = send_json(a, "--to", c.session_id, "for c")["id"]
    listed = inbound(world)
    assert {(w["id"], w["session"]) for w in listed["waiting"]} == {(one, b.session_id), (two, c.session_id)}
    assert inbound(world, "accept", one)["decided"] == [one]
    declined = inbound(world, "decline", two)
    assert declined["decided"] == [two]
    assert world.spool.delivery_state(c.session_id, two) == "declined"
    assert "for c" not in drain(world, c.session_id).stdout
    # the human sets any session's rule
    inbound(world, "refuse", "--from", "hosts", "--session", name_of(world, b))
    assert inbound(b)["rule"]["hosts"] == "refuse"


def test_accept_without_an_id_sets_the_rule_and_takes_what_waits(world: World, three: tuple[StandIn, ...]) -> None:
    a, b, _c = three
    inbound(b, "hold")
    msg = send_json(a, "--to", b.session_id, "waiting")["id"]
    done = inbound(b, "accept")
    assert done["decided"] == [msg] and done["rule"] == dict.fromkeys(outcomes.CLASSES, "accept")
    assert msg in maildir(world, b.session_id, "new")


def test_what_waits_past_a_day_is_marked_unreviewed_and_stays(world: World, three: tuple[StandIn, ...]) -> None:
    from tests.support import post

    _a, b, _c = three
    inbound(b, "hold")
    room = "d-00000000-0000-4000-8000-000000000000"  # no recipient: post links it nowhere
    old = post(world.spool, room, "from yesterday", age=2 * 86400)
    assert world.spool.link_delivery(b.session_id, room, old, held=True)  # held two days ago, as the rule did
    waiting = inbound(b)["waiting"]
    assert [(w["id"], w["unreviewed"]) for w in waiting] == [(old, True)]
    assert old in maildir(world, b.session_id, "held")
    # the sender's side sees it too: its receipt says unreviewed
    from attend.domain.messages import receipts

    [row] = receipts.receipt(world.spool, room, old, "someone-else").recipients
    assert (row.session_id, row.state, row.unreviewed) == (b.session_id, "held", True)


def test_the_sender_sees_later_changes_in_inbox_sent(world: World, three: tuple[StandIn, ...]) -> None:
    a, b, c = three
    inbound(b, "hold")
    inbound(c, "hold")
    one = send_json(a, "--to", b.session_id, "first")["id"]
    two = send_json(a, "--to", c.session_id, "second")["id"]

    def states() -> dict[str, dict[str, str]]:
        out = a.attend("inbox", "--sent", "--json")
        assert out.rc == 0, out.stderr
        messages = json.loads(out.stdout)["messages"]
        return {m["id"]: {r["session_id"]: r["state"] for r in m["recipients"]} for m in messages}

    assert states()[one] == {b.session_id: "held"} and states()[two] == {c.session_id: "held"}
    inbound(b, "accept", one)
    inbound(world, "decline", two)
    now = states()
    assert now[one] == {b.session_id: "delivered"} and now[two] == {c.session_id: "declined"}
    text = a.attend("inbox", "--sent").stdout
    assert f"{name_of(world, c)} declined" in text and f"{name_of(world, b)} delivered" in text


# ---------------------------------------------------------------------- exactly once, conduits racing


def test_an_accepted_message_is_shown_exactly_once_with_loop_waiter_and_drain_racing(
    world: World, three: tuple[StandIn, ...]
) -> None:
    from tests.support import Wait

    a, b, _c = three
    inbound(b, "hold")
    ids = [send_json(a, "--to", b.session_id, f"held {i}")["id"] for i in range(5)]
    loop = Loop(world, b)
    waiter = Wait(world, b)
    try:
        wait_until(waiter.waiting, "the waiter to arm")
        assert not any("held " in line for line in loop.lines())
        assert inbound(world, "accept", "--session", name_of(world, b))["decided"] == ids  # the human
        shown_by_drain = drain(world, b.session_id).stdout

        def shown() -> str:
            return "\n".join(loop.lines()) + shown_by_drain + (waiter.done()[2] if waiter.exited() else "")

        wait_until(lambda: all(f"held {i}" in shown() for i in range(5)), "all five to show somewhere")
        text = shown()
        assert all(text.count(f"held {i}") == 1 for i in range(5)), text
        assert sorted(n.split(":")[0] for n in maildir(world, b.session_id, "cur")) >= sorted(ids)
    finally:
        loop.stop()


# ---------------------------------------------------------------------- authority


def test_a_session_cannot_set_or_decide_another_sessions_rule(world: World, three: tuple[StandIn, ...]) -> None:
    a, b, _c = three
    inbound(b, "hold")
    msg = send_json(a, "--to", b.session_id, "mine to decide")["id"]
    for args in (
        ("refuse", "--session", b.session_id),
        ("accept", "--session", name_of(world, b)),
        ("accept", msg, "--session", b.session_id),
        ("decline", msg, "--session", b.session_id),
    ):
        out = a.attend("inbound", *args)
        assert out.rc == 1 and "its own" in out.stderr, (args, out.stderr)
    assert a.attend("inbound", "accept", msg).rc == 1  # not a's to accept: it waits for b
    assert inbound(b)["rule"] == dict.fromkeys(outcomes.CLASSES, "hold")
    assert msg in maildir(world, b.session_id, "held")


@pytest.mark.parametrize(
    "args,code",
    [
        (("maybe",), 2),
        (("decline",), 2),
        (("hold", "not-an-id"), 2),
        (("hold", "--from", "aliens"), 2),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(world: World, args: tuple[str, ...], code: int) -> None:
    s = world.session("pa")
    assert s.attend("join", "crew").rc == 0
    before = os.path.exists(world.spool_root / "sessions" / s.session_id / "inbound")
    out = s.attend("inbound", *args)
    assert out.rc == code and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert os.path.exists(world.spool_root / "sessions" / s.session_id / "inbound") == before


# ---------------------------------------------------------------------- MCP


@pytest.mark.anyio
async def test_mcp_send_reports_outcomes_in_at_most_200_bytes_for_three(
    world: World, three: tuple[StandIn, ...]
) -> None:
    a, b, c = three
    d = world.session("pd")
    join_channel(world, d)
    inbound(b, "hold")
    assert d.attend("mute", name_of(world, a)).rc == 0
    async with Client(server_as(world, a), mode="legacy") as client:
        result = await client.call_tool("send", {"message": "hi all", "channel": "crew"})
    sent = structured(result)
    assert set(sent["outcome"].split(", ")) == {
        f"{name_of(world, b)} held",
        f"{name_of(world, c)} delivered",
        f"{name_of(world, d)} muted",
    }
    assert len(result.content[0].text.encode()) <= 200, result.content[0].text


@pytest.mark.anyio
async def test_mcp_inbound_holds_accepts_and_declines_its_own(world: World, three: tuple[StandIn, ...]) -> None:
    a, b, _c = three
    async with Client(server_as(world, b), mode="legacy") as client:
        held = structured(await client.call_tool("inbound", {"action": "hold hosts,local"}))
        assert held["rule"] == {"local": "hold", "humans": "accept", "hosts": "hold"}
        one = send_json(a, "--to", b.session_id, "one")["id"]
        two = send_json(a, "--to", b.session_id, "two")["id"]
        listed = structured(await client.call_tool("inbound", {}))
        assert [w["id"] for w in listed["waiting"]] == [one, two]
        assert structured(await client.call_tool("inbound", {"action": "accept", "id": one}))["decided"] == [one]
        assert structured(await client.call_tool("inbound", {"action": "decline", "id": two}))["decided"] == [two]
        bad = error_text(await client.call_tool("inbound", {"action": "maybe"}))
    assert "not an action" in bad
    assert world.spool.delivery_state(b.session_id, one) == "delivered"
    assert world.spool.delivery_state(b.session_id, two) == "declined"


@pytest.mark.anyio
async def test_mcp_all_refused_is_an_error_and_nothing_is_written(world: World, three: tuple[StandIn, ...]) -> None:
    a, b, _c = three
    inbound(b, "refuse")
    async with Client(server_as(world, a), mode="legacy") as client:
        text = error_text(await client.call_tool("send", {"message": "hello?", "to": b.session_id}))
    assert "refuses" in text
    assert world.spool.room_names(f"d-{b.session_id}") == []


def test_the_verb_is_typed_for_a_frontend_to_call(world: World, three: tuple[StandIn, ...]) -> None:
    """What the page (attend web) calls to accept or decline: the verb's own request and result."""
    a, b, _c = three
    inbound(b, "hold")
    msg = send_json(a, "--to", b.session_id, "typed")["id"]
    result = inbound_verb.run(world.context(), inbound_verb.InboundRequest("accept", msg))
    assert isinstance(result, inbound_verb.Inbound) and result.decided == [msg]


def test_a_clear_carries_the_rule_and_what_waits_to_the_new_id(world: World, three: tuple[StandIn, ...]) -> None:
    a, b, _c = three
    inbound(b, "hold", "--from", "local")
    msg = send_json(a, "--to", b.session_id, "before the clear")["id"]
    old = b.session_id
    b.write_record(session_id="00000000-0000-4000-8000-0000000000c2")  # the client's /clear: a new id
    assert b.attend("join", "crew").rc == 0  # the new id takes the old one's state
    assert b.session_id != old and maildir(world, b.session_id, "held") == [msg]
    assert inbound(b)["rule"] == {"local": "hold", "humans": "accept", "hosts": "accept"}
    assert outcomes_of(send_json(a, "--to", old, "to the old id")) == {b.session_id: "held"}
