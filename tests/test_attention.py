"""Attention (issue 14): what of the pending mail reaches a model, in what order and how much. The
drain shows the threads a session takes part in first and collapses the chatter; a per-session
governor folds a fast sender into one line, loses nothing, and tells the sender to slow down; a
muted source stays in the inbox and never reaches a conduit."""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable

import pytest

from attend.domain.attention import attention
from attend.domain.core.ids import sent_form as short
from attend.domain.sessions import sessions
from attend.testing.standin import StandIn
from attend.verbs import inbox, mute, reply, send, status, unmute
from tests.support import Loop, World, drain, enroll, maildir, wait_until


def say(world: World, who: StandIn, text: str, re_: str | None = None, to: str | None = None) -> str:
    """Send (or reply) in process, as the real verbs do; a sender is enrolled first, as it must be."""
    if not sessions.is_enrolled(world.spool, who.session_id):
        enroll(world, who)
    if re_ is not None:
        return reply.run(world.context(who), reply.ReplyRequest(text, re=re_)).id
    return send.run(world.context(who), send.SendRequest(text, to=to)).id


def reason_of(world: World, s: StandIn) -> list[str]:
    out = drain(world, s.session_id)
    assert out.returncode == 0 and out.stdout, out
    return str(json.loads(out.stdout)["reason"]).split("\n")


def inbox_ids(world: World, s: StandIn) -> set[str]:
    ids: set[str] = set()
    for page in range(1, 100):
        got = inbox.run(world.context(s), inbox.InboxRequest(limit=200, page=page, mark_read=False))
        ids |= {m.id for m in got.messages}
        if not got.older:
            return ids
    raise AssertionError("the inbox never ended")


# ---------------------------------------------------------------------- a party-aware drain


def test_the_drain_shows_a_reply_to_the_session_first_and_collapses_the_chatter_one_line_per_thread(
    world: World,
) -> None:
    me, peer, a, b, c = (world.session(p) for p in ("proj", "peer", "a", "b", "c"))
    enroll(world, me)
    question = say(world, peer, "who owns the deploy?")
    mine = say(world, me, "I do", re_=question)
    reason_of(world, me)  # the question, shown and out of the way
    root = say(world, a, "lunch at noon?")
    thread = [root] + [say(world, w, f"reply {i}", re_=root) for i in range(3) for w in (b, c, a)]
    news = say(world, b, "standalone news")
    answer = say(world, peer, "thanks, then ship it", re_=mine)  # the newest, and the one for me

    rows = reason_of(world, me)
    assert rows[0] == "[attend] 12 message(s) from peers, not your user:"
    assert rows[1].endswith(f"id {short(answer)}):") and rows[2] == "  thanks, then ship it"  # first, in full
    collapsed = rows[3:]  # the first drain said the reply forms: this one ends in its last line
    assert len(collapsed) == 2, rows
    run = f"{short(thread[0])} … {short(thread[-1])}"
    assert collapsed[0].startswith("[#open] ") and f"(10 messages, ids {run}): " in collapsed[0]
    assert collapsed[0].endswith("lunch at noon?")
    assert collapsed[1].startswith("[#open] ") and collapsed[1].endswith(f"(id {short(news)}): standalone news")
    assert not any("  reply " in row for row in rows)  # no chatter body in full
    assert maildir(world, me.session_id, "new") == [] and len(maildir(world, me.session_id, "cur")) == 13


def test_a_few_channel_messages_that_fit_the_cap_are_shown_in_full_after_the_party_thread(world: World) -> None:
    me, peer, a = world.session("proj"), world.session("peer"), world.session("a")
    enroll(world, me)
    chatter = say(world, a, "anyone seen the flaky test?")
    direct = say(world, peer, "a word?", to=me.session_id)
    rows = reason_of(world, me)
    heads = [row for row in rows if row.startswith("[") and ", id " in row]
    assert [h.split(", id ")[1].split(")")[0] for h in heads] == [
        short(direct),
        short(chatter),
    ]  # party first, then the rest


# ---------------------------------------------------------------------- folding and backpressure


def test_a_fast_sender_folds_into_one_drain_line_nothing_is_lost_and_its_send_is_told_to_slow_down(
    world: World,
) -> None:
    receivers = [world.session(f"r{i}") for i in range(3)]
    loud, friend = world.session("loud"), world.session("friend")
    for s in (*receivers, loud):
        enroll(world, s)
    flood = [say(world, loud, f"status {i}") for i in range(20)]
    direct = say(world, friend, "are you free?", to=receivers[0].session_id)

    rows = reason_of(world, receivers[0])
    assert rows[0] == "[attend] 21 message(s) from peers, not your user:"
    assert rows[1].endswith(f"id {short(direct)}):")  # addressed mail is never folded
    folded = [row for row in rows if row.startswith("[folded] ")]
    assert (
        len(folded) == 1
        and f"sent 20 fast (ids {short(flood[0])} … {short(flood[-1])}; attend inbox --from " in folded[0]
    )
    assert not any(row == "  status 3" for row in rows)
    for r in receivers[1:]:
        assert any(row.startswith("[folded] ") for row in reason_of(world, r))
    for r in receivers:  # claimed and seen as far as the digest said, and every one in the inbox
        assert maildir(world, r.session_id, "new") == [] and maildir(world, r.session_id, "claimed") == []
        assert set(flood) <= inbox_ids(world, r)

    out = loud.attend("send", "one more")
    assert out.rc == 0, out.stderr
    assert "attend: warning: your messages are being folded by 3 session(s); slow down" in out.stderr
    quiet = friend.attend("send", "hello")
    assert "slow down" not in quiet.stderr


@pytest.mark.slow  # a stress run: the full suite (CI) has it, the developer loop leaves it out
def test_a_flood_of_500_on_open_reaches_three_live_loops_as_at_most_the_governors_share_of_lines(
    world: World, loops: Callable[[StandIn], Loop]
) -> None:
    group = [world.session(f"live{i}") for i in range(3)]
    running = [loops(s) for s in group]
    loud = world.session("loud")
    enroll(world, loud)
    start = time.monotonic()
    flood = [say(world, loud, f"tick {i}") for i in range(500)]  # as fast as the verb goes: a few seconds
    for s in group:
        wait_until(lambda s=s: len(maildir(world, s.session_id, "cur")) == 500, f"every tick seen by {s.session_id}")
    # The governor's share over the span the loops could have shown anything in (measured here, so a
    # slow machine only loosens it): the burst, then one line per cooldown, never above the limit.
    share = min(attention.LIMIT, attention.BURST + math.ceil((time.monotonic() - start) / attention.COOLDOWN) + 1)
    for loop, s in zip(running, group, strict=True):
        assert loop.stop() == 0
        lines = [line for line in loop.lines() if "tick" in line or " folded " in line or "new messages" in line]
        assert len(lines) <= share, (share, lines)  # whatever the sender does
        counted = sum(
            int(m[1]) if (m := re.search(r"\] (\d+) (?:messages from|new messages)", ln)) else 1 for ln in lines
        )
        assert counted == 500, lines  # each tick counted once: in its own line or in a fold
        assert set(flood) <= inbox_ids(world, s)


# ---------------------------------------------------------------------- mutes


def test_a_muted_peer_stays_in_the_inbox_but_reaches_no_conduit_until_unmuted(
    world: World, loops: Callable[[StandIn], Loop]
) -> None:
    me, noisy, friend = world.session("proj"), world.session("noisy"), world.session("friend")
    enroll(world, noisy)
    loop = loops(me)  # the stand-in runs one command at a time: the rest goes through the verbs in process
    muted = mute.run(world.context(me), mute.MuteRequest(noisy.session_id, "1h"))
    assert muted.key == f"peer:{noisy.session_id}" and muted.until is not None
    listed = status.run(world.context(me), status.StatusRequest()).mutes
    assert [m.split(" until ")[0] for m in listed] == [noisy.session_id]
    hushed = say(world, noisy, "buy my tool", to=me.session_id)
    say(world, friend, "the build is green")
    loop.wait_for(lambda lines: any("the build is green" in line for line in lines), "the friend's message")
    wait_until(lambda: maildir(world, me.session_id, "new") == [], "the muted message taken off new/")
    assert not any("buy my tool" in line for line in loop.lines())
    assert hushed in inbox_ids(world, me)
    assert unmute.run(world.context(me), unmute.UnmuteRequest(noisy.session_id)).mutes == []
    say(world, noisy, "second try", to=me.session_id)
    loop.wait_for(lambda lines: any("second try" in line for line in lines), "the unmuted peer")
    assert loop.stop() == 0


def test_the_drain_marks_muted_mail_seen_and_says_nothing_when_that_is_all_there_is(world: World) -> None:
    me, chan = world.session("proj"), world.session("chatty")
    enroll(world, me)
    assert me.attend("mute", "#open").rc == 0
    say(world, chan, "nobody asked")
    out = drain(world, me.session_id)
    assert out.returncode == 0 and out.stdout == ""
    assert maildir(world, me.session_id, "new") == [] and len(maildir(world, me.session_id, "cur")) == 1


def test_the_plain_drain_honours_mute_too_and_a_bare_reply_never_threads_under_muted_mail(world: World) -> None:
    me, friend, noisy = world.session("proj"), world.session("friend"), world.session("noisy")
    enroll(world, me)
    asked = say(world, friend, "is the build green?", to=me.session_id)
    assert "is the build green?" in me.attend("inbox", "--drain").stdout  # the plain form, shown
    assert me.attend("mute", noisy.session_id).rc == 0
    say(world, noisy, "buy my tool", to=me.session_id)
    out = me.attend("inbox", "--drain")
    assert out.rc == 0 and "buy my tool" not in out.stdout, out.stdout
    assert "0 message(s) drained (1 muted" in out.stdout
    assert maildir(world, me.session_id, "new") == []  # marked seen, as the hook form does
    answered = json.loads(me.attend("reply", "--json", "yes, green").stdout)
    assert answered["re"] == asked  # not the muted one


def test_bad_mute_input_exits_2_and_writes_nothing(world: World) -> None:
    me = world.session("proj")
    enroll(world, me)
    for args in (("mute", "#no such"), ("mute", "#open", "--for", "soon"), ("mute", ""), ("unmute", "#open")):
        out = me.attend(*args)
        assert out.rc in (1, 2) and len(out.stderr.strip().splitlines()) == 1, (args, out)
        assert not (world.spool_root / "sessions" / me.session_id / attention.MUTES).exists()
    assert me.attend("unmute", "#open").rc == 1  # nothing muted: a failure, not a usage error


def test_the_trailer_ranks_what_the_session_takes_part_in_before_open_traffic(world: World) -> None:
    from attend.domain.attention import trailer

    me, peer = world.session("proj"), world.session("peer")
    enroll(world, me)
    who = world.context(me).who()
    trailer.subscribe(world.spool, who, ["open"], None)
    chatter = say(world, peer, "anyone around?")
    direct = say(world, peer, "a word?", to=me.session_id)
    items = trailer.pending(world.spool, who)
    assert [(i.kind, i.id) for i in items] == [("direct", direct), ("open", chatter)]


def test_a_reply_with_no_id_threads_to_the_last_shown_message_never_to_muted_mail(world: World) -> None:
    me, friend, noisy = world.session("proj"), world.session("friend"), world.session("noisy")
    enroll(world, me)
    asked = say(world, friend, "is the build green?", to=me.session_id)
    assert any("is the build green?" in line for line in reason_of(world, me))  # shown by the drain
    mute.run(world.context(me), mute.MuteRequest(noisy.session_id))
    hushed = say(world, noisy, "buy my tool", to=me.session_id)
    out = drain(world, me.session_id)
    assert out.returncode == 0 and out.stdout == ""  # muted mail: marked seen, never shown
    assert sessions.last_inbound(world.spool, me.session_id) == asked
    answered = reply.run(world.context(me), reply.ReplyRequest("yes, green"))
    assert answered.re == asked and answered.re != hushed


def test_the_loop_never_records_muted_mail_as_the_message_a_reply_answers(
    world: World, loops: Callable[[StandIn], Loop]
) -> None:
    me, friend, noisy = world.session("proj"), world.session("friend"), world.session("noisy")
    enroll(world, noisy)
    loop = loops(me)
    asked = say(world, friend, "is the build green?", to=me.session_id)
    loop.wait_for(lambda lines: any("is the build green?" in line for line in lines), "the friend's message")
    mute.run(world.context(me), mute.MuteRequest(noisy.session_id))
    say(world, noisy, "buy my tool", to=me.session_id)
    wait_until(lambda: len(maildir(world, me.session_id, "cur")) == 2, "the muted message marked seen")
    assert sessions.last_inbound(world.spool, me.session_id) == asked
    assert loop.stop() == 0
