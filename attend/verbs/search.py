"""search: find what was said, in every room the caller may read, best match first (attend/search/).

Who may search what: a session's search covers the rooms its inbox covers (#open, its project, its direct
room, its channels; ``inbox.caller_rooms`` decides, as for ``attend inbox``), and what it sent itself; a
human's covers every room of the spool, as ``inbox --all`` does. Results are headers and a snippet, never
bodies: ``inbox <id>`` reads one. The index is caught up here, at query time (attend/search/index.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from attend.domain import rooms
from attend.domain.context import Context
from attend.errors import UsageError
from attend.layout import NAME_RE, iso, name_time
from attend.search import index as ix
from attend.search import query as q
from attend.search import snippet

DESCRIPTION = "Search messages you may read, best first; inbox reads one."
PARAMS = {
    "query": 'Words, "phrase", pre*, OR, -word, from:NAME, room:#x, since:2d, re:ID',
    "limit": "Results (1-100).",
    "sender": "Only messages from this sender (as from:NAME).",
    "room": "Only these rooms (#channel, open, @me, or a room name; as room:).",
    "since": "Only messages newer than this: a duration (2h, 3d) or a date (2026-12-01) (as since:).",
    "re": "Only the thread of this message id (as re:ID).",
}
EXAMPLES = (  # the end of `attend search --help` (CLI only)
    ("attend search lock from:api since:2d", "what the api session said about the lock in two days"),
    ('attend search "deploy failed" OR rollback -staging', "a phrase or a word, leaving one out"),
    ("attend search POL-358 --json", "an identifier, as written; for a script"),
    ("attend inbox <id>", "read a result in full"),
)
MAX_LIMIT = 100


@dataclass(frozen=True)
class SearchRequest:
    query: str = ""
    limit: int = 10
    sender: str | None = None
    room: tuple[str, ...] = ()
    since: str | None = None
    re: str | None = None


@dataclass
class Found:
    id: str
    at: str  # ISO 8601, UTC
    room: str
    sender: str
    snippet: str  # one line of the body around the match, each match **marked**


@dataclass
class SearchResult:
    results: list[Found]
    notes: list[str] = field(default_factory=list)  # how a query that could not be read as written was read
    warnings: list[str] = field(default_factory=list)


def read_query(req: SearchRequest) -> q.Query:
    """The query text and the filter flags, as one Query."""
    flags = bool(req.sender or req.room or req.since or req.re)
    query = q.parse(req.query, filters_given=flags)
    return replace(
        query,
        senders=query.senders + ((req.sender.strip(),) if req.sender and req.sender.strip() else ()),
        rooms=query.rooms + tuple(req.room),
        since=req.since if req.since is not None else query.since,
        thread=req.re if req.re is not None else query.thread,
    )


def run(ctx: Context, req: SearchRequest) -> SearchResult:
    if not 1 <= req.limit <= MAX_LIMIT:
        raise UsageError(f"limit must be between 1 and {MAX_LIMIT}")
    query = read_query(req)
    who = ctx.who()
    filters = ix.Filters(me=who.id, senders=query.senders)
    if who.is_agent:
        from attend.verbs import inbox  # the rooms a session's inbox covers

        filters.rooms = inbox.caller_rooms(ctx.spool, who, (), False)
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
    if not ctx.spool.exists("rooms"):
        return SearchResult([], list(query.notes))  # nothing was ever sent: no index is made
    index = ix.Index(ctx.spool)
    try:
        caught = index.ensure()
        found: list[Found] = []
        for hit in index.search(query, filters, req.limit):
            try:
                body = _body(ctx, hit.room, hit.name)
            except FileNotFoundError:
                index.forget(hit.name)  # removed since the catch-up: never shown, and gone from the index
                continue
            found.append(
                Found(hit.name, iso(name_time(hit.name)), hit.room, hit.sender, snippet.make(body, query.terms()))
            )
    finally:
        index.close()
    return SearchResult(found, list(query.notes), [f"not indexed: {s}" for s in caught.skipped[:3]])


def _body(ctx: Context, room: str, name: str) -> str:
    from attend.domain import envelope

    try:
        return envelope.parse(ctx.spool.read_record(room, name)).body
    except envelope.EnvelopeError:
        return ""


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
    from attend.domain import envelope

    name = envelope.name_of(raw) if raw.startswith("<") else raw
    if name is None or not NAME_RE.fullmatch(name):
        raise q.QueryError(f"re:{raw[:80]} is not a message id (attend inbox and attend search show ids)")
    return name
