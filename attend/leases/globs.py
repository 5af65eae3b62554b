"""What a lease's glob covers (docs/architecture/leases.md, "Globs"). Pure: no file is read here.

A glob is a path relative to the project root, ``/``-separated, matched segment by segment:
- ``*``, ``?`` and ``[…]`` match within one segment (never across ``/``), case-sensitively;
- ``**`` is a whole segment and matches zero or more segments: ``src/**/api`` covers ``src/api``;
- a glob covers what it names and everything below it: ``src/api`` (a folder) covers ``src/api/x.py``;
- ``.`` and ``..`` segments are folded first; a glob that climbs out of the root is refused, as is an
  absolute path outside the root (an absolute path inside it is made relative).

Standard library only, and no ``re``: the pre-tool hook's fast path imports this module, and
``fnmatch`` (with ``re``, ``enum`` and ``functools``) would cost it more than the rest of its start;
only a segment with a ``[…]`` class loads it.
"""

from __future__ import annotations

WILD = "*?["
MAX_GLOB = 1024  # characters of one glob
MAX_SEGMENTS = 64


def is_wild(segment: str) -> bool:
    return any(c in segment for c in WILD)


def fnmatchcase(name: str, pattern: str) -> bool:
    """``fnmatch.fnmatchcase``: ``*`` and ``?`` matched here, a ``[…]`` class by fnmatch itself."""
    if "[" in pattern:
        import fnmatch

        return fnmatch.fnmatchcase(name, pattern)
    if "*" not in pattern and "?" not in pattern:
        return name == pattern
    # Two indexes and the last star to fall back to: linear in practice, never recursive.
    n = p = 0
    star, mark = -1, 0
    while n < len(name):
        if p < len(pattern) and (pattern[p] == "?" or pattern[p] == name[n]):
            n, p = n + 1, p + 1
        elif p < len(pattern) and pattern[p] == "*":
            star, mark = p, n
            p += 1
        elif star >= 0:
            p, mark = star + 1, mark + 1
            n = mark
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


def fold(parts: list[str]) -> list[str] | None:
    """``.`` and ``..`` folded away; None when a ``..`` climbs above the first segment."""
    out: list[str] = []
    for part in parts:
        if part in ("", "."):
            continue
        if part == "..":
            if not out or out[-1] == "**":
                return None
            out.pop()
            continue
        out.append(part)
    return out


def relative(path: str, root: str) -> str | None:
    """``path`` (absolute, already resolved) relative to ``root``; None when it lies outside it.
    The root itself is the empty path."""
    root = root.rstrip("/") or "/"
    if path == root:
        return ""
    prefix = root if root.endswith("/") else root + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def segments(rel: str) -> list[str]:
    return [p for p in rel.split("/") if p]


def matches(glob: str, rel: str) -> bool:
    """Whether the glob covers the root-relative path ``rel``: the path itself or a folder above it."""
    return _covers(segments(glob), segments(rel))


def _covers(pat: list[str], path: list[str]) -> bool:
    if not pat:
        return True  # the glob ran out on a folder of the path: everything below it is covered
    head = pat[0]
    if head == "**":
        return any(_covers(pat[1:], path[i:]) for i in range(len(path) + 1))
    if not path:
        return False
    return fnmatchcase(path[0], head) and _covers(pat[1:], path[1:])


def overlap(a: str, b: str) -> bool:
    """Whether some path is covered by both globs (conservative where two wild segments meet: they
    overlap unless their fixed prefixes or suffixes disagree)."""
    return _overlap(tuple(segments(a)), tuple(segments(b)), {})


def _overlap(a: tuple[str, ...], b: tuple[str, ...], seen: dict[tuple[int, int], bool]) -> bool:
    key = (len(a), len(b))
    if key in seen:
        return seen[key]
    seen[key] = False
    if not a or not b:
        result = True  # one covers a folder the other reaches into
    elif a[0] == "**":
        result = _overlap(a[1:], b, seen) or _overlap(a, b[1:], seen)
    elif b[0] == "**":
        result = _overlap(a, b[1:], seen) or _overlap(a[1:], b, seen)
    else:
        result = _segment_overlap(a[0], b[0]) and _overlap(a[1:], b[1:], seen)
    seen[key] = result
    return result


def _segment_overlap(x: str, y: str) -> bool:
    if not is_wild(x):
        return fnmatchcase(x, y) if is_wild(y) else x == y
    if not is_wild(y):
        return fnmatchcase(y, x)
    return _fixed_agree(x, y)


def _fixed_agree(x: str, y: str) -> bool:
    def ends(s: str) -> tuple[str, str]:
        first = min(s.index(c) for c in WILD if c in s)
        last = max(s.rindex(c) for c in WILD if c in s)
        tail = s[last + 1 :] if s[last] != "[" else ""
        if "]" in s[last:]:
            tail = s[s.rindex("]") + 1 :]
        return s[:first], tail

    (px, sx), (py, sy) = ends(x), ends(y)
    return (px.startswith(py) or py.startswith(px)) and (sx.endswith(sy) or sy.endswith(sx))


def literal_prefix(glob: str) -> str:
    """The segments before the first wild one: the part of a glob that names real folders."""
    out = []
    for part in segments(glob):
        if is_wild(part) or part == "**":
            break
        out.append(part)
    return "/".join(out)
