"""reply: answer a message in its thread, in the parent's room, addressed to the parent's sender."""

from __future__ import annotations

from dataclasses import dataclass

from attend import identity
from attend.domain.core import envelope, rooms
from attend.domain.messages import addressing
from attend.domain.messages.outbound import check_id, check_message, check_on_behalf_of, deliver
from attend.domain.sessions import sessions
from attend.domain.sessions.context import Context
from attend.errors import AttendError, NotFoundError
from attend.layout import POSTED
from attend.spool import RefusedEntry, Spool
from attend.verbs.send import Sent, sent

DESCRIPTION = "Reply in a message's thread (default: the newest one shown to you), in its room, to its sender."
PARAMS = {
    "message": "The text (UTF-8, at most 64 KiB).",
    "re": "The message id to answer, if not the newest.",
    "to": "Override recipients, as send's.",
    "channel": "Override: in this channel.",
    "broadcast": "Override: to everyone.",
    "on_behalf_of": "Whom you act for (an id or name), recorded in the envelope.",
}
EXAMPLES = (  # the end of `attend reply --help` (CLI only)
    ('attend reply --re <id> "on it"', "thread under a message (ids from attend inbox; a unique prefix will do)"),
    ('attend reply "done"', "a session: answer the newest message it was shown"),
    ('attend reply --re <id> --broadcast "fixed for all"', "thread, but to everyone"),
)


@dataclass(frozen=True)
class ReplyRequest:
    message: str
    re: str | None = None
    to: str | None = None
    channel: str | None = None
    broadcast: bool = False
    on_behalf_of: str | None = None


def find_record(spool: Spool, msg_id: str) -> tuple[str, envelope.Signal] | None:
    """The room and parsed record of a message id, wherever it lives. A human's mailbox comes last: a
    reply to a human's message is linked there as well as into its own room, which is where it lives."""
    for room in sorted(spool.rooms(), key=lambda r: r.startswith("h-")):
        try:
            return room, envelope.parse(spool.read_record(room, msg_id))
        except FileNotFoundError:
            continue
        except RefusedEntry:
            raise  # planted in the spool: say so, rather than "no such message"
        except (OSError, envelope.EnvelopeError):
            return None
    return None


def own_room(spool: Spool, parent: envelope.Signal) -> str:
    """The room only the parent's sender reads: its direct room, or a human's own room. A relayed
    parent's sender is on another host (its From-Id carries ``@<host>``): the room is that host's."""
    if parent.via:
        return ("h-" if parent.from_kind == "human" else "d-") + parent.from_id
    if parent.from_kind == "human":
        return rooms.human_room(parent.from_id)
    return rooms.direct_room(sessions.moved_to(spool, parent.from_id))


def hears(spool: Spool, parent: envelope.Signal, room: str) -> bool:
    """Whether the parent's sender receives ``room`` now (so a reply there reaches it)."""
    if parent.via:  # another host's: it hears #open and the channel it wrote to, through the relay
        return room == rooms.OPEN or room.startswith("@")
    if parent.from_kind == "human":
        # A human's mailbox holds only its own room: a reply anywhere else is linked there too.
        return room == rooms.human_room(parent.from_id)
    if room == rooms.OPEN:
        return True
    sid = sessions.moved_to(spool, parent.from_id)
    return sessions.is_enrolled(spool, sid) and room in sessions.receive_rooms(spool, sid)


def reply_rooms(spool: Spool, room: str, parent: envelope.Signal) -> list[str]:
    """A private message is answered privately; otherwise in the parent's room, plus the sender's own
    room when it would not hear that one (it wrote to a project or channel it is not in)."""
    if room.startswith(("d-", "h-")):
        return [own_room(spool, parent)]
    if hears(spool, parent, room):
        return [room]
    return [room, own_room(spool, parent)]


def last_shown(spool: Spool, sid: str) -> str | None:
    """The newest message from another session shown here: what a conduit recorded, or a socket post
    the transcript already shows although its conduit has not yet read the word (the model can answer
    a post within milliseconds of seeing it)."""
    # The post's record first: its conduit records last-inbound before it removes the record, so a
    # record read as gone means last-inbound, read after it, already names the post.
    record = spool.read_text("sessions", sid, POSTED)
    recorded = sessions.last_inbound(spool, sid)
    if record is None:
        return recorded
    from attend.conduits import inbox_client  # only while a post is pending

    pending = inbox_client.shown_post(record, settle=inbox_client.SETTLE)
    return max(filter(None, (recorded, pending)), default=None)


def run(ctx: Context, req: ReplyRequest) -> Sent:
    warnings = check_message(req.message, 'attend reply --re <id> "…"')
    to = req.to
    parent_id = check_id(req.re, "--re", ctx.spool)
    # `reply --to <message id>` (or a unique prefix of one) names the parent (how a human replies); any
    # other --to is an address.
    if to is not None and parent_id is None:
        from attend.domain.core import ids

        parent_id = ids.lookup(ctx.spool, to.strip(), "--to")
        to = to if parent_id is None else None
    obo = check_on_behalf_of(req.on_behalf_of)
    sender = ctx.sender()
    if parent_id is None:
        parent_id = last_shown(ctx.spool, sender.id) if sender.is_agent else None
        if parent_id is None:
            raise AttendError(
                "nothing to reply to: no peer message has been shown to this session yet (the sensor loop "
                "and the Stop hook show them; inbox does not); name one with --re <id>, or use send"
                if sender.is_agent
                else 'nothing to reply to: name the message, attend reply --re <id> "…" (attend inbox shows ids)'
            )
    found = find_record(ctx.spool, parent_id)
    if found is None:
        raise NotFoundError(f"no message with id {parent_id}; attend inbox lists what is here, or use send")
    room, parent = found
    if to is not None or req.channel is not None or req.broadcast:
        address = addressing.resolve(
            ctx.spool,
            addressing.scope_to(to, req.channel, req.broadcast),
            sender,
            ctx.sessions_dir,
            identity.human_id(ctx.env),
        )
    else:
        # Shown by the name the parent was sent under, the one its reader saw.
        address = addressing.Address(
            reply_rooms(ctx.spool, room, parent), parent.from_id, parent.sender or parent.from_id
        )
        if parent.via:  # its sender is on another host: refused where no relay would carry the reply
            addressing.refuse_unrelayed(ctx.spool, address.rooms)
    return sent(deliver(ctx, sender, req.message, address, parent_id, obo, warnings))
