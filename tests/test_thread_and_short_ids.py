"""`attend thread <id>` prints a thread from its root, indented as chat shows it; and any unique prefix of
a message id (at least 6 characters) is taken wherever an id is, as git takes a commit's."""

from __future__ import annotations

import json
import subprocess

import pytest

from attend.domain.core import ids
from attend.domain.sessions import sessions
from attend.errors import AmbiguousError
from attend.verbs import inbox, reply, send
from tests.support import ATTEND, World, error_text, server_as, structured


def attend(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ATTEND, *args], env=world.env, cwd=world.project("proj"), capture_output=True, text=True, timeout=60
    )


def conversation(world: World) -> dict[str, str]:
    a, b = world.session("api"), world.session("web")
    for s in (a, b):
        sessions.enroll(world.spool, world.context(s).who(), "run")
    got = {}
    got["root"] = send.run(world.context(a), send.SendRequest("deploy tonight?")).id
    got["yes"] = reply.run(world.context(b), reply.ReplyRequest("yes, at ten", re=got["root"])).id
    got["why"] = reply.run(world.context(a), reply.ReplyRequest("why ten?", re=got["yes"])).id
    got["also"] = reply.run(world.context(b), reply.ReplyRequest("and tests first", re=got["root"])).id
    got["other"] = send.run(world.context(b), send.SendRequest("another topic")).id
    return got


def test_thread_prints_the_whole_thread_from_its_root_indented_from_any_of_its_messages(world: World) -> None:
    got = conversation(world)
    out = attend(world, "thread", got["why"])
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    bodies = [(len(line) - len(line.lstrip()), line.strip()) for line in lines if line.strip() and ":" not in line]
    assert bodies[:4] == [
        (2, "deploy tonight?"),
        (4, "yes, at ten"),
        (6, "why ten?"),
        (4, "and tests first"),
    ], out.stdout
    assert "another topic" not in out.stdout
    assert lines[-1] == f"3 replies under {ids.shortest([got['root']], ids.all_ids(world.spool))[got['root']]}"
    doc = json.loads(attend(world, "thread", "--json", got["root"]).stdout)
    assert doc["root"] == got["root"] and [m["id"] for m in doc["messages"]] == [
        got["root"],
        got["yes"],
        got["why"],
        got["also"],
    ]


def test_a_unique_prefix_of_an_id_is_taken_wherever_an_id_is(world: World) -> None:
    got = conversation(world)
    everything = ids.all_ids(world.spool)
    short = ids.shortest(list(everything), everything)
    for full, prefix in short.items():  # each short form is unique, and no shorter than 6
        assert len(prefix) >= ids.MIN_PREFIX and [i for i in everything if i.startswith(prefix)] == [full]
    prefix = short[got["yes"]]
    read = attend(world, "inbox", "--json", prefix)
    assert read.returncode == 0, read.stderr
    assert json.loads(read.stdout)["messages"][0]["id"] == got["yes"]
    answered = attend(world, "reply", "--json", "--re", prefix, "from the human")
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["re"] == got["yes"]
    assert attend(world, "thread", prefix).returncode == 0


def test_a_prefix_that_fits_several_ids_or_none_or_is_too_short_is_refused_in_one_line(world: World) -> None:
    got = conversation(world)
    shared = got["root"][: ids.MIN_PREFIX]  # the seconds of a timestamp: every message of this test
    several = attend(world, "inbox", shared)
    # The spool's content, not the argument's form, makes it fail: exit 1, as a prefix that fits none.
    assert several.returncode == 1 and "fits" in several.stderr and "give more of the id" in several.stderr
    assert len(several.stderr.strip().splitlines()) == 1
    assert got["root"] in several.stderr  # a few of the candidates, named
    none = attend(world, "reply", "--re", "999999999", "hi")
    assert none.returncode == 1 and "no message id starts with '999999999'" in none.stderr, none.stderr
    short = attend(world, "thread", got["root"][:5])
    assert short.returncode == 2 and "at least 6 characters" in short.stderr


def short_of(world: World, full: str) -> str:
    return ids.short_forms(world.spool, [full])[full]


def test_every_option_that_takes_a_message_id_takes_a_unique_prefix(world: World) -> None:
    got = conversation(world)
    a, b = world.session("ops"), world.session("ui")
    for s in (a, b):
        sessions.enroll(world.spool, world.context(s).who(), "run")
    older = attend(world, "inbox", "--json", "--before", short_of(world, got["also"]))
    assert older.returncode == 0, older.stderr
    assert [m["id"] for m in json.loads(older.stdout)["messages"]] == [got["why"], got["yes"], got["root"]]
    # reply --to <id> names the parent, as a full id does.
    answered = attend(world, "reply", "--json", "--to", short_of(world, got["other"]), "on the other topic")
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["re"] == got["other"]
    found = attend(world, "search", "--json", "--re", short_of(world, got["root"]), "ten")
    assert found.returncode == 0, found.stderr
    assert {r["id"] for r in json.loads(found.stdout)["results"]} == {got["yes"], got["why"]}
    in_query = attend(world, "search", "--json", f"re:{short_of(world, got['root'])} ten")
    assert in_query.returncode == 0 and json.loads(in_query.stdout) == json.loads(found.stdout), in_query.stderr
    # A held message is accepted by a prefix of its id too.
    assert b.attend("inbound", "hold").rc == 0
    held = send.run(world.context(a), send.SendRequest("held for web", to=b.session_id)).id
    accepted = b.attend("inbound", "--json", "accept", short_of(world, held))
    assert accepted.rc == 0 and json.loads(accepted.stdout)["decided"] == [held], accepted.stderr


def test_an_option_given_an_ambiguous_prefix_is_refused_and_nothing_is_sent(world: World) -> None:
    got = conversation(world)
    shared = got["root"][: ids.MIN_PREFIX]
    before = ids.all_ids(world.spool)
    for args in (
        ["inbox", "--before", shared],
        ["reply", "--re", shared, "which one?"],
        ["reply", "--to", shared, "which one?"],
        ["send", "--re", shared, "which one?"],
        ["search", "--re", shared, "ten"],
    ):
        r = attend(world, *args)
        assert r.returncode in (1, 2) and "fits" in r.stderr, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)
    assert ids.all_ids(world.spool) == before


@pytest.mark.anyio
async def test_the_mcp_tools_take_a_unique_prefix_and_refuse_an_ambiguous_one(world: World) -> None:
    from mcp import Client

    got = conversation(world)
    a = world.session("ops")
    sessions.enroll(world.spool, world.context(a).who(), "run")
    prefix, shared = short_of(world, got["yes"]), got["root"][: ids.MIN_PREFIX]
    async with Client(server_as(world, a), mode="legacy") as client:
        read = structured(await client.call_tool("inbox", {"id": prefix}))
        older = structured(await client.call_tool("inbox", {"before": short_of(world, got["also"])}))
        answered = structured(await client.call_tool("reply", {"message": "noted", "re": prefix}))
        ambiguous = error_text(await client.call_tool("reply", {"message": "which?", "re": shared}))
        too_short = error_text(await client.call_tool("inbox", {"id": shared[:5]}))
    assert read["messages"][0]["id"] == got["yes"] and answered["re"] == got["yes"]
    older_ids = [m["id"] for m in older["messages"]]
    assert got["yes"] in older_ids and got["also"] not in older_ids
    assert "fits" in ambiguous and "give more of the id" in ambiguous
    assert "at least 6 characters" in too_short


def test_the_resolver_says_ambiguous_with_a_few_candidates(world: World) -> None:
    got = conversation(world)
    try:
        ids.resolve(world.spool, got["root"][: ids.MIN_PREFIX], "--re")
    except AmbiguousError as e:
        said = str(e)
    else:
        raise AssertionError("an ambiguous prefix was taken")
    assert said.startswith(f"--re {got['root'][: ids.MIN_PREFIX]!r} fits 5 messages (") and said.endswith(
        ", …); give more of the id"
    )


def test_inbox_shows_each_id_in_a_short_form_that_stays_unique_and_json_keeps_full_ids(world: World) -> None:
    got = conversation(world)
    everything = ids.all_ids(world.spool)
    listed = attend(world, "inbox", "--all")
    assert listed.returncode == 0, listed.stderr
    shown = [line.split()[1] for line in listed.stdout.splitlines() if line.startswith("  id:")]
    answered = [line.split()[1] for line in listed.stdout.splitlines() if line.startswith("  re:")]
    assert shown and not any(i in everything for i in shown)  # short, not full
    for short in [*shown, *answered]:
        assert len(short) >= ids.MIN_PREFIX and len([i for i in everything if i.startswith(short)]) == 1, short
    assert short_of(world, got["yes"]) in shown
    doc = json.loads(attend(world, "inbox", "--all", "--json").stdout)
    assert {m["id"] for m in doc["messages"]} <= everything and all(m["id"] in everything for m in doc["messages"])
    page = inbox.run(world.context(None), inbox.InboxRequest(all=True, mark_read=False))
    assert {m.id for m in page.messages} <= everything


def test_the_send_line_shows_the_id_to_its_microsecond_and_json_the_full_id(world: World) -> None:
    conversation(world)
    said = attend(world, "send", "hello all")
    assert said.returncode == 0, said.stderr
    short = said.stdout.split()[1]
    full = [i for i in ids.all_ids(world.spool) if i.startswith(short)]
    assert len(full) == 1 and len(short) == ids.SENT_FORM and short == full[0][: ids.SENT_FORM]
    replied = attend(world, "reply", "--re", short, "and again")  # the short form is a prefix the verbs take
    assert replied.returncode == 0, replied.stderr
    assert replied.stdout.split()[1] != full[0] and f", re {short})" in replied.stdout  # the parent, short too
    doc = json.loads(attend(world, "send", "--json", "once more").stdout)
    assert doc["id"] in ids.all_ids(world.spool)


def test_where_thousands_of_ids_share_the_listed_ones_first_characters_they_are_shown_to_the_microsecond(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    got = conversation(world)
    monkeypatch.setattr(ids, "DENSE", 2)  # 5 ids share their first 6 characters: more than 2
    forms = ids.short_forms(world.spool, [got["yes"], got["why"]])
    assert forms == {got["yes"]: ids.sent_form(got["yes"]), got["why"]: ids.sent_form(got["why"])}
    assert all(ids.resolve(world.spool, form) == full for full, form in forms.items())
