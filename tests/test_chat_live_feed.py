"""`attend chat`'s live feed hands every message over through a watch, never by its rescan, whatever
order rooms, sessions and chat itself appeared in. Counted, not timed: the feed counts the records a
rescan found in a room whose own watch had not reported them (``rescued``), and that count stays 0."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from attend.seat.live import Feed
from attend.testing.standin import StandIn
from attend.verbs import join, send
from attend.verbs.inbox import Message
from tests.support import World, drain, wait_until


class Scene:
    """The feed as chat runs it, and the steps of a session's and the human's day around it."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.got: list[Message] = []
        self.feed: Feed | None = None
        self.said: list[str] = []
        self.people: dict[str, StandIn] = {}

    def session(self, label: str) -> StandIn:
        if label not in self.people:
            self.people[label] = self.world.session(f"proj-{label}")
        return self.people[label]

    def chat(self) -> None:
        # No rescan in the test's lifetime: a timer wake under load could find a record a moment before
        # its watch's event is read, and count it rescued; a watch that missed one fails arrived() instead.
        self.feed = Feed(self.world.spool, self.got.extend, lambda: None, lambda: None, rescan=3600)
        self.feed.start()
        assert self.feed.ready.wait(10) and self.feed.mode == "inotify"

    def join(self, label: str, channel: str) -> None:
        s = self.session(label)
        join.run(self.world.context(s), join.JoinRequest(channel))

    def say(self, label: str | None, text: str, to: str | None = None) -> None:
        who = self.session(label) if label else None
        send.run(self.world.context(who), send.SendRequest(text, to=to))
        if self.feed is not None:  # what was sent before chat started is its history, not the feed's
            self.said.append(text)
            self.arrived(text)

    def drain(self, label: str) -> None:
        assert drain(self.world, self.session(label).session_id).returncode == 0

    def arrived(self, text: str) -> None:
        wait_until(lambda: any(m.body == text for m in self.got), f"{text!r} on chat's feed")

    def close(self) -> None:
        if self.feed is not None:
            self.feed.stop()


Step = Callable[[Scene], None]
ORDERINGS: dict[str, list[Step]] = {
    # The newcomer's: chat on a spool with no messages, a session joins, chat sends, the session's
    # Stop-hook drain takes the line, the session answers in #open.
    "chat-first": [
        Scene.chat,
        lambda s: s.join("a", "crew"),
        lambda s: s.say(None, "from chat to #open"),
        lambda s: s.drain("a"),
        lambda s: s.say("a", "the session answers in #open"),
    ],
    "session-first": [
        lambda s: s.join("a", "crew"),
        Scene.chat,
        lambda s: s.say(None, "to the channel", to="#crew"),
        lambda s: s.say(None, "the human's first line"),
        lambda s: s.say("a", "and in #open"),
    ],
    "rooms-appear-one-by-one": [
        lambda s: s.say(None, "history before chat"),
        Scene.chat,
        lambda s: s.join("a", "crew"),
        lambda s: s.say(None, "a new channel's first", to="#crew"),
        lambda s: s.join("b", "ops"),
        lambda s: s.say("a", "another channel's first", to="#ops"),
        lambda s: s.say("b", "a project's first", to=str(s.session("a").cwd)),
        lambda s: s.say("a", "in #open at last"),
    ],
}


@pytest.mark.parametrize("ordering", sorted(ORDERINGS))
def test_every_message_reaches_chat_through_a_watch_never_the_rescan(world: World, ordering: str) -> None:
    scene = Scene(world)
    try:
        for step in ORDERINGS[ordering]:
            step(scene)
        assert scene.feed is not None
        for text in scene.said:
            scene.arrived(text)
        assert scene.feed.rescued == 0, f"{scene.feed.rescued} message(s) waited for the rescan"
    finally:
        scene.close()
