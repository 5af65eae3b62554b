"""The human beside the sessions: one mailbox of its own (humans/<user>/), reached by name from a
session, another human or MCP, and by replies; inbox shows its unread mail first and marks it read;
inbox --sent; peers lists recent humans; send counts live and parked recipients apart."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from mcp import Client

from attend.domain.messages import addressing
from attend.testing.standin import StandIn
from attend.verbs import send as send_verb
from tests.support import ATTEND, World, error_text, human_mailbox, server_as, stopped, structured, tree, wait_until

HUMAN = "fixture-human"  # the world's $USER


def _box(world: World, sub: str, user: str = HUMAN) -> list[str]:
    folder = world.spool_root / "humans" / user / sub
    return sorted(os.listdir(folder)) if folder.is_dir() else []


def _json(out: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert isinstance(data, dict)
    return data


def _joined(world: World, project: str = "proj") -> object:
    s = world.session(project)
    assert s.attend("join", "crew").rc == 0
    return s


# ---------------------------------------------------------------------- addressing the human


def test_a_session_sending_to_the_human_by_name_lands_in_the_humans_mailbox_once(world: World) -> None:
    s = world.session("proj")
    human_mailbox(world)
    assert s.attend("join", "crew").rc == 0
    out = s.attend("send", "--to", HUMAN, "--json", "the deploy is green")
    assert out.rc == 0, out.stderr
    sent = json.loads(out.stdout)
    assert sent["room"] == f"h-{HUMAN}" and sent["delivered"] == 1
    assert _box(world, "new") == [sent["id"]]
    # The record is in the human's room, and the mailbox is a maildir any reader opens.
    assert {"tmp", "new", "cur"} <= set(os.listdir(world.spool_root / "humans" / HUMAN))


def test_send_to_root_reaches_a_human_who_has_used_the_bus(world: World) -> None:
    assert world.attend("inbox", env={"USER": "root"}).returncode == 0  # root read once: it is on the bus
    s = world.session("proj")
    assert s.attend("join", "crew").rc == 0
    out = s.attend("send", "--to", "root", "a word?")
    assert out.rc == 0, out.stderr
    assert "no session named" not in out.stderr
    assert len(_box(world, "new", "root")) == 1


def test_the_human_running_the_command_is_addressable_before_it_has_a_mailbox(world: World) -> None:
    out = world.attend("send", "--to", HUMAN, "a note to self")
    assert out.returncode == 0, out.stderr
    assert len(_box(world, "new")) == 0 and (world.spool_root / "humans" / HUMAN).is_dir()  # never to itself


def test_a_session_cannot_address_a_human_into_being(world: World) -> None:
    """A session's $USER names no one: only a human makes its own mailbox, by using the bus."""
    s = world.session("proj")
    assert s.attend("join", "crew").rc == 0
    out = s.attend("send", "--to", HUMAN, "first contact")  # the session's $USER is the human's
    assert out.rc == 1 and f"no session or human named {HUMAN!r}" in out.stderr
    assert not (world.spool_root / "humans" / HUMAN).exists()


def test_an_unknown_name_is_refused_naming_the_sessions_and_humans_that_can_be_addressed(world: World) -> None:
    s = world.session("proj", name="Hana")
    human_mailbox(world)
    assert s.attend("join", "crew").rc == 0
    assert world.attend("inbox", env={"USER": "root"}).returncode == 0
    before = sorted(p.name for p in (world.spool_root / "rooms").iterdir())
    out = s.attend("send", "--to", "nobody-here", "hi")
    assert out.rc == 1
    assert "no session or human named 'nobody-here'" in out.stderr
    assert "sessions: Hana;" in out.stderr and "root" in out.stderr and HUMAN in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in (world.spool_root / "rooms").iterdir()) == before


def test_a_human_writing_to_another_human_reaches_that_humans_mailbox(world: World) -> None:
    assert world.attend("inbox").returncode == 0  # fixture-human has used the bus
    sent = _json(world.attend("send", "--to", HUMAN, "--json", "lunch?", env={"USER": "alice"}))
    assert sent["from_kind"] == "human" and sent["from_id"] == "alice"
    assert _box(world, "new") == [sent["id"]]
    mine = _json(world.attend("inbox", "--json"))
    assert [m["body"] for m in mine["unread"]] == ["lunch?"]  # type: ignore[index]


def test_a_session_and_a_human_named_alike_need_the_explicit_form(world: World) -> None:
    s = world.session("proj", name=HUMAN)  # persona fixture-human, display name fixture-human-alpha
    assert s.attend("join", "crew").rc == 0
    t = world.session("proj")
    assert t.attend("join", "crew").rc == 0
    human_mailbox(world)
    bare = t.attend("send", "--to", HUMAN, "--json", "to whom?")
    assert bare.rc == 2 and "names a human and also a session" in bare.stdout + bare.stderr
    to_human = json.loads(t.attend("send", "--to", f"user:{HUMAN}", "--json", "to the person").stdout)
    to_session = json.loads(t.attend("send", "--to", f"{HUMAN}-al", "--json", "to the session").stdout)
    assert to_human["room"] == f"h-{HUMAN}" and to_human["humans"] == [HUMAN]
    assert to_session["room"] == f"d-{s.session_id}" and to_session["humans"] == []


@pytest.mark.anyio
async def test_the_mcp_send_tool_accepts_the_users_name(world: World) -> None:
    s = world.session("proj")
    human_mailbox(world)
    assert s.attend("join", "crew").rc == 0
    assert "user name" in send_verb.PARAMS["to"]
    async with Client(server_as(world, s), mode="legacy") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "user name" in tools["send"].input_schema["properties"]["to"]["description"]
        sent = structured(await client.call_tool("send", {"message": "via mcp", "to": HUMAN}))
        refused = await client.call_tool("send", {"message": "x", "to": "nobody-here"})
    assert sent["room"] == f"h-{HUMAN}" and _box(world, "new") == [sent["id"]]
    assert "no session or human named 'nobody-here'" in error_text(refused)


# ---------------------------------------------------------------------- replies


def test_a_reply_to_a_humans_message_in_open_reaches_the_humans_mailbox_once(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "crew").rc == 0
    ask = _json(world.attend("send", "--json", "who is on call?"))
    assert ask["room"] == "open"
    answer = json.loads(s.attend("reply", "--re", str(ask["id"]), "--json", "I am").stdout)
    assert _box(world, "new") == [answer["id"]]  # linked once, though the record is in two rooms
    first = _json(world.attend("inbox", "--json"))
    assert [m["id"] for m in first["unread"]] == [answer["id"]]  # type: ignore[index]
    again = _json(world.attend("inbox", "--json"))
    assert again["unread"] == []
    assert [m["id"] for m in again["messages"]] == [answer["id"]]  # type: ignore[index]  # listed once


@pytest.mark.anyio
async def test_a_reply_over_mcp_to_a_humans_message_reaches_the_humans_mailbox(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "crew").rc == 0
    ask = _json(world.attend("send", "--json", "--channel", "crew", "status?"))
    async with Client(server_as(world, s), mode="legacy") as client:
        answer = structured(await client.call_tool("reply", {"message": "green", "re": ask["id"]}))
    assert _box(world, "new") == [answer["id"]]


# ---------------------------------------------------------------------- reading


def test_inbox_shows_the_humans_unread_mail_first_and_marks_it_read(world: World) -> None:
    s = world.session("proj", name="Hana")
    human_mailbox(world)
    assert s.attend("join", "crew").rc == 0
    other = _json(world.attend("send", "--json", "an #open note", env={"USER": "alice"}))
    mail = json.loads(s.attend("send", "--to", HUMAN, "--json", "for your eyes").stdout)
    out = world.attend("inbox")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.startswith("1 unread, to you:")
    assert text.index("for your eyes") < text.index("an #open note")
    assert text.count("for your eyes") == 1
    assert _box(world, "new") == [] and _box(world, "cur") == [mail["id"] + ":2,S"]
    again = world.attend("inbox").stdout
    assert "unread" not in again and "for your eyes" in again and str(other["id"]) in again


def test_inbox_json_carries_the_unread_mail_and_marks_it_read(world: World) -> None:
    s = world.session("proj")
    human_mailbox(world)
    assert s.attend("join", "crew").rc == 0
    ids = [json.loads(s.attend("send", "--to", HUMAN, "--json", f"m{i}").stdout)["id"] for i in range(3)]
    first = _json(world.attend("inbox", "--json"))
    assert [m["id"] for m in first["unread"]] == ids  # type: ignore[index]  # oldest first, as it arrived
    assert _box(world, "cur") == sorted(i + ":2,S" for i in ids)
    assert _json(world.attend("inbox", "--json"))["unread"] == []


@pytest.mark.anyio
async def test_an_mcp_server_outside_any_session_never_consumes_the_humans_mail(world: World) -> None:
    s = world.session("proj")
    human_mailbox(world)
    assert s.attend("join", "crew").rc == 0
    mail = json.loads(s.attend("send", "--to", HUMAN, "--json", "for the human's eyes").stdout)
    async with Client(server_as(world, None), mode="legacy") as client:  # resolves as the human
        listed = structured(await client.call_tool("inbox", {}))
    assert listed["unread"] == [] and _box(world, "new") == [mail["id"]]
    assert not (world.spool_root / "humans" / HUMAN / "active").exists()


def test_mail_a_sender_killed_before_fan_out_left_unlinked_is_still_shown_unread(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "crew").rc == 0
    assert world.attend("inbox").returncode == 0  # on the bus: alice may address it
    env = {**world.env, "ATTEND_PAUSE_AT": "room-record", "USER": "alice"}
    proc = subprocess.Popen(
        [ATTEND, "send", "--to", HUMAN, "half sent"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_until(lambda: stopped(proc.pid) or proc.poll() is not None, "the sender to stop after its room record")
        assert proc.poll() is None, "the sender exited instead of stopping"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert _box(world, "new") == []  # the record is durable in h-fixture-human, the link never made
    first = _json(world.attend("inbox", "--json"))
    assert [m["body"] for m in first["unread"]] == ["half sent"]  # type: ignore[index]
    assert _json(world.attend("inbox", "--json"))["unread"] == []


def test_inbox_sent_lists_what_the_human_sent_newest_first_with_ids(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "crew").rc == 0
    one = _json(world.attend("send", "--json", "first, to everyone"))
    two = _json(world.attend("send", "--json", "--to", s.session_id, "second, to one session"))
    assert json.loads(s.attend("send", "--json", "not mine").stdout)["id"]
    listed = _json(world.attend("inbox", "--sent", "--json"))
    assert listed["sent"] is True
    assert [m["id"] for m in listed["messages"]] == [two["id"], one["id"]]  # type: ignore[index]
    text = world.attend("inbox", "--sent").stdout
    assert str(two["id"]) in text and str(one["id"]) in text and "not mine" not in text
    assert text.index("second, to one session") < text.index("first, to everyone")
    assert world.attend("inbox", "--sent", env={"USER": "alice"}).stdout.strip() == "nothing sent"


@pytest.mark.anyio
async def test_inbox_sent_over_mcp_lists_what_the_session_sent(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "crew").rc == 0
    assert world.attend("send", "from the human").returncode == 0
    async with Client(server_as(world, s), mode="legacy") as client:
        sent = structured(await client.call_tool("send", {"message": "from the session"}))
        listed = structured(await client.call_tool("inbox", {"sent": True}))
    assert [m["id"] for m in listed["messages"]] == [sent["id"]]


def test_inbox_sent_with_a_sender_filter_is_a_usage_error_that_writes_nothing(world: World) -> None:
    out = world.attend("inbox", "--sent", "--from", "alice")
    assert out.returncode == 2 and "--sent" in out.stderr
    assert not (world.spool_root / "humans").exists() or _box(world, "new") == []
    assert not (world.spool_root / "humans" / HUMAN).exists()


# ---------------------------------------------------------------------- peers


def test_peers_lists_the_humans_who_used_the_bus_recently_marked_human(world: World) -> None:
    s = world.session("proj", name="Hana")
    assert s.attend("join", "crew").rc == 0
    assert world.attend("send", "hello", env={"USER": "alice"}).returncode == 0
    assert world.attend("inbox", env={"USER": "bob"}).returncode == 0
    stale = world.spool_root / "humans" / "bob" / "active"
    then = time.time() - 13 * 3600  # bob last read 13 hours ago: no longer listed
    os.utime(stale, (then, then))
    peers = json.loads(s.attend("peers", "--json").stdout)
    assert [h["user"] for h in peers["humans"]] == ["alice"]
    assert [p["display"] for p in peers["peers"]] == ["Hana"]
    text = world.attend("peers", env={"USER": "alice"}).stdout
    assert "alice (human, you)" in text and "Hana" in text and "bob" not in text


@pytest.mark.anyio
async def test_peers_over_mcp_lists_the_humans_beside_the_sessions(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "crew").rc == 0
    assert world.attend("send", "hello").returncode == 0
    async with Client(server_as(world, s), mode="legacy") as client:
        peers = structured(await client.call_tool("peers", {}))
    assert [h["user"] for h in peers["humans"]] == [HUMAN]
    assert peers["humans"][0]["self"] is False


# ---------------------------------------------------------------------- honest counts


def test_send_says_how_many_recipients_are_live_and_how_many_are_parked(world: World) -> None:
    a, b, c = world.session("pa"), world.session("pb"), world.session("pc")
    for s in (a, b, c):
        assert s.attend("join", "crew").rc == 0
    c.close()  # c's Claude process is gone; it stays enrolled, so its mail waits for it: parked
    out = a.attend("send", "--json", "hello all")
    sent = json.loads(out.stdout)
    assert (sent["delivered"], sent["live"], sent["parked"]) == (2, 1, 1)
    line = a.attend("send", "hello again").stdout.strip()
    assert line.endswith(f"(2 recipients: 1 delivered, 1 parked ({a_name(world, c)}))"), line
    peers = json.loads(a.attend("peers", "--json").stdout)["peers"]
    assert [p["session_id"] for p in peers if not p["self"]] == [b.session_id]  # the one live recipient


def test_a_human_recipient_counts_live_when_it_used_the_bus_recently(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "crew").rc == 0
    assert world.attend("inbox").returncode == 0
    sent = json.loads(s.attend("send", "--to", HUMAN, "--json", "ping").stdout)
    assert (sent["delivered"], sent["live"], sent["parked"]) == (1, 1, 0)
    then = time.time() - 13 * 3600
    os.utime(world.spool_root / "humans" / HUMAN / "active", (then, then))
    later = json.loads(s.attend("send", "--to", HUMAN, "--json", "ping again").stdout)
    assert (later["delivered"], later["live"], later["parked"]) == (1, 0, 1)


@pytest.mark.anyio
async def test_the_mcp_send_result_counts_live_and_parked_apart(world: World) -> None:
    a, b, c = world.session("pa"), world.session("pb"), world.session("pc")
    for s in (a, b, c):
        assert s.attend("join", "crew").rc == 0
    c.close()
    async with Client(server_as(world, a), mode="legacy") as client:
        sent = structured(await client.call_tool("send", {"message": "hello all"}))
    assert sent["outcome"] == f"{a_name(world, b)} delivered, {a_name(world, c)} parked"


def a_name(world: World, s: StandIn) -> str:
    """A session's name, as peers shows it (and send's outcomes name it)."""
    return addressing.session_names(world.spool, world.context(s).sessions_dir)[s.session_id]


def test_another_account_of_this_machine_is_refused_saying_its_spool_is_its_own(world: World) -> None:
    import pwd

    other = next(p.pw_name for p in pwd.getpwall() if p.pw_uid != os.getuid())
    assert world.attend("send", "first, so the spool exists").returncode == 0
    before = tree(world.spool_root)
    out = world.attend("send", "--to", other, "lunch?")
    assert out.returncode == 1 and out.stdout == ""
    assert f"{other!r} is another user account of this machine" in out.stderr, out.stderr
    assert "spool is its own" in out.stderr and len(out.stderr.splitlines()) == 1
    assert tree(world.spool_root) == before


@pytest.mark.parametrize("which", ["client-name", "alias"])
def test_a_human_at_a_terminal_named_after_a_session_is_refused_and_makes_no_mailbox(world: World, which: str) -> None:
    s = world.session("proj", name="Nico")
    assert s.attend("join", "crew").rc == 0  # registered: its persona and ordinal are on record
    entry = next(
        e
        for path in (world.spool_root / "registry").glob("*.json")
        for sid, e in json.loads(path.read_text()).items()
        if sid == s.session_id
    )
    names = {"client-name": "Nico", "alias": f"{entry['persona']}-{entry['ordinal']}"}
    user = names[which].upper()  # case aside: a mailbox named NICO would take Nico's mail as well
    for args in (("inbox",), ("send", "--to", "Nico", "hello")):
        out = world.attend(*args, env={"USER": user, "LOGNAME": user})
        assert out.returncode in (1, 2), (args, out.stdout, out.stderr)
        assert "display name" in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert not (world.spool_root / "humans" / user).exists() and _box(world, "new", user) == []
    assert not any(p.name.lower() == user.lower() for p in (world.spool_root / "humans").glob("*"))
