"""The spool as a mail reader sees it: mutt opens a room and a session maildir read-only and shows
subjects, senders and the thread tree. mutt runs under tmux with a private HOME and muttrc, so nothing
of the machine's own mail setup leaks in; the screen is read with `tmux capture-pane`.

.ci/run installs mutt and tmux; without them these tests fail saying what to install (never a silent skip).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from attend.domain import sessions
from attend.testing.standin import StandIn
from tests.support import World, conversation, require_tools, wait_until

MUTTRC = """\
set sort=threads
set ascii_chars=yes
set folder={home}
set spoolfile=/dev/null
set mbox_type=Maildir
set charset=utf-8
set help=no
set status_format="-%r-Mutt: [Msgs:%m New:%n] (%s) %f"
"""


@pytest.fixture
def mutt(tmp_path: Path) -> Iterator[MuttScreen]:
    require_tools("mutt", "tmux")
    screen = MuttScreen(tmp_path / "mutt")
    try:
        yield screen
    finally:
        screen.close()


class MuttScreen:
    """One private tmux server (its own socket) showing `mutt -R -f <maildir>`."""

    def __init__(self, home: Path) -> None:
        home.mkdir()
        self.home = home
        self.muttrc = home / "muttrc"
        self.muttrc.write_text(MUTTRC.format(home=home))
        self.socket = str(home / "tmux.sock")
        self.env = {"HOME": str(home), "PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8", "TERM": "xterm"}
        self.started = False

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-S", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=30,
        )

    def open(self, maildir: Path, messages: int, width: int = 110, height: int = 16) -> str:
        """Show ``maildir`` in a fresh window; the screen once mutt's status line counts them all."""
        if self.started:
            self.tmux("kill-session", "-t", "mail")
        command = f"mutt -n -R -F {self.muttrc} -f {maildir}"
        r = self.tmux("new-session", "-d", "-s", "mail", "-x", str(width), "-y", str(height), command)
        assert r.returncode == 0, r.stderr
        self.started = True
        done = f"[Msgs:{messages} "

        def shown() -> str:
            screen = self.screen()
            return screen if done in screen else ""

        return str(wait_until(shown, lambda: f"{done!r} on the screen:\n{self.screen()}"))

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "mail").stdout

    def close(self) -> None:
        if self.started:
            self.tmux("kill-server")


def _index(screen: str) -> list[str]:
    """The index lines, without the status line."""
    return [line for line in screen.splitlines() if line.strip() and "-Mutt:" not in line]


def _row(lines: list[str], text: str) -> tuple[str, int]:
    """The index line showing ``text``, and how deep in its thread it sits (where mutt's ``->`` is;
    -1 for a thread's first message). Siblings sent within one second have the same Date, and mutt
    may show them in either order, so tests ask for depth, not position."""
    (line,) = [line for line in lines if text in line]
    return line, line.find("->")


def test_mutt_shows_a_room_with_subjects_senders_and_the_thread_tree(world: World, mutt: MuttScreen) -> None:
    a, b, _ = conversation(world)
    api, web = _name(world, a), _name(world, b)
    lines = _index(mutt.open(world.spool_root / "rooms" / "open", messages=5))
    assert len(lines) == 5, lines
    ask, top = _row(lines, "Deploy window tonight?")
    api_yes, one = _row(lines, "22:00 works for the api side")
    web_yes, sibling = _row(lines, "Frontend is ready too")
    take_it, two = _row(lines, "Good, take 22:00")
    green, three = _row(lines, "Smoke tests green")
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
    lines = _index(mutt.open(world.spool_root / "sessions" / a.session_id, messages=4))
    assert len(lines) == 4, lines
    _, top = _row(lines, "Deploy window")
    web_yes, one = _row(lines, "Frontend is ready too")
    take_it, sibling = _row(lines, "Good, take 22:00")
    review, alone = _row(lines, "Can you review my PR")
    assert top == -1 and 0 < one == sibling and alone == -1, lines
    assert web in web_yes and "fixture-human" in take_it and web in review


def _name(world: World, s: StandIn) -> str:
    """The sender as mutt's index shows it: the display label, cut to the 15 columns of %-15.15L."""
    return sessions.display_name(world.spool, world.context(s).who())[:15]
