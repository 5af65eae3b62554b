"""The piece of a message's body a search result shows: around the first match, each match marked
``**like this**``, on one line. Made from the record itself (the index keeps no bodies), folding case
and accents as the index does, so ``cafe`` marks ``Café``."""

from __future__ import annotations

from attend.search.query import Term

WIDTH = 120  # characters of body shown
BEFORE = 30  # of them before the first match, when the body is longer
MARK = "**"
_CONTROLS = {c: " " for c in (*range(32), 127)}


def fold(text: str) -> tuple[str, list[int]]:
    """Text lowercased with its accents dropped, and for each folded character the index of the one it
    came from (so a match found in the folded text marks the original)."""
    if text.isascii():
        return text.lower(), list(range(len(text)))
    import unicodedata  # only a body with non-ASCII text needs it

    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        if ch.isascii():
            out.append(ch.lower())
            where.append(i)
            continue
        for part in unicodedata.normalize("NFKD", ch):
            if not unicodedata.combining(part):
                for low in part.lower():
                    out.append(low)
                    where.append(i)
    return "".join(out), where


def _pieces(terms: list[Term]) -> list[tuple[list[str], bool]]:
    """What to mark: per term, its folded words (an identifier as one piece, separators and all) and
    whether the last is a prefix."""
    out: list[tuple[list[str], bool]] = []
    for term in terms:
        if term.ident:
            out.append(([fold(term.text)[0]], term.prefix))
        else:
            folded = [fold(w)[0] for w in term.words()]
            if folded:
                out.append((folded, term.prefix))
    return out


def _match_at(text: str, pos: int, words: list[str], prefix: bool) -> int:
    """The end of ``words`` matched at ``pos`` of folded ``text`` (word boundaries kept; between two
    words anything but a letter or digit), or -1."""
    n = len(text)
    if pos > 0 and text[pos - 1].isalnum():
        return -1
    for k, word in enumerate(words):
        if not text.startswith(word, pos):
            return -1
        pos += len(word)
        if k == len(words) - 1:
            break
        if pos < n and text[pos].isalnum():
            return -1
        gap = pos
        while pos < n and not text[pos].isalnum():
            pos += 1
        if pos == gap:
            return -1
    if prefix:
        while pos < n and text[pos].isalnum():
            pos += 1
    elif pos < n and text[pos].isalnum():
        return -1
    return pos


def _matches(folded: str, terms: list[Term], most: int = 8) -> list[tuple[int, int]]:
    found: list[tuple[int, int]] = []
    for words, prefix in _pieces(terms):
        first = words[0]
        pos = folded.find(first)
        while pos >= 0 and len(found) < 4 * most:
            end = _match_at(folded, pos, words, prefix)
            if end > pos:
                found.append((pos, end))
                pos = folded.find(first, end)
            else:
                pos = folded.find(first, pos + 1)
    found.sort()
    out: list[tuple[int, int]] = []
    for s, e in found:  # overlapping matches (a word inside a phrase also asked for) are one
        if out and s < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out[:most]


def make(body: str, terms: list[Term], width: int = WIDTH) -> str:
    """One line of ``body`` around the first match of ``terms``, the matches marked."""
    text = body if body.isprintable() else body.translate(_CONTROLS)
    if not text.isprintable():  # rarer ones (a line separator, a bidi override): one by one
        text = "".join(ch if ch.isprintable() else " " for ch in text)
    spans: list[tuple[int, int]] = []
    if terms:
        folded, where = fold(text)
        spans = [(where[s], where[e - 1] + 1) for s, e in _matches(folded, terms)]
    start = 0
    if spans and len(text) > width:
        start = max(0, spans[0][0] - BEFORE)
        space = text.rfind(" ", 0, start + 1)
        start = space + 1 if space >= 0 and start - space < 15 else start
        start = min(start, max(0, len(text) - width))
    end = min(len(text), start + width)
    out: list[str] = []
    pos = start
    for s, e in spans:
        if s < pos or s >= end:
            continue
        e = min(e, end)
        out.append(text[pos:s])
        out.append(MARK + text[s:e] + MARK)
        pos = e
    out.append(text[pos:end])
    line = " ".join("".join(out).split())
    return ("…" if start > 0 else "") + line + ("…" if end < len(text) else "")
