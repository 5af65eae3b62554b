"""thread: a message's whole thread, from its root, each reply in send order (the CLI indents each
under what it answers, as `attend chat` draws a thread)."""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.domain.core import ids
from attend.domain.sessions.context import Context
from attend.errors import NotFoundError
from attend.verbs import chat as chat_verb
from attend.verbs.inbox import Message

DESCRIPTION = (
    "Print the thread a message belongs to, from its root: every reply under what it answers, indented "
    "as attend chat shows it. Takes any message of the thread, by its id or a unique prefix of it."
)
EXAMPLES = (  # the end of `attend thread --help` (CLI only)
    ("attend thread 1796557827.M2", "the thread of that message (a unique prefix of its id)"),
    ("attend thread <id> --json", "the same, for a script: the root, then each reply"),
)
PARAMS: dict[str, str] = {"msg_id": "A message of the thread: its id, or a unique prefix of at least 6 characters."}

DEPTH_MAX = 100  # parents followed up to the root at most (a loop of re headers ends here)


@dataclass(frozen=True)
class ThreadRequest:
    msg_id: str


@dataclass
class Thread:
    root: str
    asked: str  # the full id of the message asked for
    messages: list[Message]  # the root first, then every reply in send order
    short: dict[str, str] = field(default_factory=dict)  # each id's short form (a unique prefix)
    warnings: list[str] = field(default_factory=list)


def run(ctx: Context, req: ThreadRequest) -> Thread:
    spool = ctx.spool
    asked = ids.resolve(spool, req.msg_id.strip())
    msg = chat_verb.find(spool, asked)
    if msg is None:
        raise NotFoundError(f"no message with id {asked}; it may have been cleaned up (attend inbox lists them)")
    path = [msg]
    warnings = []
    while msg.re is not None and len(path) < DEPTH_MAX:
        parent = chat_verb.find(spool, msg.re)
        if parent is None or parent.id in {m.id for m in path}:
            if parent is None:
                warnings.append(f"{msg.id} answers {msg.re}, which is gone (cleaned up): the thread starts below it")
            break
        msg = parent
        path.append(msg)
    root = msg
    # Replies are newer than the root, and live in the rooms of the thread's messages.
    members = {root.id: root}
    later = sorted((name, room) for room in {m.room for m in path} for name in spool.room_names(room) if name > root.id)
    for name, room in later:  # in send order across the rooms, so a reply's parent is already a member
        if name in members:
            continue
        reply = chat_verb.read(spool, room, name)
        if reply is not None and reply.re in members:
            members[reply.id] = reply
    thread = sorted(members.values(), key=lambda m: m.id)
    short = ids.shortest([m.id for m in thread], ids.all_ids(spool))
    return Thread(root.id, asked, thread, short, warnings)
