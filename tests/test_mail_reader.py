"""The spool as a mail reader sees it: mutt opens a room and a session maildir read-only and shows
subjects, senders and the thread tree. mutt runs under tmux with a private HOME and muttrc, so nothing
of the machine's own mail setup leaks in; the screen is read with `tmux capture-pane`.

.ci/run installs mutt and tmux; without them these tests fail saying what to install (never a silent skip).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from attend.domain.sessions import sessions
from attend.testing.standin import StandIn
from tests.mailreader import MuttScreen, index_lines, row
from tests.support import World, conversation, require_tools


@pytest.fixture
def mutt(tmp_path: Path) -> Iterator[MuttScreen]:
    require_tools("mutt", "tmux")
    screen = MuttScreen(tmp_path / "mutt")
    try:
        yield screen
    finally:
        screen.close()


def test_mutt_shows_a_room_with_subjects_senders_and_the_thread_tree(world: World, mutt: MuttScreen) -> None:
    a, b, _ = conversation(world)
    api, web = _name(world, a), _name(world, b)
    lines = index_lines(mutt.open(world.spool_root / "rooms" / "open", messages=5))
    assert len(lines) == 5, lines
    ask, top = row(lines, "Deploy window tonight?")
    api_yes, one = row(lines, "22:00 works for the api side")
    web_yes, sibling = row(lines, "Frontend is ready too")
    take_it, two = row(lines, "Good, take 22:00")
    green, three = row(lines, "Smoke tests green")
    assert "fixture-human" in ask and top == -1 and lines[0] == ask
    # The human's reply to the api session, and the api session's answer, nest below its message.
    assert api in api_yes and web in web_yes and "fixture-human" in take_it and api in green
    assert 0 < one == sibling < two < three, lines  # a reply of a reply is indented further
    assert lines.index(api_yes) < lines.index(take_it) < lines.index(green)


def test_mutt_threads_a_session_maildir_even_where_its_own_replies_are_missing(world: World, mutt: MuttScreen) -> None:
    a, b, _ = conversation(world)
    web = _name(world, b)
    # The api session never receives its own replies, so the human's answer to one of them threads
    # under the first message through References alone.
    lines = index_lines(mutt.open(world.spool_root / "sessions" / a.session_id, messages=4))
    assert len(lines) == 4, lines
    _, top = row(lines, "Deploy window")
    web_yes, one = row(lines, "Frontend is ready too")
    take_it, sibling = row(lines, "Good, take 22:00")
    review, alone = row(lines, "Can you review my PR")
    assert top == -1 and 0 < one == sibling and alone == -1, lines
    assert web in web_yes and "fixture-human" in take_it and web in review


def _name(world: World, s: StandIn) -> str:
    """The sender as mutt's index shows it: the display label, cut to the 15 columns of %-15.15L."""
    return sessions.display_name(world.spool, world.context(s).who())[:15]
