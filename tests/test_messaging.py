"""Send, reply and inbox between real stand-in sessions: fan-out, addressing, threading, paging,
the refusal rule, and the --json shape of every verb."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from attend.domain.core import rooms
from attend.domain.messages import delivery
from attend.domain.sessions import sessions
from attend.domain.sessions.context import Context
from attend.errors import NotEnrolledError, NotFoundError, SpoolError, UsageError
from attend.spool import Spool
from attend.verbs import inbox, reply, send
from tests.support import World


def _enroll(world: World, *ss: object, way: str = "join") -> None:
    for s in ss:
        sessions.enroll(world.spool, world.context(s).who(), way)  # type: ignore[arg-type]


def test_a_send_fans_out_to_every_enrolled_recipient_and_not_the_sender(world: World) -> None:
    a, b, c, d = (world.session(p) for p in ("pa", "pb", "pc", "pd"))
    _enroll(world, a, b, c)  # d is live but not enrolled
    sent = send.run(world.context(a), send.SendRequest("hello all"))
    assert sent.delivered == 2
    assert world.spool.listing(b.session_id, "new") == [sent.id]
    assert world.spool.listing(c.session_id, "new") == [sent.id]
    assert world.spool.listing(a.session_id, "new") == []
    assert not (world.spool_root / "sessions" / d.session_id / "new").exists()


def test_an_unenrolled_claude_session_may_not_send_and_is_told_both_ways_in(world: World) -> None:
    a = world.session("pa")
    with pytest.raises(NotEnrolledError, match=r"attend run.*attend join"):
        send.run(world.context(a), send.SendRequest("hi"))
    out = a.attend("send", "hi")
    assert out.rc == 1 and "not enrolled" in out.stderr
    assert world.spool.room_names("open") == []


def test_a_human_may_always_send(world: World) -> None:
    out = world.attend("send", "--json", "from the operator")
    data = json.loads(out.stdout)
    assert out.returncode == 0 and data["from_kind"] == "human" and data["from_id"] == "fixture-human"


def _enroll_worker(root: str, env: dict[str, str], pid: int, cwd: str) -> None:
    ctx = Context(spool=Spool.open(Path(root)), env=env, cwd=cwd, pid=pid)
    sessions.enroll(ctx.spool, ctx.who(), "run")


def _send_worker(root: str, env: dict[str, str], n: int) -> None:
    ctx = Context(spool=Spool.open(Path(root)), env=env, cwd="/", pid=os.getpid())
    for i in range(n):
        send.run(ctx, send.SendRequest(f"m{i}"))


def test_every_record_reaches_a_session_enrolling_concurrently(world: World) -> None:
    """Record first, then fan-out; enrollment first, then catch-up: a concurrent enrollment never
    misses a message sent while it happens (each is linked once, by one side or the other)."""
    ss = [world.session(f"p{i}") for i in range(4)]
    ctx_mp = multiprocessing.get_context("fork")
    sender = ctx_mp.Process(target=_send_worker, args=(str(world.spool_root), world.env, 150))
    enrollers = [
        ctx_mp.Process(target=_enroll_worker, args=(str(world.spool_root), world.env, s.pid, str(s.cwd))) for s in ss
    ]
    sender.start()
    for p in enrollers:
        p.start()
    for p in [sender, *enrollers]:
        p.join(60)
        assert p.exitcode == 0
    names = world.spool.room_names("open")
    assert len(names) == 150
    for s in ss:
        delivered = world.spool.listing(s.session_id, "new")
        enrolled_at = sessions.read_enrollment(world.spool, s.session_id).enrolled_at  # type: ignore[union-attr]
        # all messages sent after the enrollment record are there (the fresh window covers the rest)
        assert delivered == names, f"{len(delivered)} of {len(names)} (enrolled at {enrolled_at})"


def test_to_a_project_path_reaches_the_sessions_there(world: World) -> None:
    a, b1, b2, c = world.session("pa"), world.session("pb"), world.session("pb"), world.session("pc")
    _enroll(world, a, b1, b2, c)
    sent = send.run(world.context(a), send.SendRequest("to pb", to=str(b1.cwd)))
    assert sent.room == rooms.project_room(str(b1.cwd)) and sent.delivered == 2
    assert world.spool.listing(c.session_id, "new") == []


def test_to_a_path_without_a_live_session_lists_the_live_ones_and_the_nearest(world: World) -> None:
    a, b = world.session("pa"), world.session("web-app")
    _enroll(world, a, b)
    with pytest.raises(NotFoundError) as err:
        send.run(world.context(a), send.SendRequest("x", to=str(world.tmp / "elsewhere" / "web-app")))
    assert str(b.cwd) in str(err.value) and "did you mean" in str(err.value)
    assert world.spool.room_names(rooms.project_room(str(b.cwd))) == []


def test_persona_ordinal_names_and_unique_prefixes_resolve_at_send_time(world: World) -> None:
    # Sessions whose client gives no name: named Persona-ordinal, the persona drawn from the project.
    # The sender's client name is no persona, so it never is the one drawn for px (the path varies).
    a, b, c = world.session("px"), world.session("px"), world.session("py", name="Quillon")
    _enroll(world, a, b, c)
    persona = sessions.display_name(world.spool, world.context(a).who()).rsplit("-", 1)[0]
    sent = send.run(world.context(c), send.SendRequest("hi", to=f"{persona}-beta,{persona}-al"))
    assert set(sent.to.split(",")) == {a.session_id, b.session_id} and sent.delivered == 2
    assert set(sent.to_name.split(",")) == {f"{persona}-alpha", f"{persona}-beta"}
    with pytest.raises(UsageError, match="fits 2 sessions"):
        send.run(world.context(c), send.SendRequest("hi", to=persona))


def test_a_name_ordinal_alias_wins_over_another_sessions_persona_ordinal_alike(world: World) -> None:
    """A persona is drawn from a project path, so it can be another session's name: ``Tao-alpha`` is
    then both the alias of the session named Tao and the Persona-ordinal of another one. The name's
    own alias wins (a chat run refused ``@Tao-alpha`` as fitting two sessions when the path drew Tao)."""
    from attend import identity

    a = world.session("pa", name="Quillon")  # no persona is Quillon: A's name is never B's
    persona = identity.persona(world.context(a).who())  # drawn from pa's path; B is named after it
    b, c = world.session("pb", name=persona), world.session("pc", name="Mallory")
    _enroll(world, a, b, c)
    sent = send.run(world.context(c), send.SendRequest("hi", to=f"{persona}-alpha,Quillon-alpha"))
    assert sent.to.split(",") == [b.session_id, a.session_id] and sent.delivered == 2
    sent = send.run(world.context(c), send.SendRequest("hi", to=f"{persona}-al"))  # a prefix: names first
    assert sent.to == b.session_id


def test_a_client_name_two_sessions_share_is_refused_not_sent_to_either(world: World) -> None:
    a, b, c = world.session("pa", name="Tao"), world.session("pb", name="Tao"), world.session("pc", name="Uma")
    _enroll(world, a, b, c)
    with pytest.raises(UsageError, match=rf"fits 2 sessions.*{a.session_id}") as err:
        send.run(world.context(c), send.SendRequest("hi", to="Tao"))
    assert b.session_id in str(err.value) and "session id" in str(err.value)
    assert world.spool.listing(a.session_id, "new") == world.spool.listing(b.session_id, "new") == []
    sent = send.run(world.context(c), send.SendRequest("hi", to=a.session_id))  # the id still reaches one
    assert world.spool.listing(a.session_id, "new") == [sent.id] and world.spool.listing(b.session_id, "new") == []


def test_to_session_ids_is_direct_mail(world: World) -> None:
    a, b, c = world.session("pa"), world.session("pb"), world.session("pc")
    _enroll(world, a, b, c)
    sent = send.run(world.context(a), send.SendRequest("psst", to=b.session_id))
    assert sent.room == rooms.direct_room(b.session_id) and sent.scope == "direct"
    assert world.spool.listing(b.session_id, "new") == [sent.id] and world.spool.listing(c.session_id, "new") == []


def test_reply_threads_to_last_inbound_in_the_parents_room_addressed_to_its_sender(world: World) -> None:
    a, b = world.session("pa"), world.session("pb")
    _enroll(world, a, b)
    first = send.run(world.context(a), send.SendRequest("question?"))
    sessions.set_last_inbound(world.spool, b.session_id, first.id)
    answer = reply.run(world.context(b), reply.ReplyRequest("answer"))
    assert (answer.re, answer.room, answer.to) == (first.id, "open", a.session_id)
    assert world.spool.listing(a.session_id, "new") == [answer.id]


def test_reply_with_nothing_to_reply_to_names_send(world: World) -> None:
    a = world.session("pa")
    _enroll(world, a)
    out = a.attend("reply", "hi")
    assert out.rc == 1 and "send" in out.stderr


def test_a_human_replies_with_to_and_a_message_id(world: World) -> None:
    a, b = world.session("pa"), world.session("pb")
    _enroll(world, a, b)
    first = send.run(world.context(a), send.SendRequest("for the operator", to=str(b.cwd)))
    out = world.attend("reply", "--json", "--to", first.id, "noted")
    data = json.loads(out.stdout)
    assert out.returncode == 0 and data["re"] == first.id and data["room"] == first.room
    assert data["to"] == a.session_id and data["from_kind"] == "human"


def test_inbox_lists_newest_first_without_own_messages_and_pages(world: World) -> None:
    a, b = world.session("pa"), world.session("pb")
    _enroll(world, a, b)
    for i in range(7):
        send.run(world.context(a), send.SendRequest(f"a{i}"))
        send.run(world.context(b), send.SendRequest(f"b{i}"))
    page1 = inbox.run(world.context(b), inbox.InboxRequest(limit=3))
    assert [m.body for m in page1.messages] == ["a6", "a5", "a4"] and page1.older
    page3 = inbox.run(world.context(b), inbox.InboxRequest(limit=3, page=3))
    assert [m.body for m in page3.messages] == ["a0"] and not page3.older
    before = inbox.run(world.context(b), inbox.InboxRequest(limit=2, before=page1.messages[-1].id))
    assert [m.body for m in before.messages] == ["a3", "a2"]


def test_inbox_never_touches_flags(world: World) -> None:
    a, b = world.session("pa"), world.session("pb")
    _enroll(world, a, b)
    sent = send.run(world.context(a), send.SendRequest("x"))
    inbox.run(world.context(b), inbox.InboxRequest())
    inbox.run(world.context(b), inbox.InboxRequest(id=sent.id))
    assert world.spool.listing(b.session_id, "new") == [sent.id]


def test_inbox_reads_one_message_by_id(world: World) -> None:
    a, b = world.session("pa"), world.session("pb")
    _enroll(world, a, b)
    sent = send.run(world.context(a), send.SendRequest("the full text", on_behalf_of="alice"))
    (m,) = inbox.run(world.context(b), inbox.InboxRequest(id=sent.id)).messages
    assert (m.body, m.from_kind, m.from_id, m.on_behalf_of, m.to, m.room) == (
        "the full text",
        "agent",
        a.session_id,
        "alice",
        "*",
        "open",
    )


def test_a_human_inbox_covers_open_and_the_current_project(world: World) -> None:
    a, b = world.session("pa"), world.session("pb")
    _enroll(world, a, b)
    send.run(world.context(a), send.SendRequest("to everyone"))
    send.run(world.context(a), send.SendRequest("to pb", to=str(b.cwd)))
    here = inbox.run(world.context(cwd=b.cwd), inbox.InboxRequest())
    assert sorted(m.body for m in here.messages) == ["to everyone", "to pb"]
    there = inbox.run(world.context(cwd=a.cwd), inbox.InboxRequest())
    assert [m.body for m in there.messages] == ["to everyone"]
    everything = inbox.run(world.context(cwd=a.cwd), inbox.InboxRequest(all=True))
    assert len(everything.messages) == 2


# --json: every verb prints one document, the same dict the verb returns, with a warnings list.
SHAPES = {
    "send": {
        "id",
        "room",
        "scope",
        "to",
        "to_name",
        "re",
        "from_kind",
        "from_id",
        "delivered",
        "live",
        "parked",
        "warnings",
        "humans",
        "recipients",
    },
    "inbox": {"messages", "page", "limit", "rooms", "older", "unread", "sent", "warnings"},
    "peers": {"peers", "humans", "warnings"},
    "status": {
        "spool",
        "session_id",
        "kind",
        "origin_path",
        "resolved",
        "resolved_by",
        "display",
        "enrolled",
        "ways",
        "ordinal",
        "pending",
        "conduits",
        "channels",
        "warnings",
    },
    "whoami": {
        "session_id",
        "kind",
        "origin_path",
        "resolved",
        "resolved_by",
        "display",
        "enrolled",
        "spool",
        "warnings",
    },
}


def test_every_verb_prints_one_json_document_of_its_own_shape(world: World) -> None:
    a, b = world.session("pa"), world.session("pb")
    _enroll(world, a, b)
    docs = {verb: json.loads(a.attend(verb, "--json", *(["hi"] if verb == "send" else [])).stdout) for verb in SHAPES}
    for verb, keys in SHAPES.items():
        assert keys <= set(docs[verb]), verb
    sessions.set_last_inbound(world.spool, b.session_id, docs["send"]["id"])
    rep = json.loads(b.attend("reply", "--json", "back").stdout)
    assert set(rep) == SHAPES["send"] and rep["re"] == docs["send"]["id"]
    (msg,) = json.loads(b.attend("inbox", "--json").stdout)["messages"]
    assert {"from_kind", "from_id", "on_behalf_of", "to", "re", "room"} <= set(msg)
    peer = json.loads(a.attend("peers", "--json").stdout)["peers"]
    assert {p["session_id"] for p in peer} >= {a.session_id, b.session_id}
    assert set(docs["status"]["conduits"]) == {
        "sensor",
        "drain",
        "mcp",
        "waiter",
        "waiter_wired",
        "socket",
        "serving",
        "serves",
    }


# ---------------------------------------------------------------------- /clear: sessions.move_session


def _cleared(world: World, s: object) -> tuple[str, object]:
    """Give stand-in ``s`` a new session id, as /clear does; returns (old id, new identity)."""
    old = s.session_id  # type: ignore[attr-defined]
    s.write_record(session_id=old + "-cleared")  # type: ignore[attr-defined]
    return old, world.context(s).who()  # type: ignore[arg-type]


def test_a_clear_move_carries_deliveries_state_membership_and_registration_once(world: World) -> None:
    a, b = world.session("pa"), world.session("pb")
    _enroll(world, a)
    sessions.enroll(world.spool, world.context(b).who(), "run")
    from attend.verbs import join

    join.join_one(world.spool, world.context(b).who(), "deploy")
    first = send.run(world.context(a), send.SendRequest("one")).id
    second = send.run(world.context(a), send.SendRequest("two")).id
    sp = world.spool
    assert sp.claim_all(b.session_id, [first])
    sessions.set_last_inbound(sp, b.session_id, first)
    ordinal = sessions.registration(sp, b.session_id, str(b.cwd))["ordinal"]  # type: ignore[index]
    old, new = _cleared(world, b)
    for _ in range(2):  # idempotent: the loop, the drain and the MCP server may all run it
        sessions.move_session(sp, old, new)  # type: ignore[arg-type]
    sid = new.id  # type: ignore[attr-defined]
    assert sp.listing(sid, "claimed") == [first] and sp.listing(sid, "new") == [second]
    assert sp.listing(old, "claimed") == [] and sp.listing(old, "new") == []
    assert sessions.last_inbound(sp, sid) == first
    assert sessions.channels_of(sp, sid) == ["deploy"] and sessions.channels_of(sp, old) == []
    assert sessions.registration(sp, sid, str(b.cwd))["ordinal"] == ordinal  # type: ignore[index]
    assert sessions.is_enrolled(sp, sid) and not sessions.is_enrolled(sp, old)
    assert sessions.read_enrollment(sp, sid).ways == ("join", "run")  # type: ignore[union-attr]
    assert sessions.moved_to(sp, old) == sid


def test_after_two_clears_repair_links_what_a_dead_sender_left_in_either_old_direct_room(world: World) -> None:
    b = world.session("pb")
    _enroll(world, b)
    sp = world.spool
    first, mid = _cleared(world, b)
    sessions.move_session(sp, first, mid)  # type: ignore[arg-type]
    second, new = _cleared(world, b)
    sessions.move_session(sp, second, new)  # type: ignore[arg-type]
    # Senders that still address the old ids, each killed after its record was durable, before fan-out.
    left = [sp.publish([rooms.direct_room(old)], b"Attend-Version: 1\nFrom-Id: x\n\nleft") for old in (first, second)]
    assert sessions.repair_rooms(sp, new.id)[-2:] == [rooms.direct_room(first), rooms.direct_room(second)]  # type: ignore[attr-defined]
    assert delivery.repair(sp, new.id) == 2  # type: ignore[attr-defined]
    assert sp.listing(new.id, "new") == sorted(left)  # type: ignore[attr-defined]


def test_a_sender_that_read_the_recipients_before_a_clear_move_follows_moved_to(world: World) -> None:
    a, b = world.session("pa"), world.session("pb")
    _enroll(world, a, b)
    sp = world.spool
    old = b.session_id
    assert sessions.recipients(sp, "open") == sorted([a.session_id, old])  # the sender reads this set…
    name = sp.publish(["open"], b"Attend-Version: 1\n\nx")
    old, new = _cleared(world, b)
    sessions.move_session(sp, old, new)  # type: ignore[arg-type]
    assert sp.link_delivery(old, "open", name)  # …and links after the move
    assert sp.listing(new.id, "new") == [name]  # type: ignore[attr-defined]
    assert not (world.spool_root / "sessions" / old / "new").exists()
    assert not sp.link_delivery(old, "open", name)  # still one delivery, however often it is tried


def test_a_clear_move_keeps_an_opt_out_and_merges_the_ways_the_new_id_has(world: World) -> None:
    b = world.session("pb")
    sp = world.spool
    sessions.enroll(sp, world.context(b).who(), "join")
    sp.write_state(b"", "sessions", b.session_id, "optout")  # `scene private` under a live loop
    old, new = _cleared(world, b)
    sp.make_maildir(new.id)  # type: ignore[attr-defined]
    sp.write_state(b'{"ways": ["run"], "origin": "/x", "enrolled_at": 5}', "sessions", new.id, "enrolled")  # type: ignore[attr-defined]
    sessions.move_session(sp, old, new)  # type: ignore[arg-type]
    assert sp.exists("sessions", new.id, "optout")  # type: ignore[attr-defined]
    assert sessions.read_enrollment(sp, new.id).ways == ("join", "run")  # type: ignore[union-attr, attr-defined]


def test_joining_after_a_clear_carries_the_old_id_over_instead_of_leaving_it_enrolled(world: World) -> None:
    a, b = world.session("pa"), world.session("pb")
    _enroll(world, a, b)
    pending = send.run(world.context(a), send.SendRequest("before the clear")).id
    old, new = _cleared(world, b)
    sessions.enroll(world.spool, new, "join")  # type: ignore[arg-type]
    assert not sessions.is_enrolled(world.spool, old)
    assert world.spool.listing(new.id, "new") == [pending]  # type: ignore[attr-defined]
    after = send.run(world.context(a), send.SendRequest("after the clear"))
    assert after.delivered == 1 and world.spool.listing(new.id, "new") == [pending, after.id]  # type: ignore[attr-defined]


def test_a_clear_move_never_moves_files_out_of_a_folder_planted_as_a_symlink(world: World, tmp_path: Path) -> None:
    b = world.session("pb")
    sp = world.spool
    sessions.enroll(sp, world.context(b).who(), "join")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious").write_text("keep me")
    os.symlink(elsewhere, world.spool_root / "sessions" / b.session_id / "notify")
    old, new = _cleared(world, b)
    with pytest.raises(SpoolError, match="symlink"):
        sessions.move_session(sp, old, new)  # type: ignore[arg-type]
    assert (elsewhere / "precious").read_text() == "keep me"


def test_a_broken_recipient_folder_is_skipped_and_the_others_still_receive(world: World, tmp_path: Path) -> None:
    a, b, c = world.session("pa"), world.session("pb"), world.session("pc")
    _enroll(world, a, b, c)
    decoy = tmp_path / "decoy"
    (world.spool_root / "sessions" / b.session_id).rename(decoy)
    os.symlink(decoy, world.spool_root / "sessions" / b.session_id)  # planted: never followed
    sent = send.run(world.context(a), send.SendRequest("still goes out"))
    assert world.spool.listing(c.session_id, "new") == [sent.id]
    assert sent.delivered == 1 and os.listdir(decoy / "new") == []
    assert (
        f"session {b.session_id} skipped: refusing to follow a symlink"
        in (world.spool_root / "log" / "attend.log").read_text()
    )


def test_a_reply_to_a_project_the_sender_is_not_in_still_reaches_the_sender(world: World) -> None:
    a, b1, b2 = world.session("pa"), world.session("pb"), world.session("pb")
    _enroll(world, a, b1, b2)
    ask = send.run(world.context(a), send.SendRequest("who owns the schema?", to=str(b1.cwd)))
    answer = reply.run(world.context(b1), reply.ReplyRequest("we do", re=ask.id))
    assert world.spool.listing(a.session_id, "new") == [answer.id]  # through a's direct room, once
    assert answer.id in world.spool.listing(b2.session_id, "new")  # and the project still hears it
    assert answer.room == ask.room and answer.to == a.session_id


def test_a_session_answering_a_humans_private_message_reaches_the_humans_inbox(world: World) -> None:
    b = world.session("pb")
    _enroll(world, b)
    ask = json.loads(world.attend("send", "--json", "--to", b.session_id, "status of the deploy?").stdout)
    answer = reply.run(world.context(b), reply.ReplyRequest("green since 10:00", re=ask["id"]))
    assert answer.room == rooms.human_room("fixture-human") and answer.scope == "direct"
    first = json.loads(world.attend("inbox", "--json", cwd=world.project("elsewhere")).stdout)
    assert [m["body"] for m in first["unread"]] == ["green since 10:00"] and first["messages"] == []
    again = json.loads(world.attend("inbox", "--json", cwd=world.project("elsewhere")).stdout)
    assert again["unread"] == [] and [m["body"] for m in again["messages"]] == ["green since 10:00"]


def test_a_human_with_nothing_to_reply_to_is_told_to_name_the_message(world: World) -> None:
    out = world.attend("reply", "hi")
    assert out.returncode == 1 and "reply --re <id>" in out.stderr
