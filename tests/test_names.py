"""One name per session: the client's own name for it (its record's ``name``) where it gives one, else
``Persona-ordinal``; shown wherever a session is named, accepted wherever one is addressed, followed
through a rename; the same before a session's first enrollment and after. A name that fits several
sessions is refused with each of them and its state. A live session that has not joined is listed by
``peers`` as such, and a send to it says what it takes to reach it."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from attend import identity
from attend.domain.core import rooms
from tests.support import World, drain, server_as, structured


def rename(s, name: str) -> None:  # type: ignore[no-untyped-def]
    """What the client does on /rename: the session record is rewritten with the new name."""
    s.name = name
    s.write_record()


def peer(world: World, sid: str) -> dict[str, object]:
    out = world.attend("peers", "--json")
    assert out.returncode == 0, out.stderr
    return next(p for p in json.loads(out.stdout)["peers"] if p["session_id"] == sid)


def test_a_session_with_a_client_name_is_shown_and_addressed_by_it_and_never_by_its_id(world: World) -> None:
    a, b = world.session("proj", name="proj-8d"), world.session("other", name="other-3f")
    for s in (a, b):
        assert s.attend("join", "crew").rc == 0
    assert peer(world, a.session_id)["display"] == "proj-8d"
    assert json.loads(a.attend("whoami", "--json").stdout)["display"] == "proj-8d"
    out = b.attend("send", "--to", "proj-8d", "hello")
    assert out.rc == 0, out.stderr
    assert " to proj-8d (1 recipient" in out.stdout and a.session_id not in out.stdout, out.stdout
    by_id = world.attend("send", "--to", a.session_id, "by id")
    assert by_id.returncode == 0 and " to proj-8d (" in by_id.stdout, by_id.stdout
    reason = json.loads(drain(world, a.session_id).stdout)["reason"]
    assert "other-3f (agent, claude; direct, id" in reason, reason  # the sender, by its name too, and its kind


def test_the_persona_ordinal_stays_an_alias_of_a_session_with_a_client_name(world: World) -> None:
    a = world.session("proj", name="proj-8d")
    assert a.attend("join", "crew").rc == 0
    alias = identity.nickname(str(a.cwd)) + "-alpha"
    out = world.attend("send", "--json", "--to", alias, "by the old name")
    assert out.returncode == 0, out.stderr
    sent = json.loads(out.stdout)
    assert (sent["to"], sent["to_name"], sent["delivered"]) == (a.session_id, "proj-8d", 1)


def test_a_rename_in_the_client_is_followed_and_kept_once_the_session_is_parked(world: World) -> None:
    a = world.session("proj", name="proj-8d")
    assert a.attend("join", "crew").rc == 0
    rename(a, "api-fixer")
    assert peer(world, a.session_id)["display"] == "api-fixer"
    out = world.attend("send", "--json", "--to", "api-fixer", "renamed")
    assert out.returncode == 0 and json.loads(out.stdout)["to_name"] == "api-fixer", out.stdout + out.stderr
    earlier = world.attend("send", "--json", "--to", "proj-8d", "to the old name")  # stable names
    assert earlier.returncode == 0 and json.loads(earlier.stdout)["to"] == a.session_id, earlier.stderr
    assert peer(world, a.session_id)["earlier"] == ["proj-8d"]
    sid = a.session_id
    a.close()  # its record goes; it stays enrolled: parked, under the name it had last
    parked = world.attend("send", "--json", "--to", "api-fixer", "while away")
    assert parked.returncode == 0, parked.stderr
    assert json.loads(parked.stdout)["to"] == sid and json.loads(parked.stdout)["parked"] == 1


def test_a_session_without_a_client_name_keeps_one_name_before_its_first_join_and_after(world: World) -> None:
    a = world.session("proj")  # an older client: no name in its record
    before = json.loads(a.attend("whoami", "--json").stdout)["display"]
    assert before == identity.nickname(str(a.cwd)) + "-alpha"
    assert peer(world, a.session_id)["display"] == before
    assert a.attend("join", "crew").rc == 0
    assert json.loads(a.attend("whoami", "--json").stdout)["display"] == before
    assert peer(world, a.session_id)["display"] == before


def test_a_name_that_fits_several_sessions_lists_each_with_its_state_and_sends_nothing(world: World) -> None:
    parked, live = world.session("pa", name="Nora"), world.session("pb", name="Nora")
    for s in (parked, live):
        assert s.attend("join", "crew").rc == 0
    parked_id = parked.session_id
    parked.close()  # peers no longer shows it; it is still enrolled, and still named Nora
    assert [p["session_id"] for p in json.loads(world.attend("peers", "--json").stdout)["peers"]] == [live.session_id]
    out = world.attend("send", "--to", "Nora", "which one?")
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert f"Nora (parked: enrolled, not running, {world.project('pa')}, id {parked_id})" in out.stderr
    assert f"Nora (live, {world.project('pb')}, id {live.session_id})" in out.stderr
    assert "give the session id" in out.stderr
    assert world.spool.room_names(rooms.OPEN) == [] and not world.spool.room_names(rooms.direct_room(parked_id))


def test_peers_marks_a_live_session_that_has_not_joined_and_a_send_to_it_says_how_to_reach_it(world: World) -> None:
    lurker = world.session("proj", name="lurker-1a")
    listed = peer(world, lurker.session_id)
    assert listed["display"] == "lurker-1a" and listed["enrolled"] is False
    table = world.attend("peers").stdout
    assert "lurker-1a (not joined)" in table, table
    out = world.attend("send", "--to", "lurker-1a", "are you there?")
    assert out.returncode == 0, out.stderr
    assert "to lurker-1a (1 recipient: 1 parked (lurker-1a))" in out.stdout, out.stdout  # its room keeps it
    [warning] = out.stderr.strip().splitlines()
    assert "lurker-1a" in warning and "has not joined" in warning and "attend join" in warning, warning
    assert lurker.attend("join", "crew").rc == 0  # it joins: the message was kept for it
    assert "are you there?" in json.loads(drain(world, lurker.session_id).stdout)["reason"]


@pytest.mark.anyio
async def test_the_mcp_send_takes_the_client_name_and_answers_with_it(world: World) -> None:
    a, b = world.session("proj", name="proj-8d"), world.session("other", name="other-3f")
    for s in (a, b):
        assert s.attend("join", "crew").rc == 0
    async with Client(server_as(world, b), mode="legacy") as client:
        sent = structured(await client.call_tool("send", {"message": "via mcp", "to": "proj-8d"}))
    assert sent["outcome"] == "proj-8d delivered" and sent["room"] == rooms.direct_room(a.session_id)


# ---------------------------------------------------------------------- stable names


def test_every_earlier_name_keeps_reaching_the_session_through_renames_and_once_parked(world: World) -> None:
    a, b = world.session("proj", name="proj-1e"), world.session("other", name="other-3f")
    for s in (a, b):
        assert s.attend("join", "crew").rc == 0
    for name in ("proj-6a", "proj-9c"):
        rename(a, name)
        assert peer(world, a.session_id)["display"] == name  # peers follows (and records) the rename
    assert peer(world, a.session_id)["earlier"] == ["proj-1e", "proj-6a"]
    for old in ("proj-1e", "proj-6a", "PROJ-1E"):
        out = b.attend("send", "--json", "--to", old, f"to {old}")
        assert out.rc == 0, out.stderr
        assert json.loads(out.stdout)["to"] == a.session_id and json.loads(out.stdout)["warnings"] == []
    async_sent = b.attend("send", "--to", "proj-1e", "human line")
    assert " to proj-9c (" in async_sent.stdout, async_sent.stdout  # sent to it, by its name now
    sid = a.session_id
    a.close()  # parked: its earlier names still reach it
    parked = json.loads(world.attend("send", "--json", "--to", "proj-1e", "while away").stdout)
    assert parked["to"] == sid and [r["outcome"] for r in parked["recipients"]] == ["parked"]


def test_an_earlier_name_another_live_session_now_holds_goes_to_it_and_send_says_so(world: World) -> None:
    a, b = world.session("proj", name="proj-1e"), world.session("other", name="other-3f")
    for s in (a, b):
        assert s.attend("join", "crew").rc == 0
    rename(a, "proj-6a")
    assert peer(world, a.session_id)["earlier"] == ["proj-1e"]
    c = world.session("third", name="proj-1e")  # the client gave the name to a new session
    assert c.attend("join", "crew").rc == 0
    out = b.attend("send", "--json", "--to", "proj-1e", "which one?")
    assert out.rc == 0, out.stderr
    assert json.loads(out.stdout)["to"] == c.session_id
    [line] = json.loads(out.stdout)["warnings"]
    assert "proj-1e" in line and "earlier name" in line and "proj-6a" in line, line


def test_a_name_kept_across_a_clear_still_reaches_the_session(world: World) -> None:
    a, b = world.session("proj", name="proj-1e"), world.session("other", name="other-3f")
    for s in (a, b):
        assert s.attend("join", "crew").rc == 0
    rename(a, "proj-6a")
    assert peer(world, a.session_id)["display"] == "proj-6a"
    old_sid = a.session_id
    a.write_record(session_id="00000000-0000-4000-8000-0000000000c1")  # the client's /clear: a new id
    assert a.attend("join", "crew").rc == 0  # the new id takes the old one's state (follow_clear)
    out = b.attend("send", "--json", "--to", "proj-1e", "after the clear")
    assert out.rc == 0, out.stderr
    assert json.loads(out.stdout)["to"] == a.session_id != old_sid


def test_completion_offers_earlier_names(world: World) -> None:
    from attend.cli import completion

    a, b = world.session("proj", name="proj-1e"), world.session("other", name="other-3f")
    for s in (a, b):
        assert s.attend("join", "crew").rc == 0
    rename(a, "proj-6a")
    assert peer(world, a.session_id)["earlier"] == ["proj-1e"]
    import os

    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(world.env)
        os.chdir(world.project("third"))
        values = {str(i.value): i.help for i in completion.candidates("to", "proj-")}
    finally:
        os.environ.clear()
        os.environ.update(saved)
    assert values.get("proj-6a") is not None and values.get("proj-1e") == "now proj-6a", values


@pytest.mark.anyio
async def test_the_mcp_to_takes_an_earlier_name(world: World) -> None:
    a, b = world.session("proj", name="proj-1e"), world.session("other", name="other-3f")
    for s in (a, b):
        assert s.attend("join", "crew").rc == 0
    rename(a, "proj-6a")
    assert peer(world, a.session_id)["earlier"] == ["proj-1e"]
    async with Client(server_as(world, b), mode="legacy") as client:
        sent = structured(await client.call_tool("send", {"message": "via mcp, old name", "to": "proj-1e"}))
    assert sent["outcome"] == "proj-6a delivered" and sent["room"] == rooms.direct_room(a.session_id)
