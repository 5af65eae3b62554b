"""web: the human's seat in a browser. ``run`` opens the seat (the spool checked, the caller a human,
the port a port) before anything listens; the page itself is attend/web/, which reads and sends
through attend/verbs/chat.py and the send and reply verbs, as `attend chat` does."""

from __future__ import annotations

from dataclasses import dataclass

from attend.domain.sessions import humans
from attend.domain.sessions.context import Context
from attend.errors import UsageError
from attend.verbs import chat as chat_verb

DESCRIPTION = (
    "Open the human's seat in a browser: a page on 127.0.0.1 with the rooms and their unread counts, "
    "the conversation in threads, the live peers and a compose box (Enter sends; @name and #channel "
    "address the line, as in chat), live as messages land. The first line printed is the address to "
    "open; it carries a one-time token, exchanged for a cookie, and without it every request is "
    "refused. Reading marks your mail read only when you open it or say so. Ctrl+C stops it."
)
PARAMS = {
    "port": "The port to listen on, on 127.0.0.1 (0 picks a free one).",
    "open": "Open the page in the default browser as well.",
}
EXAMPLES = (  # the end of `attend web --help` (CLI only)
    ("attend web", "serve the page; open the address it prints"),
    ("attend web --open", "and open it in the default browser"),
    ("attend web --port 0", "on a free port"),
)

DEFAULT_PORT = 8470


@dataclass(frozen=True)
class WebRequest:
    port: int = DEFAULT_PORT
    open: bool = False


@dataclass
class WebSeat:
    user: str  # the human, as its mailbox is named
    port: int
    open: bool


def run(ctx: Context, req: WebRequest) -> WebSeat:
    """Refuses before anything listens: a port out of range, a refused spool, a Claude session."""
    if not 0 <= req.port <= 65535:
        raise UsageError(f"--port {req.port} is not a port: give 1-65535, or 0 for a free one")
    spool = ctx.spool
    user = chat_verb.human_seat(ctx, "attend web")
    humans.note_active(spool, user)  # the page uses the bus: peers lists the human, and it can be addressed
    return WebSeat(user, req.port, req.open)
