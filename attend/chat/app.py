"""The chat screen: rooms and peers on the left, the conversation and the compose line on the right.

Everything from the spool reaches the screen as plain ``rich.text.Text`` built from
attend.domain.core.framing (never as markup), so a body or a name cannot style, move or fake the screen.
Sends and replies go through the send and reply verbs, as `attend send` does; reads go through
attend.verbs.chat, which never claims a session's delivery and marks the human's own mailbox read
only for what was shown.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.style import Style as RichStyle
from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.geometry import Size
from textual.message import Message as TMessage
from textual.screen import ModalScreen
from textual.strip import Strip
from textual.widgets import Footer, Input, Label, ListItem, ListView, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from attend.domain.core import framing, outcomes, rooms
from attend.domain.sessions import humans
from attend.domain.sessions.context import Context
from attend.errors import AttendError
from attend.layout import name_time
from attend.seat import compose, threads
from attend.seat.live import Feed
from attend.verbs import chat as chat_verb
from attend.verbs import peers as peers_verb
from attend.verbs import search as search_verb
from attend.verbs.inbox import Message

if TYPE_CHECKING:
    from attend.verbs.send import Sent

PEERS_SECONDS = 5.0  # the peers pane is also re-read this often: a session can end with no loop to say so
PLACEHOLDER = "write here · Enter: send · Tab: next pane · F1: keys"
# What the human types to see and decide what sessions' inbound rules hold (docs/architecture/outcomes.md).
INBOUND_COMMANDS = ("/inbound", "/accept", "/decline")
INBOUND_SHOWN = 5  # held messages listed in the status line; attend inbound lists them all
SNIPPET = 40  # characters of a parent shown beside a reply
CUT_LINES = 6  # a longer body shows its first lines until it is opened (o)
CUT_CHARS = 480  # and at most this much of it: one 64 KB line would otherwise wrap to ~800 rows

HELP = """\
attend chat: keys (the footer shows those that work everywhere)

Typing goes to the compose line: Enter sends, Ctrl+J or Alt+Enter
starts a new line, Tab completes @name and #channel, Esc cancels a
reply, else leaves compose. Everywhere:
  Ctrl+R  reply to the chosen message   Ctrl+T  fold its thread
  Ctrl+O  open a long message (cut)     F1      this help
  Ctrl+F  search every room (also / in the lists): Enter searches,
          Down to the results, Enter opens one, Esc closes
  Tab / Shift+Tab   next / previous pane (compose, rooms, conversation)
  Ctrl+Q  Ctrl+C    quit
In the rooms and the conversation, letters are commands:
  Up / Down  choose      Enter  write here, or reply to the message
  i  write   r  reply   f  fold   o  open   /  search   ?  help   q  quit

A line that starts with @name (or several: @a @b) or #channel goes
there, or is refused; any other line goes to the room on screen. Your
mailbox (@you) takes replies: choose a message and reply, or start
the line with @name. Reading marks only your own mailbox read, as far
as it was on screen. /inbound lists what sessions' inbound rules hold;
/accept ID shows one to its session once, /decline ID keeps it unshown.
"""


def local_time(at: float) -> str:
    """A message's time as the screen shows it: HH:MM today, else the date too (local time)."""
    t = time.localtime(at)
    return time.strftime("%H:%M" if time.localtime()[:3] == t[:3] else "%b %d %H:%M", t)


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark,f1", "dismiss", "close"),
    ]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > Static { width: auto; max-width: 78; height: auto; border: round $accent; padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(Text(HELP.rstrip()), id="help")

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


def marked(snippet: str) -> Text:
    """A search result's snippet with its ``**marks**`` drawn bold: plain Text, never markup, so the body
    in it cannot style the screen (the snippet holds no control characters: attend/search/snippet.py)."""
    out = Text(no_wrap=True, overflow="ellipsis")
    parts = snippet.split("**")
    if len(parts) % 2 == 0:  # an odd count of marks: the body held some of its own; shown as written
        return Text(snippet, no_wrap=True, overflow="ellipsis")
    for i, part in enumerate(parts):
        out.append(part, style="bold reverse" if i % 2 else "")
    return out


class SearchScreen(ModalScreen["search_verb.Found | None"]):
    """Search every room the human may read (attend search): a query line, then the results, best first;
    Enter on one closes the screen and opens it (the app shows it in its room, or whole)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "close")]
    DEFAULT_CSS = """
    SearchScreen { align: center middle; }
    SearchScreen > Vertical { width: 96%; height: 90%; border: round $accent; background: $surface; }
    SearchScreen #query { border: none; height: 1; padding: 0 1; background: $boost; }
    SearchScreen #found-status { height: auto; padding: 0 1; color: $text-muted; }
    SearchScreen #found-status.error { color: $error; text-style: bold; }
    SearchScreen #found { height: 1fr; border: none; }
    """
    LIMIT = 50

    def __init__(self, ctx: Context, clock: Callable[[float], str], label_of: Callable[[str], str]) -> None:
        super().__init__()
        self.ctx = ctx
        self.clock = clock
        self.label_of = label_of  # a room as the rooms pane names it
        self.results: list[search_verb.Found] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Input(
                placeholder='search: words, "a phrase", prefix*, OR, -word, from:NAME, room:#x, since:2d',
                id="query",
            )
            yield Static(Text("Enter searches every room you may read; Esc closes"), id="found-status")
            yield OptionList(id="found")

    def on_mount(self) -> None:
        self.query_one("#query", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.search(event.value)

    def search(self, text: str) -> None:
        status = self.query_one("#found-status", Static)
        view = self.query_one("#found", OptionList)
        try:
            result = search_verb.run(self.ctx, search_verb.SearchRequest(text, limit=self.LIMIT))
        except AttendError as e:
            status.update(Text(str(e)))
            status.set_class(True, "error")
            return
        self.results = result.results
        view.clear_options()
        view.add_options([Option(self.row(f)) for f in self.results])
        n = len(self.results)
        said = f"{n} found" if n < self.LIMIT else f"the best {n}"
        said += " · Down: the results · Enter opens one · Esc closes" if n else " · try fewer words, or prefix*"
        for note in result.notes:
            said += f" · {note}"
        status.update(Text(said))
        status.set_class(False, "error")
        if n:
            view.highlighted = 0

    def row(self, f: search_verb.Found) -> Group:
        head = Text(no_wrap=True, overflow="ellipsis")
        head.append(self.clock(name_time(f.id)), style="dim")
        head.append(" ")
        head.append(framing.label(f.sender), style="bold")
        head.append(" in " + self.label_of(f.room), style="cyan")
        return Group(head, Padding(marked(f.snippet), (0, 0, 0, 2)))

    def on_key(self, event: events.Key) -> None:
        if event.key == "down" and self.query_one("#query", Input).has_focus and self.results:
            event.stop()
            self.query_one("#found", OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        index = event.option_index
        if 0 <= index < len(self.results):
            self.dismiss(self.results[index])

    def action_close(self) -> None:
        self.dismiss(None)


class MessageScreen(ModalScreen[None]):
    """One message whole (a search result outside the rooms on screen, or older than they load)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,enter", "close", "close")]
    DEFAULT_CSS = """
    MessageScreen { align: center middle; }
    MessageScreen > VerticalScroll { width: 90%; height: auto; max-height: 90%; border: round $accent; padding: 0 1; }
    """

    def __init__(self, head: Text, body: Text) -> None:
        super().__init__()
        self.head, self.body = head, body

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(self.head)
            yield Static(self.body)

    def action_close(self) -> None:
        self.dismiss(None)


class Compose(TextArea):
    """The compose line: Enter sends, Ctrl+J or Alt+Enter starts a new line, Tab completes."""

    class Submitted(TMessage):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.post_message(self.Submitted(self.text))
            return
        if event.key in ("ctrl+j", "alt+enter"):
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if event.key == "tab" and isinstance(self.app, ChatApp) and self.app.complete():
            event.stop()
            event.prevent_default()
            return
        if event.key == "escape":
            event.stop()
            event.prevent_default()
            if isinstance(self.app, ChatApp):
                self.app.leave_compose()
            return
        await super()._on_key(event)

    def word_at_cursor(self) -> tuple[str, tuple[int, int]]:
        """The word the cursor ends, and where it starts."""
        row, col = self.cursor_location
        line = self.document.get_line(row)[:col]
        start = len(line) - len(line.split(" ")[-1].split("\t")[-1])
        return line[start:], (row, start)


class RoomItem(ListItem):
    def __init__(self, room: chat_verb.Room) -> None:
        self.label = Label(self.text(room))
        super().__init__(self.label)
        self.room = room

    @staticmethod
    def text(room: chat_verb.Room) -> Text:
        out = Text(framing.inline(room.label)[:18], no_wrap=True, overflow="ellipsis")
        if room.kind == "project":
            out.append(" project", style="dim")  # a project room is named by its folder: say what it is
        if room.unread:
            out.append(f" {room.unread}", style="bold")
        return out

    def refresh_label(self) -> None:
        self.label.update(self.text(self.room))


class Keys(Footer):
    """Textual's footer, drawn with the keys in the first frame: the stock one composes empty and
    fills in a frame later, once the bindings have settled (the app's own keys are all it shows)."""

    def compose(self) -> ComposeResult:
        self._bindings_ready = True
        yield from super().compose()


class Conversation(OptionList):
    """The conversation: one widget for all of it, which draws only the lines in view, so a new
    message does not re-lay-out a widget per message (that cost ~100 ms a message)."""

    follow = True  # until the first layout: open scrolled to the newest message

    class Viewed(TMessage):
        """What is in view may have changed (a scroll, a resize): the app marks what is shown."""

    def in_view(self) -> list[int]:
        """The indexes of the options with at least one line in view."""
        height = self.scrollable_content_region.height
        lines = self._lines  # (option index, line in it) per row of the whole list
        top = self.scroll_offset.y
        return sorted({lines[y][0] for y in range(top, min(top + height, len(lines)))})

    def render_line(self, y: int) -> Strip:
        strip = super().render_line(y)
        if self.app.no_color:  # no background to show the chosen message by: reverse video, a style
            lines = self._lines
            at = self.scroll_offset.y + y
            if at < len(lines) and lines[at][0] == self.highlighted:
                strip = strip.apply_style(RichStyle(reverse=True))
        return strip

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) != round(new_value):
            self.post_message(self.Viewed())

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        # Textual calls this just before the first frame is painted, and scroll_end waits for the frame
        # after it: scrolling here puts the newest message in the first frame, not the oldest.
        at_end = self.size.height > 0 and self.scroll_offset.y >= self.max_scroll_y
        changed = super()._size_updated(size, virtual_size, container_size, layout)
        if changed and self.follow and size.height:
            self.follow = False
            self.scroll_to_highlight()
        elif changed and at_end:
            # A view at the newest message stays there when it shrinks (a wrapped refusal below it,
            # a smaller terminal), rather than hiding the newest lines under the fold.
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)
        if changed:
            self.post_message(self.Viewed())
        return changed


class ChatApp(App[None]):
    TITLE = "attend chat"
    ENABLE_COMMAND_PALETTE = False
    CSS = """
    #side { width: 26; border-right: solid $primary-darken-2; }
    #side > .title { text-style: bold; padding: 0 1; background: $boost; width: 100%; }
    #rooms { height: 1fr; max-height: 50%; }
    #peers-box { height: 1fr; }
    #peers { padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    #main { width: 1fr; }
    #room-title { text-style: bold; padding: 0 1; background: $boost; width: 100%; height: 1; }
    #room-title { text-wrap: nowrap; text-overflow: ellipsis; }
    #conversation { height: 1fr; }
    #conversation { border: none; padding: 0; }
    /* Wrapped, never cut: a refusal says how to fix the line, and its end is the part that does. */
    #status { height: auto; max-height: 50%; padding: 0 1; color: $text-muted; }
    #status.error { color: $error; text-style: bold; }
    #compose { height: auto; min-height: 1; max-height: 6; border: none; padding: 0 1 0 0; background: $boost; }
    /* The pane with the keys has a bar down its left edge: a glyph, seen with NO_COLOR as well. */
    #rooms, #conversation, #compose { border-left: blank; }
    #rooms:focus, #conversation:focus, #compose:focus { border-left: outer $accent; }
    /* Without colour a background is lost: the chosen room (and message, Conversation) in reverse video. */
    App:nocolor #rooms > ListItem.-highlight { text-style: reverse; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        # With a modifier, a command works from every pane, the compose line too; the footer shows these.
        Binding("ctrl+q", "quit", "quit", priority=True),
        Binding("ctrl+c", "quit", "quit", priority=True, show=False),
        Binding("f1", "help", "help"),
        Binding("ctrl+r", "reply", "reply", priority=True),
        Binding("ctrl+t", "fold", "fold", priority=True),
        Binding("ctrl+o", "open", "open", priority=True),
        Binding("ctrl+f", "search", "search", priority=True),
        # A single letter is a command only in the lists: the compose line takes letters as text.
        Binding("q", "quit", "quit", show=False),
        Binding("question_mark", "help", "help", show=False),
        Binding("i", "write", "write", show=False),
        Binding("r", "reply", "reply", show=False),
        Binding("f", "fold", "fold", show=False),
        Binding("o", "open", "open", show=False),
        Binding("slash", "search", "search", show=False),
    ]

    def __init__(
        self,
        ctx: Context,
        seat: chat_verb.Seat,
        *,
        clock: Callable[[float], str] = local_time,
        live: bool = True,
        started: Callable[[], None] | None = None,
    ) -> None:
        super().__init__()
        self.ctx = ctx
        self.seat = seat
        self.user = seat.user
        self.clock = clock  # tests pin it: a snapshot must not depend on the hour
        self.rooms = {r.room: r for r in seat.rooms}
        self.current = self.rooms[seat.room]
        self.shown: list[Message] = []
        self.folded: set[str] = set()
        self.opened: set[str] = set()  # long messages shown whole
        self.bodies: dict[tuple[str, bool], Text] = {}  # (id, whole): each body's text, built once
        self.replying: Message | None = None
        self.parents: dict[str, Message | None] = {}
        self.peer_names: list[str] = []
        self.channel_names: list[str] = [r.label[1:] for r in seat.rooms if r.kind == "channel"]
        self.feed: Feed | None = None
        self.live = live
        self.started = started  # called once the first screen is out
        self.rows: list[threads.Row] = []  # the conversation as drawn, one option per row
        self.parts: list[tuple[Text, Text | None, Text]] = []  # each row's text (tests read it)

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        with Horizontal():
            with Vertical(id="side"):
                yield Label("Rooms", classes="title")
                yield ListView(*(RoomItem(r) for r in self.seat.rooms), id="rooms")
                yield Label("Peers", classes="title")
                with VerticalScroll(id="peers-box"):
                    yield Static(id="peers")
            with Vertical(id="main"):
                yield Label(id="room-title")
                yield Conversation(id="conversation")
                yield Static(id="status")
                yield Compose(id="compose", soft_wrap=True, show_line_numbers=False, placeholder=PLACEHOLDER)
        yield Keys()

    def on_mount(self) -> None:
        rooms_view = self.query_one("#rooms", ListView)
        rooms_view.index = list(self.rooms).index(self.current.room)
        self.query_one("#compose", Compose).focus()  # as in any chat app: typing goes to the compose line
        self.query_one("#peers-box").can_focus = False  # Tab goes rooms -> conversation -> compose
        if self.live:  # its baseline first, then the listing: nothing lands unseen between the two
            self.feed = Feed(
                self.ctx.spool,
                on_messages=lambda batch: self.call_from_thread(self.arrived, batch),
                on_presence=lambda: self.call_from_thread(self.refresh_peers),
                on_rooms=lambda: self.call_from_thread(self.refresh_rooms),
            )
        self.show_room(self.current)
        self.refresh_peers()
        self.set_interval(PEERS_SECONDS, self.refresh_peers)
        self.call_after_refresh(self.first_screen_out)

    def first_screen_out(self) -> None:
        if self.feed is not None:
            self.feed.start()  # the watches go up once the first screen is out
        if self.started is not None:
            self.started()

    def on_unmount(self) -> None:
        if self.feed is not None:
            self.feed.stop()  # wakes the thread by its pipe: quitting waits for no timeout

    # ------------------------------------------------------------------ rooms

    def on_list_view_highlighted(self, event: ListView.Highlighted) -> None:
        item = event.item
        if event.list_view.id == "rooms" and isinstance(item, RoomItem) and item.room.room != self.current.room:
            self.show_room(item.room)

    def on_list_view_selected(self, event: ListView.Selected) -> None:
        if event.list_view.id == "rooms":
            self.action_write()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.action_reply()

    def show_room(self, room: chat_verb.Room) -> None:
        self.current = room
        self.replying = None
        room.unread = 0
        self.shown = chat_verb.messages(self.ctx.spool, room, self.user)
        self.redraw(follow=True)
        self.call_after_refresh(self.mark_shown)  # once laid out: what is in view is known then
        self.update_room_labels()
        self.say(self.addressed_to())

    def refresh_rooms(self) -> None:
        fresh = chat_verb.rooms_of(self.ctx.spool, self.user)
        for r in fresh:
            if r.room in self.rooms:
                r.unread = self.rooms[r.room].unread if r.kind != "mailbox" else r.unread
        self.rooms = {r.room: r for r in fresh}
        self.current = self.rooms.get(self.current.room, self.current)
        self.channel_names = [r.label[1:] for r in fresh if r.kind == "channel"]
        view = self.query_one("#rooms", ListView)
        view.clear()
        view.extend(RoomItem(r) for r in fresh)
        if self.current.room in self.rooms:
            view.index = list(self.rooms).index(self.current.room)

    def update_room_labels(self) -> None:
        mailbox = self.rooms.get(rooms.human_room(self.user))
        if mailbox is not None:
            mailbox.unread = len(chat_verb.mailbox_unread(self.ctx.spool, self.user))
        for item in self.query_one("#rooms", ListView).query(RoomItem):
            item.room = self.rooms.get(item.room.room, item.room)
            item.refresh_label()

    # ------------------------------------------------------------------ the conversation

    def conversation(self) -> Conversation:
        return self.query_one("#conversation", Conversation)

    def option(self, row: threads.Row) -> Option:
        parts = self.render_row(row)
        self.parts.append(parts)
        head, re_line, body = parts
        lines: list[RenderableType] = [head]
        if re_line is not None:
            lines.append(Padding(re_line, (0, 0, 0, 2)))
        lines.append(Padding(body, (0, 0, 0, 2)))
        return Option(Padding(Group(*lines), (0, 0, 0, 2 * row.depth)))

    def redraw(self, follow: bool = False) -> None:
        view = self.conversation()
        keep = self.selected()
        rows = threads.thread_order(self.shown, self.folded)
        self.rows, self.parts = rows, []
        view.clear_options()
        view.add_options([self.option(row) for row in rows])
        ids = [row.msg.id for row in rows]
        if keep is not None and keep.id in ids and not follow:
            view.highlighted = ids.index(keep.id)
        elif ids:
            view.highlighted = len(ids) - 1
        self.query_one("#room-title", Label).update(self.title_text())
        if follow:
            view.scroll_end(animate=False)

    def title_text(self) -> Text:
        out = Text(framing.inline(self.current.label))
        if self.current.kind == "project":
            out.append(" project", style="dim")
        n = len(self.shown)
        out.append(f"  {n} message{'s' if n != 1 else ''}", style="dim")
        if self.current.detail:
            out.append(f"  {framing.inline(self.current.detail)}", style="dim")
        return out

    def render_row(self, row: threads.Row) -> tuple[Text, Text | None, Text]:
        m = row.msg
        head = Text()
        head.append(self.clock(name_time(m.id)), style="dim")
        head.append(" ")
        head.append(framing.label(m.sender), style="bold")
        if m.client:  # the client an agent runs in (claude, codex, gemini), in the peers pane's colour
            head.append(" " + framing.label(m.client), style="cyan")
        head.append(f" {m.from_kind}", style="dim")
        if row.replies:
            mark = "▸" if row.folded else "▾"
            head.append(f"  {mark} {row.replies} repl{'ies' if row.replies != 1 else 'y'}", style="cyan")
        re_line = None
        if m.re is not None:
            parent = self.parent_of(m.re)
            what = (
                f"{framing.label(parent.sender)}: {framing.inline(parent.body[:200])}" if parent is not None else m.re
            )
            re_line = Text("↳ re " + what, style="italic dim", no_wrap=True, overflow="ellipsis")
        return head, re_line, self.body_text(m)

    def body_text(self, m: Message) -> Text:
        """The body as framing's lines (every break a newline, every control escaped; the indent is
        the widget's padding), cut to its first lines unless opened: a 64 KB body would lay out
        ~800 rows, and 200 of them took seconds to the first screen."""
        whole = m.id in self.opened
        key = (m.id, whole)
        if key not in self.bodies:  # a redraw (a fold, a reply) draws the same bodies again
            self.bodies[key] = self.make_body(m, whole)
        return self.bodies[key]

    @staticmethod
    def make_body(m: Message, whole: bool) -> Text:
        rows = framing.trimmed(m.body if whole else m.body[:CUT_CHARS])
        cut = not whole and (len(m.body) > CUT_CHARS or len(rows) > CUT_LINES)
        out = Text("\n".join(line.replace("\t", " ") for line in (rows[:CUT_LINES] if cut else rows)))
        if cut:
            lines = m.body.strip("\n").count("\n") + 1  # str.count: framing's pass over 64 KB costs ~10 ms
            size = len(m.body.encode("utf-8", "replace"))
            amount = f"{size / 1024:.1f} KB" if size >= 1024 else f"{size} bytes"
            out.append(
                f"\n… cut: {lines} line{'s' if lines != 1 else ''}, {amount}; o or Ctrl+O opens it", style="dim italic"
            )
        return out

    def parent_of(self, msg_id: str) -> Message | None:
        for m in self.shown:
            if m.id == msg_id:
                return m
        if msg_id not in self.parents:
            self.parents[msg_id] = chat_verb.find(self.ctx.spool, msg_id)
        return self.parents[msg_id]

    def selected(self) -> Message | None:
        index = self.conversation().highlighted
        return self.rows[index].msg if index is not None and 0 <= index < len(self.rows) else None

    def conversation_text(self) -> str:
        """The conversation pane's text, as plain text."""
        return "\n".join(t.plain for parts in self.parts for t in parts if t is not None)

    def arrived(self, batch: list[Message]) -> None:
        """New records from the feed: drawn when they belong to the room on screen, counted otherwise."""
        mine = [m for m in batch if self.current.room in chat_verb.rooms_for(m, self.user)]
        fresh_rooms = False
        for m in batch:
            for room in chat_verb.rooms_for(m, self.user):
                r = self.rooms.get(room)
                if r is None:
                    # A direct room is a conversation of the human's only once it wrote there or was written to.
                    direct = room.startswith(("d-", "h-")) and (m.from_id == self.user or m.room != room)
                    fresh_rooms = fresh_rooms or direct or room.startswith(("p-", "@"))
                elif r is not self.current and m.from_id != self.user and not (r.kind == "direct" and m.room == room):
                    r.unread += 1  # (a session's direct room holds others' mail to it too: not this conversation)
        if self.current.kind == "direct":  # d-<sid> or h-<user>: what the two wrote each other
            mine = [m for m in mine if chat_verb.peer_of(m) in (self.user, self.current.room[2:])]
        if mine:
            known = {m.id for m in self.shown}
            add = [m for m in mine if m.id not in known]  # the feed's first rescan may repeat what is shown
            if add:
                self.shown = sorted(self.shown + add, key=lambda m: m.id)
                if len(self.shown) > 2 * chat_verb.HISTORY:
                    # Dropped in one go, not one per arrival: dropping the oldest redraws the whole room.
                    self.shown = self.shown[-chat_verb.HISTORY :]
                self.redraw_after(add)
                self.call_after_refresh(self.mark_shown)
        if fresh_rooms:
            self.refresh_rooms()
        self.update_room_labels()

    def redraw_after(self, add: list[Message]) -> None:
        view = self.conversation()
        at_end = view.highlighted is None or view.highlighted >= len(self.rows) - 1
        rows = threads.thread_order(self.shown, self.folded)
        drawn = [(r.msg.id, r.replies) for r in self.rows]
        if [(r.msg.id, r.replies) for r in rows[: len(drawn)]] == drawn and all(
            r.replies == 0 for r in rows[len(drawn) :]
        ):
            # The common case, a new message at the end: append it, nothing else is redrawn.
            view.add_options([self.option(row) for row in rows[len(drawn) :]])
            self.rows = rows
            self.query_one("#room-title", Label).update(self.title_text())
            if at_end:
                view.highlighted = len(rows) - 1
                view.scroll_end(animate=False)
            return
        self.redraw(follow=at_end)

    def on_conversation_viewed(self, _: Conversation.Viewed) -> None:
        self.mark_shown()

    def mark_shown(self) -> None:
        """Mark read the mailbox messages with a line in view: the mailbox's own, or the other side
        of a direct conversation. What was loaded but never scrolled to stays unread."""
        box = rooms.human_room(self.user)
        if not any(m.room == box for m in self.shown):
            return
        in_view = self.conversation().in_view()
        shown = {self.rows[i].msg.id for i in in_view if i < len(self.rows) and self.rows[i].msg.room == box}
        if shown and chat_verb.mark_read(self.ctx.spool, self.user, shown):
            self.update_room_labels()

    # ------------------------------------------------------------------ peers

    def refresh_peers(self) -> None:
        try:
            found = peers_verb.run(self.ctx, peers_verb.PeersRequest())
        except AttendError as e:
            self.query_one("#peers", Static).update(Text(f"peers: {e}"))
            return
        # One peer is two lines, each cut to the pane's width rather than wrapped: a wrapped line of
        # channels would start at the margin and read as another peer. The second names the client
        # the session runs in (claude, codex, gemini), its project and its channels.
        out = Text(no_wrap=True, overflow="ellipsis")
        for p in found.peers:
            if out:
                out.append("\n")
            out.append(framing.label(p.display), style="bold")
            out.append(f" {p.status}", style="green" if p.status == "working" else "dim")
            project = p.project.rstrip("/").rsplit("/", 1)[-1] or "/"
            # The client leads the second line, so the cut at the pane's edge takes channels first.
            out.append("\n  " + framing.label(p.client), style="cyan")
            out.append(" in " + framing.label(project), style="dim")
            if p.channels:
                out.append(" " + " ".join(framing.inline(c) for c in p.channels), style="dim")
            for x in (x for x in found.leases if x.session == p.session_id):  # who holds what
                out.append("\n  holds " + framing.inline(x.glob), style="yellow")
        for h in found.humans:
            if not h.self:
                out.append(("\n" if out else "") + framing.label(h.user), style="bold")
                out.append(" human", style="dim")
        if not out:
            out = Text("no live sessions", style="dim")
        self.query_one("#peers", Static).update(out)
        earlier = {n for p in found.peers for n in p.earlier}  # stable names: an earlier name still reaches it
        self.peer_names = sorted(
            {p.display for p in found.peers} | earlier | set(humans.known(self.ctx.spool)) - {self.user}
        )

    # ------------------------------------------------------------------ compose

    def action_write(self) -> None:
        self.query_one("#compose", Compose).focus()

    def leave_compose(self) -> None:
        if self.replying is not None:
            self.replying = None
            self.say(self.addressed_to())
            return
        self.conversation().focus()

    def action_reply(self) -> None:
        msg = self.selected()
        if msg is None:
            self.say("no message chosen: Tab to the conversation, Up/Down to choose one", error=True)
            return
        self.replying = msg
        self.say(self.addressed_to())
        self.action_write()

    def action_fold(self) -> None:
        msg = self.selected()
        if msg is None:
            return
        root = threads.root_of(self.shown, msg.id)
        self.folded.symmetric_difference_update({root})
        self.redraw()
        ids = [r.msg.id for r in self.rows]
        if root in ids:
            self.conversation().highlighted = ids.index(root)

    def action_open(self) -> None:
        msg = self.selected()
        if msg is None:
            self.say("no message chosen: Tab to the conversation, Up/Down to choose one", error=True)
            return
        self.opened.symmetric_difference_update({msg.id})
        self.redraw()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_search(self) -> None:
        if isinstance(self.screen, SearchScreen):
            return
        self.push_screen(SearchScreen(self.ctx, self.clock, self.room_label), callback=self.open_found)

    def room_label(self, room: str) -> str:
        """A room as the rooms pane names it, or (one it does not list) as attend search does."""
        from attend.verbs.search_core import room_label

        known = self.rooms.get(room)
        return framing.label(framing.inline(known.label)) if known is not None else room_label(room)

    def open_found(self, found: search_verb.Found | None) -> None:
        """A search result chosen: shown whole in its room when the room is on the rooms pane and holds
        it among what it loads, else on a screen of its own."""
        if found is None:
            return
        room = self.rooms.get(found.room)
        if room is not None:
            if room is not self.current:
                self.show_room(room)
                self.query_one("#rooms", ListView).index = list(self.rooms).index(room.room)
            ids = [r.msg.id for r in self.rows]
            if found.id in ids:
                self.opened.add(found.id)
                self.redraw()
                view = self.conversation()
                view.highlighted = [r.msg.id for r in self.rows].index(found.id)
                view.scroll_to_highlight()
                view.focus()
                self.say(f"found in {framing.inline(room.label)}: r replies to it")
                return
        msg = chat_verb.find(self.ctx.spool, found.id)
        if msg is None:
            self.say(f"message {found.id} is gone (cleaned up)", error=True)
            return
        head = Text()
        head.append(self.clock(name_time(msg.id)), style="dim")
        head.append(" ")
        head.append(framing.label(msg.sender), style="bold")
        head.append(" in " + self.room_label(msg.room), style="cyan")
        head.append(f"  {msg.id}", style="dim")
        self.push_screen(MessageScreen(head, self.make_body(msg, whole=True)))

    def addressed_to(self) -> str:
        if self.replying is not None:
            m = self.replying
            return f"reply to {framing.label(m.sender)}: {framing.inline(m.body[:200])[:SNIPPET]}  (Esc cancels)"
        if self.current.kind == "mailbox":
            return "your mailbox: Ctrl+R replies to the chosen message; or start with @name"
        return f"to {framing.inline(self.current.label)} · @name or #channel first: elsewhere"

    def say(self, text: str, error: bool = False) -> None:
        status = self.query_one("#status", Static)
        status.update(Text(text))
        status.set_class(error, "error")

    def complete(self) -> bool:
        """Complete the @name or #channel the cursor ends; False when there is none to complete."""
        compose = self.query_one("#compose", Compose)
        word, start = compose.word_at_cursor()
        options = threads.completions(word, self.peer_names, self.channel_names)
        if word[:1] not in ("@", "#"):
            return False
        if not options:
            self.say(f"no peer or channel starts with {word}", error=True)
            return True
        prefix = threads.common_prefix(options)
        done = options[0] + " " if len(options) == 1 else prefix
        if len(done.rstrip()) >= len(word):
            compose.replace(done, start, compose.cursor_location)
        self.say("  ".join(options) if len(options) > 1 else self.addressed_to())
        return True

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        """A refusal is about the line it refused: once that line is cleared, the hint comes back (an old
        refusal above an empty compose line read as a refusal of what comes next)."""
        status = self.query_one("#status", Static)
        if isinstance(event.text_area, Compose) and not event.text_area.text.strip() and status.has_class("error"):
            self.say(self.addressed_to())

    def on_compose_submitted(self, event: Compose.Submitted) -> None:
        text = event.text
        if not text.strip():
            return  # an empty line sends nothing
        if text.split(maxsplit=1)[0] in INBOUND_COMMANDS:
            self.inbound(text)
            return
        try:
            sent = self.send(text)
        except AttendError as e:
            self.say(str(e), error=True)  # nothing was sent; the line stays for fixing
            return
        if sent is None:
            return
        self.query_one("#compose", Compose).clear()
        self.replying = None
        where = framing.inline(sent.scope if sent.scope != "direct" else sent.to_name or sent.to)
        rows = [(r.name, r.id, r.kind, r.outcome) for r in sent.recipients]
        self.say(f"sent to {where}: {framing.inline(outcomes.summary(rows))}")

    def inbound(self, text: str) -> None:
        """``/inbound`` lists what the sessions' inbound rules hold; ``/accept ID`` shows one once to
        its session, ``/decline ID`` keeps it unshown (the verb the CLI and MCP call)."""
        from attend.verbs import inbound as inbound_verb

        command, _, rest = text.strip().partition(" ")
        msg_id = rest.strip() or None
        action = {"/accept": "accept", "/decline": "decline"}.get(command)
        if action is not None and msg_id is None:
            self.say(f"{command} needs a message id: /inbound lists what waits", error=True)
            return
        try:
            result = inbound_verb.run(self.ctx, inbound_verb.InboundRequest(action, msg_id))
        except AttendError as e:
            self.say(str(e), error=True)
            return
        self.query_one("#compose", Compose).clear()
        done = f"{'declined' if action == 'decline' else 'accepted'} {msg_id}; " if action else ""
        if not result.waiting:
            self.say(done + "nothing waits for any session")
            return
        listed = "; ".join(
            f"{w.id} for {framing.label(w.session_name)} from {framing.label(w.sender)}: "
            f"{framing.inline(w.subject)}{' (unreviewed)' if w.unreviewed else ''}"
            for w in result.waiting[:INBOUND_SHOWN]
        )
        beyond = len(result.waiting) - INBOUND_SHOWN
        more = f" (+{beyond} more: attend inbound)" if beyond > 0 else ""
        self.say(f"{done}{len(result.waiting)} waiting: {listed}{more} · /accept ID or /decline ID")

    def send(self, text: str) -> Sent | None:
        try:
            return compose.send_line(self.ctx, text, self.current.to, self.replying.id if self.replying else None)
        except compose.Nowhere:
            self.say(self.addressed_to(), error=True)
            return None
