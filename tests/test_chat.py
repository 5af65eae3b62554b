"""`attend chat`, the human's seat: driven in-process by Textual's own harness (App.run_test and Pilot),
pinned by snapshots at 80x24 and 120x40, and run once as the real binary under tmux.

Invariants: what chat sends goes through the send and reply verbs (the same record `attend send`
writes); chat never claims a session's delivery and marks the human's mailbox read only for what
was on screen; bad input sends nothing; textual is imported only when `chat` runs.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import select
import shlex
import signal
import struct
import subprocess
import sys
import termios
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from attend.chat.app import ChatApp
from attend.domain.core import envelope, rooms
from attend.domain.sessions import sessions
from attend.hosts.base import proc_start
from attend.testing.standin import StandIn
from attend.verbs import chat as chat_verb
from attend.verbs import join as join_verb
from attend.verbs import reply as reply_verb
from attend.verbs import send as send_verb
from tests.support import (
    ATTEND,
    DEADLINE,
    T1,
    Loop,
    World,
    as_codex,
    has,
    human_mailbox,
    maildir,
    payload,
    require_tools,
    wait_until,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def colour(monkeypatch: pytest.MonkeyPatch) -> None:
    """The app reads NO_COLOR when it is built: the snapshots are in colour, whatever the caller's shell."""
    monkeypatch.delenv("NO_COLOR", raising=False)


def pinned(_at: float) -> str:
    return "09:30"  # a snapshot must not depend on the hour


def seat(world: World, room: str | None = None) -> tuple[Any, chat_verb.Seat]:
    ctx = world.context()
    return ctx, chat_verb.run(ctx, chat_verb.ChatRequest(room))


def app_for(world: World, room: str | None = None, live: bool = True) -> ChatApp:
    ctx, s = seat(world, room)
    return ChatApp(ctx, s, clock=pinned, live=live)


async def settle(pilot: Any, check: Callable[[], object], what: str) -> None:
    """wait_until for the app's own event loop: poll ``check`` between pauses; the deadline catches a
    hang, and its message shows the status line (a refusal there says why)."""
    import time

    end = time.monotonic() + DEADLINE
    while not check():
        if time.monotonic() > end:
            status = pilot.app.query_one("#status")
            raise AssertionError(f"timed out waiting for {what}; the status line: {str(status.render())!r}")
        await pilot.pause(0.02)


BAR = "▌"  # the left edge of the pane with the keys


def screen_lines(app: ChatApp) -> list[str]:
    """The whole screen as plain text, line by line: what a terminal with no colour shows."""
    import io

    from rich.console import Console

    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True, force_terminal=True)
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text().splitlines()


def screen_text(app: ChatApp) -> str:
    """What the conversation pane holds, as plain text."""
    return app.conversation_text()


def enrolled(world: World, project: str, name: str) -> StandIn:
    s = world.session(project, name=name)
    sessions.enroll(world.spool, world.context(s).who(), "run")
    return s


def crew(world: World) -> tuple[StandIn, StandIn]:
    """Hana and Tao, enrolled, both in #crew (a channel needs a member besides the sender)."""
    hana, tao = enrolled(world, "api", "Hana"), enrolled(world, "web", "Tao")
    for s in (hana, tao):
        join_verb.run(world.context(s), join_verb.JoinRequest("crew"))
    return hana, tao


def bodies(world: World, room: str) -> list[str]:
    spool = world.spool
    return [envelope.parse(spool.read_record(room, n)).body for n in spool.room_names(room)]


# ---------------------------------------------------------------------- the harness drives it


async def test_arrow_keys_switch_rooms_and_show_that_rooms_messages(world: World) -> None:
    hana, _ = crew(world)
    send_verb.run(world.context(hana), send_verb.SendRequest("open news"))
    send_verb.run(world.context(hana), send_verb.SendRequest("crew news", channel="crew"))
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.current.label == "#open" and "open news" in screen_text(app)
        assert "crew news" not in screen_text(app)
        labels = [r.label for r in app.rooms.values()]
        assert labels[:3] == ["#open", "@fixture-human", "#crew"]
        await pilot.press("tab", "down", "down")  # Tab from the compose line to the rooms
        await settle(pilot, lambda: app.current.label == "#crew", "the #crew room")
        assert "crew news" in screen_text(app) and "open news" not in screen_text(app)


async def test_tab_completes_a_live_peer_and_the_name_addresses_the_message(world: World) -> None:
    hana = enrolled(world, "api", "Hana")
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: "Hana" in app.peer_names, "the peers pane")
        await pilot.press("@", "H", "a", "tab")
        compose = app.query_one("#compose")
        assert compose.text == "@Hana "  # type: ignore[attr-defined]
        await pilot.press(*"a word?", "enter")
        direct = rooms.direct_room(hana.session_id)
        await settle(pilot, lambda: world.spool.room_names(direct), "the direct record")
        assert bodies(world, direct) == ["a word?"]
        assert len(maildir(world, hana.session_id, "new")) == 1  # fanned out as send does
        assert compose.text == ""  # type: ignore[attr-defined]
        said = str(app.query_one("#status").render())  # the recipient by its name, never its id
        assert said.startswith("sent to Hana: 1 recipient") and hana.session_id not in said, said


async def test_r_replies_to_the_chosen_message_and_it_shows_under_it(world: World) -> None:
    hana = enrolled(world, "api", "Hana")
    first = send_verb.run(world.context(hana), send_verb.SendRequest("first topic"))
    send_verb.run(world.context(hana), send_verb.SendRequest("second topic"))
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("shift+tab", "up")  # to the conversation; the newest is chosen, up is the first
        assert app.selected() is not None and app.selected().body == "first topic"  # type: ignore[union-attr]
        await pilot.press("r", *"on it", "enter")
        await settle(pilot, lambda: len(app.shown) == 3, "the reply on screen")
        reply = envelope.parse(world.spool.read_record("open", world.spool.room_names("open")[-1]))
        assert reply.re == first.id and reply.body == "on it"
        rows = app.rows
        assert [r.msg.body for r in rows] == ["first topic", "on it", "second topic"]  # threaded under it
        assert rows[1].depth == 1 and "↳ re Hana: first topic" in screen_text(app)


async def test_a_message_sent_by_another_process_shows_while_the_app_runs(world: World) -> None:
    hana = enrolled(world, "api", "Hana")
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.feed is not None
        await settle(pilot, app.feed.ready.is_set, "the watches")
        assert "from elsewhere" not in screen_text(app)  # positive control for the wait below
        r = hana.attend("send", "from elsewhere")
        assert r.rc == 0, r.stderr
        await settle(pilot, lambda: "from elsewhere" in screen_text(app), "the message on screen")


async def test_a_hostile_body_and_name_reach_the_screen_escaped_never_as_styles_or_escapes(world: World) -> None:
    hana = enrolled(world, "api", "Hana")
    send_verb.run(world.context(hana), send_verb.SendRequest("\x1b[2Jwiped [bold red]fake[/] \u202egnp.exe"))
    app = app_for(world)
    async with app.run_test(size=(80, 24)):
        shown = screen_text(app)
        assert "\\x1b[2Jwiped" in shown and "[bold red]fake[/]" in shown and "\\u202egnp.exe" in shown
        assert "\x1b" not in shown and "\u202e" not in shown


async def test_a_message_to_another_room_counts_as_unread_there(world: World) -> None:
    hana, _ = crew(world)
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.feed is not None
        await settle(pilot, app.feed.ready.is_set, "the watches")
        send_verb.run(world.context(hana), send_verb.SendRequest("psst", channel="crew"))
        await settle(pilot, lambda: app.rooms["@crew"].unread == 1, "the unread count")
        assert "psst" not in screen_text(app)


async def test_a_direct_conversation_is_what_the_human_and_that_session_wrote_each_other(world: World) -> None:
    hana, tao = enrolled(world, "api", "Hana"), enrolled(world, "web", "Tao")
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.feed is not None
        await settle(pilot, app.feed.ready.is_set, "the watches")
        await settle(pilot, lambda: "Hana" in app.peer_names, "the peers pane")
        await pilot.press(*"@Hana review please", "enter")
        direct = rooms.direct_room(hana.session_id)
        await settle(pilot, lambda: direct in app.rooms, "the conversation in the rooms pane")
        assert app.rooms[direct].label == "@Hana"
        asked = world.spool.room_names(direct)[-1]
        reply_verb.run(world.context(hana), reply_verb.ReplyRequest("done, one nit", re=asked))
        other = send_verb.run(world.context(tao), send_verb.SendRequest("tao to hana, not yours", to=hana.session_id))
        feed = app.feed
        await settle(pilot, lambda: other.id in feed.seen[direct] and app.rooms[direct].unread, "both handed over")
        await pilot.pause()
        assert app.rooms[direct].unread == 1  # the reply; Tao's mail to Hana is not this conversation
        app.show_room(app.rooms[direct])
        await pilot.pause()
        assert [r.msg.body for r in app.rows] == ["review please", "done, one nit"]


async def test_an_empty_line_sends_nothing(world: World) -> None:
    enrolled(world, "api", "Hana")
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter", "space", "space", "enter")
        await pilot.press("@", "H", "a", "tab", "enter")  # an address and no body
        await pilot.pause()
        assert world.spool.room_names("open") == []
        assert all(not world.spool.room_names(r) for r in world.spool.rooms())


async def test_an_unknown_name_is_an_error_inline_and_nothing_is_sent(world: World) -> None:
    enrolled(world, "api", "Hana")
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"@Nobody hello", "enter")
        await pilot.pause()
        status = app.query_one("#status")
        assert "no session or human named 'Nobody'" in str(status.render())
        assert status.has_class("error")
        assert all(not world.spool.room_names(r) for r in world.spool.rooms())
        assert app.query_one("#compose").text == "@Nobody hello"  # type: ignore[attr-defined]  # kept for fixing


@pytest.mark.parametrize(
    ("line", "fix"),
    [
        ("@ hello", "write @name or #channel, a space after each (@a @b hello)"),
        ("#nowhere hello", "no such channel (channels with members to hear it: none); or send to #open"),
        ("@nobody hello", "write to a human of your spool (attend peers lists them)"),
    ],
    ids=["not-an-address", "no-such-channel", "another-account"],
)
async def test_a_refusal_is_on_screen_whole_at_80x24_with_how_to_fix_it(world: World, line: str, fix: str) -> None:
    hana = enrolled(world, "api", "Hana")
    for body in [f"older {i}" for i in range(12)] + ["the newest message"]:  # more than the pane holds
        send_verb.run(world.context(hana), send_verb.SendRequest(body))
    app = app_for(world, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*line, "enter")
        await pilot.pause()
        status = app.query_one("#status")
        said = str(status.render())
        assert status.has_class("error") and said.endswith(fix), said
        box = status.content_region
        shown = " ".join(row[box.x : box.right] for row in screen_lines(app)[box.y : box.bottom])
        assert "".join(said.split()) in "".join(shown.split()), (said, shown)  # wrapped at spaces, never cut
        assert "…" not in shown, shown
        # The conversation gave the refusal its rows and still ends at the newest message.
        assert any("the newest message" in row for row in screen_lines(app)[: box.y]), screen_lines(app)
    assert {r: len(world.spool.room_names(r)) for r in world.spool.rooms()} == {"open": 13}  # nothing was sent


async def test_a_refusal_leaves_once_the_refused_line_is_cleared(world: World) -> None:
    enrolled(world, "api", "Hana")
    app = app_for(world, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"@Nobody hello", "enter")
        await pilot.pause()
        status = app.query_one("#status")
        assert status.has_class("error")
        await pilot.press("backspace")  # still the refused line, being fixed: the reason stays
        await pilot.pause()
        assert status.has_class("error")
        await pilot.press(*["backspace"] * len("@Nobody hell"))
        await pilot.pause()
        assert app.query_one("#compose").text == ""  # type: ignore[attr-defined]
        assert not status.has_class("error")
        assert str(status.render()) == app.addressed_to()  # the hint again: where a line goes


async def test_a_multi_line_body_is_sent_whole(world: World) -> None:
    enrolled(world, "api", "Hana")
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"line one", "ctrl+j", *"line two", "enter")
        await settle(pilot, lambda: world.spool.room_names("open"), "the record")
        assert bodies(world, "open") == ["line one\nline two"]


async def test_chat_marks_the_mailbox_read_only_as_far_as_it_was_on_screen_and_claims_no_delivery(
    world: World,
) -> None:
    hana = enrolled(world, "api", "Hana")
    tao = enrolled(world, "web", "Tao")
    human_mailbox(world)  # the human has used the bus: a session may write to it
    send_verb.run(world.context(hana), send_verb.SendRequest("for the human", to="fixture-human"))
    send_verb.run(world.context(hana), send_verb.SendRequest("for Tao", to=tao.session_id))
    mailbox = world.spool_root / "humans" / "fixture-human"
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert len(os.listdir(mailbox / "new")) == 1  # on #open: the mailbox was not on screen
        assert app.rooms[rooms.human_room("fixture-human")].unread == 1
        await pilot.press("tab", "down")
        await settle(pilot, lambda: app.current.kind == "mailbox", "the mailbox")
        assert "for the human" in screen_text(app)
        assert os.listdir(mailbox / "new") == [] and len(os.listdir(mailbox / "cur")) == 1
        assert app.rooms[rooms.human_room("fixture-human")].unread == 0
        for label in [r.room for r in app.seat.rooms]:  # every room shown once
            app.show_room(app.rooms[label])
        await pilot.pause()
    # Tao's delivery was never claimed: still new, for Tao's own conduits.
    assert len(maildir(world, tao.session_id, "new")) == 1
    assert maildir(world, tao.session_id, "claimed") == [] and maildir(world, tao.session_id, "cur") == []


async def test_folding_a_thread_hides_its_replies_and_unfolding_shows_them(world: World) -> None:
    hana = enrolled(world, "api", "Hana")
    root = send_verb.run(world.context(hana), send_verb.SendRequest("root"))
    reply_verb.run(world.context(), reply_verb.ReplyRequest("answer", re=root.id))
    send_verb.run(world.context(hana), send_verb.SendRequest("later"))
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("shift+tab", "up")  # to the conversation; choose the answer
        assert [r.msg.body for r in app.rows] == ["root", "answer", "later"]
        await pilot.press("f")
        assert [r.msg.body for r in app.rows] == ["root", "later"]
        assert "▸ 1 reply" in screen_text(app)
        await pilot.press("f")
        assert [r.msg.body for r in app.rows] == ["root", "answer", "later"]
        assert "▾ 1 reply" in screen_text(app)


async def test_f1_opens_the_help_and_q_quits_only_from_a_list(world: World) -> None:
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f1")
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        assert type(app.screen).__name__ != "HelpScreen"
        await pilot.press("q", "question_mark")  # in compose, q and ? are letters
        assert app.query_one("#compose").text == "q?"  # type: ignore[attr-defined]
        assert app.is_running
        await pilot.press("escape", "question_mark")  # out of compose, to the conversation: ? is help
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape", "q")
        await settle(pilot, lambda: not app.is_running, "the app to quit")


async def test_the_peers_pane_shows_what_a_session_holds(world: World, loops: Callable[..., Loop]) -> None:
    hana = world.session("api", name="Hana")
    loops(hana)
    leased = hana.attend("lease", "src/routes", "--reason", "reshaping")
    assert leased.rc == 0, leased.stderr
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: "holds src/routes" in str(app.query_one("#peers").render()), "Hana's lease")


async def test_ctrl_q_quits_from_the_compose_line(world: World) -> None:
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"half a sentence", "ctrl+q")
        await settle(pilot, lambda: not app.is_running, "the app to quit")


async def test_the_peers_pane_shows_a_session_that_starts_while_the_app_runs(
    world: World, loops: Callable[..., Loop]
) -> None:
    hana = world.session("api", name="Hana")
    loops(hana)  # its loop writes the presence records
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: "Hana" in str(app.query_one("#peers").render()), "Hana in the pane")
        assert "Zed" not in str(app.query_one("#peers").render())
        world.session("web", name="Zed")
        await settle(pilot, lambda: "Zed" in str(app.query_one("#peers").render()), "Zed in the pane")


async def test_no_color_in_the_environment_turns_colour_off(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    assert not app_for(world, live=False).no_color  # positive control
    monkeypatch.setenv("NO_COLOR", "1")
    app = app_for(world, live=False)
    async with app.run_test(size=(80, 24)):
        assert app.no_color


# ---------------------------------------------------------------------- the way people use chat apps


def as_human(world: World, user: str) -> Any:
    """A library context acting as another human at a terminal (its own USER), who made its mailbox
    there before (the first use's confirmation: attend.domain.sessions.humans)."""
    from attend.domain.sessions.context import Context

    world.mint_human(user)
    return Context(spool=world.spool, env={**world.env, "USER": user}, cwd=str(world.project("proj")), pid=os.getpid())


async def test_typing_at_start_goes_to_the_compose_line_and_its_letters_run_no_command(world: World) -> None:
    hana = enrolled(world, "api", "Hana")
    send_verb.run(world.context(hana), send_verb.SendRequest("a thread to fold"))
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        text = "quick: fold, reply, quit?"  # f, r, q and ? are commands in a list, letters here
        await pilot.press(*text, "enter")
        await settle(pilot, lambda: len(world.spool.room_names("open")) == 2, "the record")
        assert bodies(world, "open")[-1] == text
        assert app.is_running and type(app.screen).__name__ != "HelpScreen" and app.replying is None


async def test_commands_work_from_the_compose_line_with_ctrl_and_the_footer_shows_them(world: World) -> None:
    hana = enrolled(world, "api", "Hana")
    root = send_verb.run(world.context(hana), send_verb.SendRequest("root"))
    reply_verb.run(world.context(), reply_verb.ReplyRequest("answer", re=root.id))
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        footer = screen_lines(app)[-1]
        for key in ("^q quit", "f1 help", "^r reply", "^t fold", "^o open"):
            assert key in footer, footer
        await pilot.press("ctrl+t")  # the chosen message is the newest, the answer: its thread folds
        assert [r.msg.body for r in app.rows] == ["root"]
        await pilot.press("ctrl+t", "ctrl+r", *"thanks", "enter")
        await settle(pilot, lambda: len(world.spool.room_names("open")) == 3, "the reply")
        reply = envelope.parse(world.spool.read_record("open", world.spool.room_names("open")[-1]))
        assert reply.body == "thanks" and reply.re is not None
        await pilot.press("ctrl+q")
        await settle(pilot, lambda: not app.is_running, "the app to quit")


@pytest.mark.parametrize("no_color", [False, True], ids=["colour", "NO_COLOR"])
async def test_the_pane_with_the_keys_has_a_bar_down_its_edge_that_is_not_colour_alone(
    world: World, monkeypatch: pytest.MonkeyPatch, no_color: bool
) -> None:
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    send_verb.run(world.context(enrolled(world, "api", "Hana")), send_verb.SendRequest("hello"))
    app = app_for(world, live=False)

    def barred() -> set[str]:
        """Which panes have the bar: the rooms (column 0), the conversation and the compose line."""
        lines = screen_lines(app)
        edge = lines[0].index("│") + 1
        compose = len(lines) - 2  # above the footer; the status line is above it
        out = set()
        if any(line.startswith(BAR) for line in lines[1:10]):
            out.add("rooms")
        if any(line[edge : edge + 1] == BAR for line in lines[1 : compose - 1]):
            out.add("conversation")
        if lines[compose][edge : edge + 1] == BAR:
            out.add("compose")
        return out

    async with app.run_test(size=(80, 24)) as pilot:
        assert app.no_color == no_color
        assert barred() == {"compose"}
        await pilot.press("tab")
        assert barred() == {"rooms"}
        await pilot.press("tab")
        assert barred() == {"conversation"}


async def test_without_colour_the_chosen_room_and_message_are_in_reverse_video(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import re

    from rich.console import Console

    monkeypatch.setenv("NO_COLOR", "1")
    hana = enrolled(world, "api", "Hana")
    for body in ("first", "second"):
        send_verb.run(world.context(hana), send_verb.SendRequest(body))
    app = app_for(world, live=False)

    def reversed_rows() -> list[str]:
        """The screen's rows with a reverse-video cell in them, as plain text."""
        console = Console(width=80, height=24, file=io.StringIO(), record=True, force_terminal=True)
        console.print(app.screen._compositor.render_update(full=True))
        styled = console.export_text(styles=True).splitlines()
        plain = screen_lines(app)
        return [plain[i] for i, line in enumerate(styled) if re.search(r"\x1b\[([0-9;]*;)?7[;m]", line)]

    async with app.run_test(size=(80, 24)) as pilot:
        rows = reversed_rows()
        assert any(row.startswith(" #open ") for row in rows), rows  # the room on screen
        assert any("second" in row for row in rows) and not any("first" in row for row in rows), rows
        await pilot.press("shift+tab", "up")  # choose the older message
        rows = reversed_rows()
        assert any("first" in row for row in rows) and not any("second" in row for row in rows), rows


async def test_a_project_room_is_named_by_its_project_and_two_of_one_name_are_told_apart(world: World) -> None:
    enrolled(world, "web", "Hana")
    enrolled(world, "other/web", "Tao")
    send_verb.run(world.context(), send_verb.SendRequest("one", to=str(world.project("web"))))
    send_verb.run(world.context(), send_verb.SendRequest("two", to=str(world.project("other/web"))))
    app = app_for(world, live=False)
    async with app.run_test(size=(80, 24)):
        labels = sorted(r.label for r in app.rooms.values() if r.kind == "project")
        assert labels == ["other/web", "projects/web"]
        side = [line[:26] for line in screen_lines(app)]
        assert any("projects/web project" in line for line in side), side
        assert not any("<" in line or "p-" in line for line in side), side


async def test_a_sessions_channels_are_cut_not_wrapped_onto_a_line_that_reads_as_a_peer(world: World) -> None:
    hana = enrolled(world, "api", "Hana")
    for n in range(6):
        join_verb.run(world.context(hana), join_verb.JoinRequest(f"channel-{n}"))
    app = app_for(world, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, lambda: "Hana" in str(app.query_one("#peers").render()), "the peers pane")
        lines = [line[:25].rstrip() for line in screen_lines(app)]
        pane = lines[lines.index(" Peers") + 1 : -1]  # to the footer
        peers = [line for line in pane if line.strip() and not line.startswith("   ")]
        assert peers == [" Hana idle"], pane  # the channels' line is one line, indented, cut
        assert any(line.startswith("   claude in api #chann") and line.endswith("…") for line in pane), pane


async def test_each_peer_names_the_client_it_runs_in_on_its_cut_second_line(world: World) -> None:
    hana = enrolled(world, "api", "Hana")
    for n in range(6):
        join_verb.run(world.context(hana), join_verb.JoinRequest(f"channel-{n}"))
    # A live process recorded as a Gemini CLI session, as attend's SessionStart hook records one.
    gem = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        records = world.home / ".gemini" / "attend" / "sessions"
        records.mkdir(parents=True)
        record = {"pid": gem.pid, "sessionId": "g-chat", "cwd": str(world.project("web")), "host": "gemini"}
        record["procStart"] = proc_start(gem.pid)
        (records / f"{gem.pid}.json").write_text(json.dumps(record))
        app = app_for(world, live=False)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot, lambda: "gemini" in str(app.query_one("#peers").render()), "the gemini peer")
            lines = [line[:25].rstrip() for line in screen_lines(app)]
            pane = lines[lines.index(" Peers") + 1 : -1]
            assert "   gemini in web" in pane, pane
            # The client leads the line; the channels after it are cut, never wrapped.
            assert any(line.startswith("   claude in api #chann") and line.endswith("…") for line in pane), pane
            assert not any(line.startswith(" #channel") or line.startswith("   #channel") for line in pane), pane
    finally:
        gem.kill()
        gem.wait(timeout=60)


async def test_a_message_header_names_the_client_an_agent_sender_runs_in(world: World) -> None:
    # A Codex thread joins #crew and writes there, through the real binary under a process named codex.
    joined = as_codex(world, [T1], [ATTEND, "join", "crew"], {"CODEX_THREAD_ID": T1})
    assert joined.returncode == 0, joined.stderr
    enrolled(world, "web", "Tao")
    join_verb.run(world.context(), join_verb.JoinRequest("crew"))  # the human hears #crew
    sent = as_codex(world, [T1], [ATTEND, "send", "--channel", "crew", "from codex"], {"CODEX_THREAD_ID": T1})
    assert sent.returncode == 0, sent.stderr
    send_verb.run(world.context(), send_verb.SendRequest("from the human", channel="crew"))
    app = app_for(world, room="#crew", live=False)
    async with app.run_test(size=(80, 24)):
        heads = {row.msg.body: head.plain for row, (head, _, _) in zip(app.rows, app.parts, strict=True)}
        assert heads["from codex"].endswith(" codex agent"), heads
        assert heads["from the human"].endswith(" fixture-human human"), heads  # a human has no client
        assert any(line.rstrip().endswith(" codex agent") for line in screen_lines(app)), screen_lines(app)


async def test_two_humans_each_see_their_conversation_in_a_room_of_its_own(world: World) -> None:
    alice = as_human(world, "alice")
    chat_verb.run(alice, chat_verb.ChatRequest())  # alice used the bus: she can be addressed
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.feed is not None
        await settle(pilot, app.feed.ready.is_set, "the watches")
        await pilot.press(*"@alice lunch?", "enter")
        room = rooms.human_room("alice")
        await settle(pilot, lambda: room in app.rooms, "the conversation with alice in the rooms pane")
        assert app.rooms[room].label == "@alice" and app.rooms[room].kind == "direct"
        # Hers with me: the same conversation, seen from her seat.
        theirs = {r.room: r for r in chat_verb.rooms_of(world.spool, "alice")}
        mine = theirs[rooms.human_room("fixture-human")]
        assert mine.label == "@fixture-human" and mine.kind == "direct"
        assert [m.body for m in chat_verb.messages(world.spool, mine, "alice")] == ["lunch?"]
        send_verb.run(alice, send_verb.SendRequest("yes, 12:30", to="fixture-human"))
        await settle(pilot, lambda: app.rooms[room].unread == 1, "her answer counted in the room")
        await pilot.press("tab", *["down"] * list(app.rooms).index(room))
        await settle(pilot, lambda: app.current.room == room, "the conversation on screen")
        assert [r.msg.body for r in app.rows] == ["lunch?", "yes, 12:30"]
        await pilot.press("tab", "tab", *"see you", "enter")  # a plain line here goes to her
        await settle(pilot, lambda: len(app.shown) == 3, "the answer in the conversation")
    assert [m.body for m in chat_verb.messages(world.spool, mine, "alice")] == ["lunch?", "yes, 12:30", "see you"]


@pytest.mark.parametrize(
    ("line", "to"),
    [
        ("   @Hana-alpha after spaces", ["Hana"]),
        ("@Hana-alpha @Tao-alpha to both", ["Hana", "Tao"]),
        ("@Hana-alpha, @Tao-alpha: with commas", ["Hana", "Tao"]),
        ("@Hana-alpha,@Tao-alpha no space", ["Hana", "Tao"]),
        ("@Hana-alpha@Tao-alpha run together", None),
        ("@ Hana-alpha a bare at", None),
        ("@Hana-alpha,oops", None),
        ("#crew@Hana-alpha both", None),
    ],
)
async def test_a_line_addressed_at_its_start_goes_where_it_says_or_is_refused(
    world: World, line: str, to: list[str] | None
) -> None:
    hana, tao = crew(world)
    who = {"Hana": hana, "Tao": tao}
    app = app_for(world, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*line, "enter")
        await pilot.pause()
        status = app.query_one("#status")
        if to is None:
            assert status.has_class("error") and "not an address" in str(status.render())
            assert app.query_one("#compose").text == line  # type: ignore[attr-defined]  # kept for fixing
        else:
            await settle(pilot, lambda: "sent to" in str(status.render()), "the send")
    assert world.spool.room_names("open") == []  # never to the room on screen
    for name, s in who.items():
        assert len(maildir(world, s.session_id, "new")) == (1 if to and name in to else 0)


async def test_chat_marks_read_only_the_mailbox_messages_that_were_in_view(world: World) -> None:
    hana = enrolled(world, "api", "Hana")
    human_mailbox(world)  # the human has used the bus: a session may write to it
    for i in range(60):
        send_verb.run(world.context(hana), send_verb.SendRequest(f"note {i:02d}", to="fixture-human"))
    mailbox = world.spool_root / "humans" / "fixture-human"
    app = app_for(world, room="@fixture-human", live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.conversation()
        await settle(pilot, lambda: os.listdir(mailbox / "cur"), "the first marks")
        await pilot.pause()
        in_view = {app.rows[i].msg.id for i in view.in_view()}
        assert 0 < len(in_view) < 20 and "note 59" in [app.rows[i].msg.body for i in view.in_view()]
        assert {n.split(":")[0] for n in os.listdir(mailbox / "cur")} == in_view
        assert len(os.listdir(mailbox / "new")) == 60 - len(in_view)
        await pilot.press("shift+tab", "home")  # scroll to the oldest: it is read now, the middle is not
        await settle(pilot, lambda: len(os.listdir(mailbox / "cur")) >= 2 * len(in_view), "the oldest marked")
        assert 0 < len(os.listdir(mailbox / "new")) < 60 - len(in_view)
        assert app.rooms[rooms.human_room("fixture-human")].unread == len(os.listdir(mailbox / "new"))


async def test_a_long_body_is_cut_to_a_few_lines_and_o_opens_it_whole(world: World) -> None:
    hana = enrolled(world, "api", "Hana")
    body = "\n".join(f"line {i:04d} " + "x" * 60 for i in range(900))  # ~64 KB
    send_verb.run(world.context(hana), send_verb.SendRequest(body))
    send_verb.run(world.context(hana), send_verb.SendRequest("short one\nin two lines"))
    app = app_for(world, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        text = screen_text(app)
        assert "line 0000" in text and "line 0005" in text and "line 0006" not in text
        assert f"… cut: 900 lines, {len(body) / 1024:.1f} KB; o or Ctrl+O opens it" in text
        assert "short one\nin two lines" in text  # a short body is whole, with no note
        assert sum(app.conversation()._heights.values()) < 30  # laid out as a few rows, not ~1,800
        await pilot.press("shift+tab", "up", "o")  # choose the long one, open it
        assert "line 0899" in screen_text(app) and "… cut" not in screen_text(app)
        await pilot.press("ctrl+o")
        assert "line 0899" not in screen_text(app)


async def test_an_arrival_in_a_room_of_200_is_appended_and_the_room_is_not_redrawn(world: World) -> None:
    hana = enrolled(world, "api", "Hana")
    for i in range(chat_verb.HISTORY):
        send_verb.run(world.context(hana), send_verb.SendRequest(f"old {i:03d}"))
    app = app_for(world, live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.conversation()
        first = view.get_option_at_index(0)
        sent = send_verb.run(world.context(hana), send_verb.SendRequest("new one"))
        app.arrived([chat_verb.read(world.spool, "open", sent.id)])  # type: ignore[list-item]
        await pilot.pause()
        assert view.option_count == chat_verb.HISTORY + 1 and app.rows[-1].msg.body == "new one"
        assert view.get_option_at_index(0) is first  # the 200 drawn are kept, not built again


# ---------------------------------------------------------------------- the same record as attend send


async def test_a_line_sent_from_chat_is_the_record_attend_send_writes(world: World) -> None:
    hana = enrolled(world, "api", "Hana")
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press(*"same words", "enter")
        await settle(pilot, lambda: world.spool.room_names("open"), "chat's record")
    r = world.attend("send", "same words")
    assert r.returncode == 0, r.stderr
    names = world.spool.room_names("open")
    assert len(names) == 2
    heads = []
    for name in names:
        headers, body = envelope.parse_headers(world.spool.read_record("open", name))
        heads.append(({k: v for k, v in headers.items() if k.lower() not in ("message-id", "date")}, body))
    assert heads[0] == heads[1]
    assert sorted(maildir(world, hana.session_id, "new")) == names  # fanned out to the same recipient


# ---------------------------------------------------------------------- refusals, before any screen


def test_a_refused_spool_is_one_line_before_any_screen(world: World) -> None:
    assert world.spool.root == world.spool_root  # the spool exists, then is made group-writable
    os.chmod(world.spool_root, 0o770)
    r = world.attend("chat")
    assert r.returncode == 1
    assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "group" in r.stderr and "\x1b" not in r.stderr


def test_without_a_terminal_chat_says_so_in_one_line(world: World) -> None:
    r = world.attend("chat")
    assert r.returncode == 2 and "needs a terminal" in r.stderr and r.stdout == ""


def test_a_claude_session_is_refused_a_seat(world: World) -> None:
    hana = enrolled(world, "api", "Hana")
    with pytest.raises(chat_verb.UsageError, match="human's seat"):
        chat_verb.run(world.context(hana), chat_verb.ChatRequest())


def test_an_unknown_room_is_refused_and_writes_nothing(world: World) -> None:
    with pytest.raises(chat_verb.UsageError, match="no room"):
        chat_verb.run(world.context(), chat_verb.ChatRequest("#nowhere"))
    assert not (world.spool_root / "humans" / world.user / "active").exists()  # not noted: nothing written


# ---------------------------------------------------------------------- the import is paid only by chat

PROBE = """\
import os, runpy, sys
sys.argv = {argv!r}
def _exit(code):  # a fast path ends by os._exit, past this probe's last line: end it by SystemExit
    raise SystemExit(code)
os._exit = _exit
try:
    runpy.run_path({attend!r}, run_name="__main__")
except SystemExit:
    pass
sys.stdout.flush()
print("textual" in sys.modules, file=sys.stderr)
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["attend", "--help"],
        ["attend", "send", "hi"],
        ["attend", "send", "--json", "hi"],
        ["attend", "inbox", "--drain", "--format", "hook"],
        ["attend", "chat", "--help"],
    ],
    ids=["help", "send", "send-click", "drain", "chat-help"],
)
def test_attend_help_send_and_the_drain_never_import_textual(world: World, argv: list[str]) -> None:
    s = enrolled(world, "api", "Hana")
    code = PROBE.format(argv=argv, attend=ATTEND)
    r = s.run([sys.executable, "-c", code], stdin=payload(s.session_id))
    assert r.stderr.strip().splitlines()[-1] == "False", r.stderr


def test_the_import_probe_sees_textual_when_the_app_is_imported(world: World) -> None:
    r = subprocess.run(
        [sys.executable, "-c", "import sys, attend.chat.app; print('textual' in sys.modules)"],
        capture_output=True,
        text=True,
        env=world.env,
    )
    assert r.stdout.strip() == "True", r.stderr  # the positive control for the probe above


async def test_ctrl_f_searches_every_room_and_enter_opens_a_result_in_its_room(world: World) -> None:
    hana, _ = crew(world)
    send_verb.run(world.context(hana), send_verb.SendRequest("the lock on POL-358 is held", channel="crew"))
    send_verb.run(world.context(hana), send_verb.SendRequest("open chatter"))
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.current.label == "#open"
        await pilot.press("ctrl+f", *"pol-358", "enter")
        screen = app.screen
        await settle(pilot, lambda: getattr(screen, "results", None), "the results")
        assert [f.snippet for f in screen.results] == ["the lock on **POL-358** is held"]  # type: ignore[attr-defined]
        lines = "\n".join(screen_lines(app))
        assert "Hana" in lines and "in #crew" in lines and "the lock on POL-358 is held" in lines
        await pilot.press("down")
        await settle(pilot, lambda: screen.query_one("#found").has_focus, "the results focused")
        await pilot.press("enter")
        await settle(pilot, lambda: app.current.label == "#crew", "the result's room")
        chosen = app.selected()
        assert chosen is not None and chosen.body == "the lock on POL-358 is held"
        assert chosen.id in app.opened


async def test_a_query_that_cannot_be_read_is_one_line_in_the_search_screen(world: World) -> None:
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+f", *"re:nonsense", "enter")
        status = app.screen.query_one("#found-status")
        await settle(pilot, lambda: "is not a message id" in str(status.render()), "the refusal")
        assert status.has_class("error")
        await pilot.press("escape")
        assert app.screen is app.screen_stack[0]


async def test_a_result_in_a_room_the_pane_does_not_list_opens_whole_on_its_own_screen(world: World) -> None:
    hana, _ = crew(world)
    send_verb.run(world.context(hana), send_verb.SendRequest("between sessions only: rollback plan", to="Tao"))
    app = app_for(world)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+f", *"rollback", "enter")
        await settle(pilot, lambda: getattr(app.screen, "results", None), "the results")
        found = app.screen
        await pilot.press("down")
        await settle(pilot, lambda: found.query_one("#found").has_focus, "the results focused")
        await pilot.press("enter")
        await settle(pilot, lambda: type(app.screen).__name__ == "MessageScreen", "the message screen")
        assert "between sessions only: rollback plan" in "\n".join(screen_lines(app))
        await pilot.press("escape")
        assert app.screen is app.screen_stack[0]


# ---------------------------------------------------------------------- snapshots


def scene(world: World) -> None:
    """Two named sessions in a channel, a thread in #open, a word for the human."""
    hana, tao = crew(world)
    ask = send_verb.run(world.context(), send_verb.SendRequest("Deploy window tonight?\nThe API migration needs one."))
    yes = reply_verb.run(world.context(hana), reply_verb.ReplyRequest("22:00 works for the api side", re=ask.id))
    reply_verb.run(world.context(), reply_verb.ReplyRequest("Take 22:00; smoke tests first", re=yes.id))
    send_verb.run(world.context(tao), send_verb.SendRequest("Frontend frozen at 21:30", channel="crew"))
    send_verb.run(world.context(hana), send_verb.SendRequest("Can you approve the migration PR?", to="fixture-human"))


def steady_cursor(pilot: Any) -> None:
    """A blinking cursor is drawn or not by when the picture is taken (a loaded machine took it in the
    off half): the snapshots show it steady, as the focused compose line draws it."""
    pilot.app.query_one("#compose").cursor_blink = False


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_the_main_screen(world: World, snap_compare: Any, size: tuple[int, int]) -> None:
    scene(world)
    assert snap_compare(app_for(world, live=False), terminal_size=size, run_before=steady_cursor)


def test_the_help_screen(world: World, snap_compare: Any) -> None:
    scene(world)
    assert snap_compare(app_for(world, live=False), terminal_size=(80, 24), press=["f1"], run_before=steady_cursor)


async def type_search(pilot: Any) -> None:
    steady_cursor(pilot)
    await pilot.press("ctrl+f", *"migration", "enter")
    await pilot.pause()


def test_the_search_screen(world: World, snap_compare: Any) -> None:
    scene(world)
    assert snap_compare(app_for(world, live=False), terminal_size=(80, 24), run_before=type_search)


# ---------------------------------------------------------------------- the real binary, under tmux


class Tmux:
    """One private tmux server (its own socket) running `attend chat` as the human."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.socket = str(world.tmp / "tmux.sock")
        self.env = {**world.env, "TERM": "xterm-256color", "LANG": "C.UTF-8"}

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-S", self.socket, "-f", "/dev/null", *args], capture_output=True, text=True, env=self.env
        )

    def start(self) -> None:
        cwd = self.world.project("proj")
        # A shell runs chat and writes how it ended: tmux 3.3 under load can leave a pane's process
        # unreaped (a zombie, the pane dead with no status), so the pane's own status cannot be asked.
        self.status = self.world.tmp / "chat.status"
        command = f"{shlex.quote(ATTEND)} chat; echo $? > {shlex.quote(str(self.status))}"
        r = self.tmux("new-session", "-d", "-s", "chat", "-x", "80", "-y", "24", "-c", str(cwd), command)
        assert r.returncode == 0, r.stderr
        self.tmux("set-option", "-t", "chat", "remain-on-exit", "on")

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "chat").stdout

    def ended(self) -> bool:
        return self.status.exists() and self.status.read_text().endswith("\n")

    def keys(self, *keys: str) -> None:
        assert self.tmux("send-keys", "-t", "chat", *keys).returncode == 0

    def close(self) -> None:
        self.tmux("kill-server")


@pytest.fixture
def tmux(world: World) -> Iterator[Tmux]:
    require_tools("tmux")
    t = Tmux(world)
    try:
        yield t
    finally:
        t.close()


def test_the_real_binary_sends_to_a_sessions_loop_and_shows_its_reply(
    world: World, tmux: Tmux, loops: Callable[..., Loop]
) -> None:
    hana = world.session("api", name="Hana")
    loop = loops(hana)
    tmux.start()
    # The whole first screen is up (the footer drawn last), and it has settled: textual answers the
    # terminal's start-up queries first, and a key sent in the middle of those can be lost.
    wait_until(
        lambda: "Peers" in tmux.screen() and "Hana" in tmux.screen() and "^q quit" in tmux.screen(),
        lambda: f"the screen: {tmux.screen()}",
    )
    first = tmux.screen()
    wait_until(lambda: tmux.screen() == first, lambda: f"the screen to settle: {tmux.screen()}")
    # No key before the text: the compose line has the keys from the start, and says so with a bar
    # down its left edge (a glyph: tmux's capture has no colour).
    assert BAR + "write here" in first, first
    tmux.keys("-l", "hello from the seat, q and r and f included")
    tmux.keys("Enter")
    wait_until(lambda: "sent to #open" in tmux.screen(), lambda: f"the send: {tmux.screen()}")
    loop.wait_for(has("hello from the seat, q and r and f included"), "the loop to print the message")
    # The session answers the newest message its loop showed (its host is busy running the loop, so
    # the reply is the library call its own tools would make, resolved from its pid).
    reply_verb.run(world.context(hana), reply_verb.ReplyRequest("ack from Hana"))
    wait_until(lambda: "ack from Hana" in tmux.screen(), lambda: f"the reply on screen: {tmux.screen()}")
    tmux.keys("C-q")
    wait_until(tmux.ended, lambda: f"chat to exit: {tmux.screen()}")
    assert tmux.status.read_text().strip() == "0"
    assert "Peers" not in tmux.screen()  # the alternate screen is gone: the terminal is as it was


def test_the_real_binary_opens_at_the_newest_message_without_painting_the_oldest_first(world: World) -> None:
    # Enough history that the oldest is above the fold at 80x24: a screen that first paints the top of
    # the conversation, then scrolls, has drawn "history 00" on the way (and cost a frame).
    hana = enrolled(world, "api", "Hana")
    for i in range(30):
        send_verb.run(world.context(hana), send_verb.SendRequest(f"history {i:02d}"))
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen(
        [ATTEND, "chat"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**world.env, "TERM": "xterm-256color", "LANG": "C.UTF-8"},
        cwd=world.project("proj"),
        start_new_session=True,
    )
    os.close(slave)
    drawn = bytearray()

    def whole() -> bool:
        if select.select([master], [], [], 0.05)[0]:
            drawn.extend(os.read(master, 65536))
        return b"history 29" in drawn and b"quit" in drawn and b"Peers" in drawn

    try:
        wait_until(whole, lambda: f"the first screen: {bytes(drawn[-400:])!r}")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(OSError):
            while select.select([master], [], [], 0.5)[0] and os.read(master, 65536):
                pass
        proc.wait(DEADLINE)
        os.close(master)
    assert b"history 00" not in drawn


async def test_the_human_sees_what_waits_and_accepts_or_declines_it_in_chat(world: World) -> None:
    hana = enrolled(world, "api", "Hana")
    assert hana.attend("inbound", "hold").rc == 0
    sent = [send_verb.run(world.context(), send_verb.SendRequest(f"held {i}", to=hana.session_id)) for i in range(2)]
    assert all(r.recipients[0].outcome == "held" for r in sent)
    app = app_for(world)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press(*"/inbound", "enter")
        await settle(pilot, lambda: "2 waiting" in str(app.query_one("#status").render()), "the list")
        said = str(app.query_one("#status").render())
        assert sent[0].id in said and "for Hana" in said and "held 0" in said, said
        await pilot.press(*f"/accept {sent[0].id}", "enter")
        await settle(pilot, lambda: "1 waiting" in str(app.query_one("#status").render()), "the accept")
        await pilot.press(*f"/decline {sent[1].id}", "enter")
        await settle(pilot, lambda: "nothing waits" in str(app.query_one("#status").render()), "the decline")
    assert world.spool.delivery_state(hana.session_id, sent[0].id) == "delivered"
    assert world.spool.delivery_state(hana.session_id, sent[1].id) == "declined"
    assert world.spool.room_names(rooms.direct_room(hana.session_id)) != []  # stored, as every message
