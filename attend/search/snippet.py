"""The piece of a message's body a search result shows: around the first match, each match marked
``**like this**``, on one line. Made from the record itself (the index keeps no bodies), folding case
and accents as the index does, so ``cafe`` marks ``Café``."""

from __future__ import annotations

import re
import unicodedata

from attend.search.query import Term

WIDTH = 120  # characters of body shown
BEFORE = 30  # of them before the first match, when the body is longer
MARK = "**"


def fold(text: str) -> tuple[str, list[int]]:
    """Text lowercased with its accents dropped, and for each folded character the index of the one it
    came from (so a match found in the folded text marks the original)."""
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


def _pattern(terms: list[Term]) -> re.Pattern[str] | None:
    alts: list[str] = []
    for term in terms:
        if term.ident:
            pieces = [re.escape(fold(term.text)[0])]
        else:
            words = term.words()
            pieces = [r"[\W_]+".join(re.escape(fold(w)[0]) for w in words)] if words else []
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            alts.append(piece + (r"[^\W_]*" if term.prefix and last else r"(?![^\W_])"))
    if not alts:
        return None
    return re.compile(r"(?<![^\W_])(?:" + "|".join(sorted(set(alts), key=len, reverse=True)) + ")")


def make(body: str, terms: list[Term], width: int = WIDTH) -> str:
    """One line of ``body`` around the first match of ``terms``, the matches marked."""
    text = "".join(ch if ch.isprintable() else " " for ch in body)
    spans: list[tuple[int, int]] = []
    pattern = _pattern(terms)
    if pattern is not None:
        folded, where = fold(text)
        for m in pattern.finditer(folded):
            if m.end() > m.start():
                spans.append((where[m.start()], where[m.end() - 1] + 1))
            if len(spans) >= 32:
                break
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
