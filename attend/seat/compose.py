"""A line the human typed, sent: its ``@name``/``#channel`` words (threads.address) pick where it goes,
else the room on screen; a reply threads under the message chosen. Through the send and reply verbs,
so the record is the one `attend send` and `attend reply` write."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attend.errors import UsageError
from attend.seat import threads

if TYPE_CHECKING:
    from attend.domain.sessions.context import Context
    from attend.verbs.send import Sent


class Nowhere(UsageError):
    """A plain line typed where it has nowhere to go (the human's own mailbox, with no reply chosen)."""


def send_line(ctx: Context, text: str, here: str | None, re: str | None = None) -> Sent:
    """Send ``text``: to its address, else to ``here`` (the room on screen's address, send's --to);
    with ``re``, as a reply to that message. Raises UsageError (nothing sent) for a refused address, a
    line with nothing after its address, and Nowhere for a plain line where ``here`` is None."""
    from attend.verbs import reply as reply_verb  # the first send pays for these, not the start
    from attend.verbs import send as send_verb

    line = threads.address(text)
    if not line.body.strip():
        raise UsageError("nothing to send after the address")
    to = ",".join(line.names) if line.names else None
    if re is not None:
        return reply_verb.run(ctx, reply_verb.ReplyRequest(line.body, re=re, to=to, channel=line.channel))
    if to is None and line.channel is None:
        if here is None:
            raise Nowhere("your mailbox takes replies: choose a message and reply, or start the line with @name")
        to = here
    return send_verb.run(ctx, send_verb.SendRequest(line.body, to=to, channel=line.channel))
