"""The work of ``attend search`` (attend/verbs/search.py), without ``dataclasses``: the click-free CLI path
(attend/cli/fastsearch.py) calls it directly, as a search is a process a person waits for and
``dataclasses`` (with ``inspect``) costs more than the rest of its imports together. Its values are
``Record``s; the verb turns them into its typed result.

Who may search what: a session's search covers the rooms its inbox covers (#open, its project, its direct
room, its channels; ``inbox.caller_rooms`` decides, as for ``attend inbox``), the direct rooms of the ids
it had before a /clear, and what it sent itself; a human's covers every room of the spool, as
``inbox --all`` does.
"""

from __future__ import annotations

from attend.domain.core import rooms
from attend.domain.sessions.context import Context
from attend.errors import UsageError
from attend.layout import NAME_RE, ROOMS, iso, name_time
from attend.record import Record
from attend.search import index as ix
from attend.search import query as q
from attend.search import snippet

MAX_LIMIT = 100


class Hit(Record):
    id: str
    at: str  # ISO 8601, UTC
    room: str
    sender: str
    snippet: str  # one line of the body around the match, each match **marked**


class Found(Record):
    results: list[Hit]
    notes: list[str]
    warnings: list[str]


def read_query(
    text: str, sender: str | None = None, room: tuple[str, ...] = (), since: str | None = None, re: str | None = None
) -> q.Query:
    """The query text and the filter flags, as one Query."""
    query = q.parse(text, filters_given=bool(sender or room or since or re))
    return query._replace(
        senders=query.senders + ((sender.strip(),) if sender and sender.strip() else ()),
        rooms=query.rooms + tuple(room),
        since=since if since is not None else query.since,
        thread=re if re is not None else query.thread,
    )


def find(
    ctx: Context,
    text: str,
    limit: int = 10,
    sender: str | None = None,
    room: tuple[str, ...] = (),
    since: str | None = None,
    re: str | None = None,
) -> Found:
    if not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"limit must be between 1 and {MAX_LIMIT}")
    query = read_query(text, sender, room, since, re)
    who = ctx.who()
    filters = ix.Filters(me=who.id, senders=query.senders)
    if who.is_agent:
        from attend.domain.sessions import sessions
        from attend.verbs import inbox  # the rooms a session's inbox covers

        filters.rooms = inbox.caller_rooms(ctx.spool, who, (), False)
        # And the direct rooms of the ids it had before a /clear: mail to it still.
        filters.rooms += [rooms.direct_room(old) for old in sessions.predecessors(ctx.spool, who.id)]
    if query.rooms:
        filters.within = [_room(raw, who.id, who.is_agent) for raw in query.rooms]
        outside = [r for r in filters.within if filters.rooms is not None and r not in filters.rooms]
        if outside:
            raise q.QueryError(f"room {outside[0]} is not one you receive, so you cannot search it")
    if query.since is not None:
        from attend.verbs.inbox_filters import parse_since

        try:
            filters.floor_us = ix.since_us(parse_since(query.since))
        except UsageError as e:
            raise q.QueryError(str(e).replace("--since", "since:")) from None
    if query.thread is not None:
        filters.thread = _message_name(query.thread)
    if not ctx.spool.exists(ROOMS):
        return Found([], list(query.notes), [])  # nothing was ever sent: no index is made
    index = ix.Index(ctx.spool)
    try:
        caught = index.ensure()
        found: list[Hit] = []
        for hit in index.search(query, filters, limit):
            try:
                body = _body(ctx, hit.room, hit.name)
            except FileNotFoundError:
                index.forget(hit.name)  # removed since the catch-up: never shown, and gone from the index
                continue
            mark = snippet.make(body, query.terms())
            found.append(Hit(hit.name, iso(name_time(hit.name)), hit.room, hit.sender, mark))
    finally:
        index.close()
    return Found(found, list(query.notes), [f"not indexed: {s}" for s in caught.skipped[:3]])


def room_label(room: str) -> str:
    """A room as people name it: #open, #channel; a project's or a direct room by its name (p-…, d-…, h-…)."""
    from attend.domain.core import framing

    label = rooms.scope(room)
    return framing.label(label if label.startswith("#") else room)


def document(found: Found) -> dict[str, object]:
    """The verb's --json document (attend.verbs.document of its result), made without dataclasses."""
    return {"results": [h._asdict() for h in found.results], "notes": found.notes, "warnings": found.warnings}


def _body(ctx: Context, room: str, name: str) -> str:
    """A result's body, for its snippet: what follows the header block, as ``envelope.parse`` reads it.
    The record was parsed whole when it was indexed (names are never reused), so only the split is
    done again here: a whole parse checks ids with regular expressions, ~4 ms of a process's start."""
    _head, sep, body = ctx.spool.read_record(room, name).partition(b"\n\n")
    return body.decode("utf-8", "replace") if sep else ""


def _room(raw: str, me: str, agent: bool) -> str:
    if raw in ("@me", "me"):
        return rooms.direct_room(me) if agent else rooms.human_room(me)
    if raw.startswith("@"):
        raise q.QueryError(f"room:{raw}: only room:@me names a direct room; use from:NAME for a sender")
    from attend.verbs.inbox import room_arg

    try:
        return room_arg(raw)
    except UsageError as e:
        raise q.QueryError(f"room:{raw}: {e}") from None


def _message_name(raw: str) -> str:
    from attend.domain.core import envelope

    name = envelope.name_of(raw) if raw.startswith("<") else raw
    if name is None or not NAME_RE.fullmatch(name):
        raise q.QueryError(f"re:{raw[:80]} is not a message id (attend inbox and attend search show ids)")
    return name
