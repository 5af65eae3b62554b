"""Codex's ``config.toml``, read so that no nesting or size takes install or doctor down.

Every file under the user's home is writable by every session of the same user. TOML parsers are
recursive: the standard library's raises ``RecursionError`` on 100,000 ``[`` and spends seconds on
a table header of 100,000 dotted parts; tomlkit bounds nesting only from 0.15 on. So the text is
measured first, in one linear pass: its size, and how deep its tables, dotted keys, arrays and
inline tables nest together. The bounds are those of attend's JSON readers (attend.safejson's
callers): a megabyte, and the 64 levels an MCP frame may have. A real config nests four or five.
"""

from __future__ import annotations

SIZE = 1 << 20  # bytes: as a session record or a spool file read at most
DEPTH = 64  # as attend.mcp.stdio.DEPTH; Codex's own config nests a handful of levels


class Unbounded(ValueError):
    """TOML larger or nested deeper than attend reads; the message says which, in one line."""


def read(path: str) -> str:
    """The text of the TOML file at ``path``, once it is within the bounds (``Unbounded`` if not).
    ``OSError`` and ``UnicodeDecodeError`` pass through, as from ``open``."""
    with open(path, "rb") as f:
        data = f.read(SIZE + 1)
    return check(data.decode("utf-8"), path)


def check(text: str, where: str = "the TOML") -> str:
    """``text``, once no more than ``SIZE`` bytes long and ``DEPTH`` levels deep."""
    if len(text) > SIZE or len(text.encode("utf-8", "surrogatepass")) > SIZE:
        raise Unbounded(f"{where} is larger than {SIZE >> 20} MiB, which attend does not read")
    if depth(text, DEPTH) > DEPTH:
        raise Unbounded(f"{where} nests deeper than {DEPTH} levels, which attend does not read")
    return text


def depth(text: str, stop: int) -> int:
    """How deep ``text`` nests: a table header's parts, then each key's dotted parts, each array and
    each inline table, one level apiece. Strings and comments are skipped; a dot in a value (a
    float, a time) counts nothing. Invalid TOML is measured as far as it goes (the parser refuses it
    after). Counting ends once ``stop`` is passed."""
    # Each open frame is (kind, base): kind "top" (the document), "{" or "["; base, the level of the
    # table it opens (its keys are one deeper, and more with dots) or of the array's items. In "top"
    # and "{" a key is read until "=", then its value.
    frames: list[tuple[str, int]] = [("top", 0)]
    deepest, dots, in_key, header = 0, 0, True, False
    i, n = 0, len(text)
    while i < n and deepest <= stop:
        c = text[i]
        kind, base = frames[-1]
        if c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if c in "\"'":
            i = _string_end(text, i)
            continue
        if c == "\n" and kind == "top":
            in_key, dots, header = True, 0, False
        elif header:
            if c == ".":
                dots += 1
                deepest = max(deepest, dots + 1)
            elif c == "]":
                header, twice = False, text.startswith("]", i + 1)
                frames[-1] = ("top", dots + 1 + twice)  # [[x]]: an array of tables, one level more
                deepest = max(deepest, dots + 1 + twice)
                i += 1 + twice
                continue
        elif in_key and kind != "[":
            if c == "." or c == "=":
                dots += c == "."
                deepest = max(deepest, base + dots + 1)
                in_key = c == "."
            elif c == "[" and kind == "top":
                header, dots = True, 0
                i += 2 if text.startswith("[", i + 1) else 1
                continue
            elif c in "[{":  # not TOML here; counted all the same
                frames.append((c, base + 1))
                deepest = max(deepest, base + 1)
            elif c in "]}" and len(frames) > 1:
                frames.pop()
        else:
            if c in "[{":
                level = base if kind == "[" else base + dots + 1  # this value's own level
                inner = (
                    level + 1 if c == "[" else level
                )  # an array's items sit one deeper; a table's keys count themselves
                frames.append((c, inner))
                deepest = max(deepest, inner)
                in_key, dots = c == "{", 0
            elif c in "]}" and len(frames) > 1:
                frames.pop()
                in_key, dots = False, 0
            elif c == "," and kind == "{":
                in_key, dots = True, 0
        i += 1
    return deepest


def _string_end(text: str, i: int) -> int:
    """The index after the string that opens at ``i`` (the end of the text if it never closes)."""
    quote = text[i]
    if text.startswith(quote * 3, i):
        close, j = quote * 3, i + 3
    else:
        close, j = quote, i + 1
    n = len(text)
    while j < n:
        if quote == '"' and text[j] == "\\":
            j += 2
            continue
        if text.startswith(close, j):
            j += len(close)
            while j < n and text[j] == quote and len(close) == 3:  # up to two quotes end a multi-line string
                j += 1
            return j
        if len(close) == 1 and text[j] == "\n":
            return j  # an unclosed one-line string: the parser refuses it
        j += 1
    return n
