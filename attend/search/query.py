"""The query language of ``attend search``, read by hand into terms and filters.

Bare words match as words, in any order (all of them); ``"a phrase"``; ``prefix*``; ``a OR b`` (OR binds
tighter than the implicit AND: ``lock OR mutex deploy`` is ``(lock OR mutex) AND deploy``); ``-word`` or
``NOT word`` leaves out what holds it; ``from:NAME``, ``room:#deploy`` / ``room:@me``, ``since:2d`` /
``since:2026-12-01`` and ``re:ID`` filter. An identifier (``POL-358``, ``attend/spool.py``, ``user@host``,
``a:b``: words joined by ``- / . @ : _ # + ~``) matches as written, through a column of its own.

Every term reaches the engine as a quoted string (``"`` doubled inside it), never as syntax: the
expression is built here from the parsed terms. What cannot be read is read as best it can be (an
unbalanced quote closes at the end, stray operators and punctuation are dropped, each reading noted);
what cannot be read at all (nothing to search for, too long) is a QueryError, one line, exit 1.
"""

from __future__ import annotations

from attend.errors import AttendError
from attend.layout import LazyPattern
from attend.record import Record

MAX_QUERY = 2000  # characters in a query
MAX_WORD = 256  # characters kept of one term (longer ones are cut: no word in a message is that long)
MAX_TERMS = 64
MAX_IDENT_WORDS = 8  # an identifier longer than this many words is looked for as a phrase instead
FILTERS = ("from", "room", "since", "re")

# A word as the tokenizer sees one: a run of letters and digits (str.isalnum, as the regex [^\W_] reads).
# Read without the regex module on a query's way (a search is a process a person waits for; ``re`` is
# ~4 ms of its start); only catching up (``identifiers``) compiles a pattern.
SEPARATORS = "-/.@:_#+~"
# Words joined by one separator each: POL-358, attend/spool.py, user@host, a:b, my_var.
WORD_RE = LazyPattern(r"[^\W_]+")
IDENT_RE = LazyPattern(r"(?<![^\W_])[^\W_]+(?:[-/.@:_#+~][^\W_]+)+")
_CODES = str.maketrans({"q": "qq", **{c: "q" + "abcdefghi"[i] for i, c in enumerate(SEPARATORS)}})
_LEADING = "([{<'`,;"
_TRAILING = ")]}>'`,;.!?:"


class QueryError(AttendError):
    """A query that cannot be read: one line saying what is wrong (exit 1)."""

    code = "query"


class Term(Record):
    text: str  # as written, cleaned of stray punctuation
    phrase: bool = False  # "a phrase": its words in this order
    prefix: bool = False  # prefix*: the last word is a prefix

    @property
    def ident(self) -> bool:
        return not self.phrase and is_ident(self.text)

    def words(self) -> list[str]:
        return words(self.text)

    def expression(self) -> str:
        """The term as an FTS5 expression: a column filter and one quoted string."""
        if self.ident:
            return f'ids : "{encode(self.text)}"' + (" *" if self.prefix else "")
        quoted = " ".join(self.words()).replace('"', '""')
        return f'body : "{quoted}"' + (" *" if self.prefix else "")


class Query(Record):
    groups: tuple[tuple[Term, ...], ...] = ()  # every group must match; one term of a group is enough
    exclude: tuple[Term, ...] = ()  # none of these may match
    senders: tuple[str, ...] = ()  # from: (any of them)
    rooms: tuple[str, ...] = ()  # room: (any of them)
    since: str | None = None
    thread: str | None = None  # re:
    notes: tuple[str, ...] = ()  # the best readings made

    def match(self) -> str | None:
        """The FTS5 expression of the terms that must match; None when only filters (and exclusions) are given."""
        if not self.groups:
            return None
        parts = [
            group[0].expression() if len(group) == 1 else "(" + " OR ".join(t.expression() for t in group) + ")"
            for group in self.groups
        ]
        return " AND ".join(parts)

    def excluded(self) -> str | None:
        """The FTS5 expression of what must not match (any of the excluded terms)."""
        if not self.exclude:
            return None
        return " OR ".join(t.expression() for t in self.exclude)

    def expression(self) -> str | None:
        """The whole FTS5 expression when there is something to match: the terms, NOT the exclusions."""
        match, excluded = self.match(), self.excluded()
        if match is None:
            return None
        return match if excluded is None else f"({match}) NOT ({excluded})"

    def terms(self) -> list[Term]:
        """Every term that must match, for marking in a snippet."""
        return [t for group in self.groups for t in group]

    @property
    def empty(self) -> bool:
        return not (self.groups or self.exclude or self.senders or self.rooms or self.since or self.thread)


def words(text: str) -> list[str]:
    """The runs of letters and digits of ``text``."""
    out: list[str] = []
    start = -1
    for i, ch in enumerate(text):
        if ch.isalnum():
            if start < 0:
                start = i
        elif start >= 0:
            out.append(text[start:i])
            start = -1
    if start >= 0:
        out.append(text[start:])
    return out


def is_ident(text: str) -> bool:
    """Words joined by one separator each (IDENT_RE, read without the regex module), at most MAX_IDENT_WORDS."""
    if not text or not text[0].isalnum() or not text[-1].isalnum():
        return False
    joins = 0
    last = ""
    for ch in text:
        if not ch.isalnum():
            if ch not in SEPARATORS or not last.isalnum():
                return False
            joins += 1
        last = ch
    return 0 < joins < MAX_IDENT_WORDS


def encode(ident: str) -> str:
    """An identifier as one token of letters and digits (the tokenizer keeps it whole): lowercased, each
    separator ``q`` and a letter, ``q`` itself ``qq``. One-to-one, so only the identifier matches it."""
    return ident.lower().translate(_CODES)


def identifiers(body: str) -> list[str]:
    """The identifier tokens of a body, for its ``ids`` column: each identifier, and each run of two or
    more of its words (up to MAX_IDENT_WORDS; `spool.py` is found in `attend/spool.py:42`), encoded."""
    out: list[str] = []
    for chunk in body.split():
        if len(chunk) < 3 or chunk.isalnum() or chunk[:-1].isalnum():
            continue  # most words, and words before a comma or a stop: no regex run
        for m in IDENT_RE.compiled.finditer(chunk):
            text = m.group()
            if len(text) > 4 * MAX_WORD:
                continue
            spans = _spans(text)[:16]
            for i in range(len(spans)):
                for j in range(i + 1, min(len(spans), i + MAX_IDENT_WORDS)):
                    out.append(encode(text[spans[i][0] : spans[j][1]]))
    return out


def _spans(text: str) -> list[tuple[int, int]]:
    """Where each word of an identifier is (catching up: the regex module is loaded by then)."""
    return [m.span() for m in WORD_RE.compiled.finditer(text)]


# ---------------------------------------------------------------------- reading


def _clean(text: str) -> str:
    """Control characters (NUL included) and line breaks are spaces."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else " " for ch in text)


def _lex(text: str) -> list[tuple[str, str]]:
    """(kind, text) tokens: ("phrase", inner) for a quoted span, ("word", run) for anything else."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch == '"':
            end = text.find('"', i + 1)
            if end < 0:  # an unbalanced quote: left out, and what follows it read as words
                out.append(("unbalanced", ""))
                i += 1
                continue
            inner = text[i + 1 : end]
            i = end + 1
            star = i < n and text[i] == "*"
            if star:
                i += 1
            out.append(("phrase*" if star else "phrase", inner))
            continue
        j = i
        while j < n and not text[j].isspace() and text[j] != '"':
            j += 1
        word = text[i:j]
        i = j
        # `from:"Hana beta"` and `-"a phrase"`: the quoted part belongs to the word before it.
        if i < n and text[i] == '"' and (word == "-" or (word.endswith(":") and word[:-1].lower() in FILTERS)):
            end = text.find('"', i + 1)
            inner = text[i + 1 :] if end < 0 else text[i + 1 : end]
            i = n if end < 0 else end + 1
            out.append(("neg-phrase" if word == "-" else "filter", inner if word == "-" else word + inner))
            continue
        out.append(("word", word))
    return out


def parse(text: str, filters_given: bool = False) -> Query:
    """Read a query (see the module's docstring). Never raises but QueryError; ``filters_given``: the
    caller adds filters of its own (flags), so a query with nothing in it is not an error."""
    if len(text) > MAX_QUERY:
        raise QueryError(f"the query is {len(text)} characters long; at most {MAX_QUERY}")
    notes: list[str] = []
    groups: list[list[Term]] = []
    exclude: list[Term] = []
    senders: list[str] = []
    room_list: list[str] = []
    since: str | None = None
    thread: str | None = None
    negate = False
    join_next = False  # the last token was OR

    def add(term: Term | None, neg: bool) -> None:
        nonlocal join_next
        if term is None:
            join_next = False
            return
        if neg:
            exclude.append(term)
        elif join_next and groups:
            groups[-1].append(term)
        else:
            groups.append([term])
        join_next = False

    for kind, raw in _lex(_clean(text)):
        if kind == "unbalanced":
            notes.append("a quote with no closing quote was left out")
            continue
        if kind in ("phrase", "phrase*", "neg-phrase"):
            add(_term(raw, True, kind == "phrase*", notes), negate or kind == "neg-phrase")
            negate = False
            continue
        if kind == "filter" or (":" in raw and raw.split(":", 1)[0].lower() in FILTERS):
            key, _, value = raw.partition(":")
            value = value.strip()
            if not value:
                notes.append(f"{key}: with no value after it was left out")
                continue
            key = key.lower()
            if key == "from":
                senders.append(value[:MAX_WORD])
            elif key == "room":
                room_list.append(value[:MAX_WORD])
            elif key == "since":
                since = value[:MAX_WORD]
            else:
                thread = value[:MAX_WORD]
            continue
        if raw == "OR":
            if groups and not negate:
                join_next = True
            else:
                notes.append("OR with nothing before it was left out")
            continue
        if raw == "AND":
            continue
        if raw == "NOT":
            negate = True
            continue
        neg = negate
        negate = False
        if raw.startswith("-") and len(raw) > 1:
            neg, raw = True, raw.lstrip("-")
        add(_term(raw, False, False, notes), neg)
    if negate:
        notes.append("NOT at the end, with nothing after it, was left out")
    if sum(len(g) for g in groups) + len(exclude) > MAX_TERMS:
        raise QueryError(f"the query has more than {MAX_TERMS} terms; search for fewer")
    query = Query(
        tuple(tuple(g) for g in groups),
        tuple(exclude),
        tuple(senders),
        tuple(room_list),
        since,
        thread,
        tuple(dict.fromkeys(notes)),
    )
    if query.empty and not filters_given:
        raise QueryError(
            'nothing to search for: give words, "a phrase", prefix*, or a filter such as from:NAME or since:2d'
        )
    return query


def _term(raw: str, phrase: bool, prefix: bool, notes: list[str]) -> Term | None:
    text = raw.strip()
    if not phrase:
        text = text.lstrip(_LEADING)
        while text and text[-1] in _TRAILING + "*":
            if text[-1] == "*":
                prefix = True
            text = text[:-1]
    if len(text) > MAX_WORD:
        notes.append(f"a term longer than {MAX_WORD} characters was cut to its first {MAX_WORD}")
        text = text[:MAX_WORD]
    if not any(ch.isalnum() for ch in text):
        if raw.strip():
            notes.append(f"{raw.strip()[:40]!r} has no letters or digits to search for, so it was left out")
        return None
    return Term(text, phrase, prefix)
