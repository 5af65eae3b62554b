"""search: find what was said, in every room the caller may read, best match first (attend/search/).

Results are headers and a snippet, never bodies: ``inbox <id>`` reads one. The index is caught up at
query time (attend/search/index.py). The work is attend/verbs/search_core.py's (who may search what is
said there); this module holds the verb's typed request and result.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.domain.sessions.context import Context
from attend.verbs import search_core

DESCRIPTION = "Search what you may read; inbox reads one."
PARAMS = {
    "query": 'Words, "phrase", pre*, OR, -x, from:X, room:#x, since:2d, re:ID',
    "limit": "1-100",
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
MAX_LIMIT = search_core.MAX_LIMIT


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


def run(ctx: Context, req: SearchRequest) -> SearchResult:
    found = search_core.find(ctx, req.query, req.limit, req.sender, req.room, req.since, req.re)
    return SearchResult([Found(*h) for h in found.results], found.notes, found.warnings)
