"""``attend tune``: the timing keys derived from the user's own turn cadence, and the careful line edit
that sets them in the user's config file, keeping its comments, order and inline comments.

The cadence is the gap from each assistant answer to the user's next typed prompt, over every
transcript (``<claude dir>/projects/*/*.jsonl``); gaps over an hour are the user away, not a cadence.

- ``governor.event.cooldown`` = p50, within 5..300 s: at most one event line per typical turn;
- ``governor.message.cooldown`` = p50 / 5, within 1..15 s: messages may come five times as often;
- ``peers.activity_window`` = p90, within 10..600 s: a peer quiet longer than a slow turn is waiting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

AWAY = 3600.0  # a longer gap is the user away, not their cadence
MIN_TURNS = 5  # fewer gaps than this say nothing


@dataclass(frozen=True)
class Proposal:
    key: str
    value: float
    current: float
    evidence: str


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = q * (len(ordered) - 1)
    lo = int(rank)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (rank - lo)


def _clamp(value: float, lo: float, hi: float) -> float:
    return float(round(min(hi, max(lo, value))))


def propose(gaps: list[float], current: dict[str, float]) -> list[Proposal]:
    gaps = [g for g in gaps if 0 < g <= AWAY]
    if len(gaps) < MIN_TURNS:
        return []
    p50, p90 = percentile(gaps, 0.5), percentile(gaps, 0.9)
    seen = f"p50 {p50:.0f}s, p90 {p90:.0f}s of the gap before your next prompt, over {len(gaps)} turns"
    rules = {
        "governor.event.cooldown": (_clamp(p50, 5, 300), f"= p50 within 5..300 s ({seen})"),
        "governor.message.cooldown": (_clamp(p50 / 5, 1, 15), f"= p50 / 5 within 1..15 s ({seen})"),
        "peers.activity_window": (_clamp(p90, 10, 600), f"= p90 within 10..600 s ({seen})"),
    }
    return [Proposal(k, v, current[k], why) for k, (v, why) in rules.items()]


_LINE = re.compile(r"^(?P<indent> *)(?P<name>[A-Za-z0-9_]+):(?P<rest>.*)$")


class EditError(ValueError):
    """The file's shape is one the line edit will not touch (flow style, tabs)."""


def set_values(text: str, values: dict[str, float]) -> str:
    """``text`` with each dotted key set to its value: an existing line keeps its indentation and
    inline comment; a missing key goes at the end of its section (made when absent)."""
    lines = text.splitlines()
    left = dict(values)
    stack: list[tuple[int, str]] = []
    ends: dict[str, int] = {}  # a mapping path -> index after its last line
    for i, line in enumerate(lines):
        if "\t" in line[: len(line) - len(line.lstrip())]:
            raise EditError(f"line {i + 1} is indented with a tab")
        m = _LINE.match(line)
        if not m or line.lstrip().startswith("#"):
            continue
        indent = len(m["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([n for _, n in stack] + [m["name"]])
        rest = m["rest"]
        value, _, comment = rest.partition(" #")
        if value.strip().startswith("{") and any(k == path or k.startswith(path + ".") for k in left):
            raise EditError(f"line {i + 1}: {path} is in flow style ({{…}}); edit it by hand")
        if value.strip():
            if path in left:
                lines[i] = f"{m['indent']}{m['name']}: {left.pop(path):g}" + (f"  #{comment}" if comment else "")
        else:
            stack.append((indent, m["name"]))
        for depth in range(len(stack)):
            ends[".".join(n for _, n in stack[: depth + 1])] = i + 1
    for key in sorted(left, key=lambda k: -k.count(".")):
        parts = key.split(".")
        for depth in range(len(parts) - 1, -1, -1):
            parent = ".".join(parts[:depth])
            if depth == 0 or parent in ends:
                at = ends.get(parent, len(lines))
                new = [f"{'  ' * d}{parts[d]}:" for d in range(depth, len(parts) - 1)]
                new.append(f"{'  ' * (len(parts) - 1)}{parts[-1]}: {left[key]:g}")
                lines[at:at] = new
                for p, end in list(ends.items()):
                    if end >= at:
                        ends[p] = end + len(new)
                for d in range(depth, len(parts)):
                    ends[".".join(parts[: d + 1])] = at + len(new)
                break
    return "\n".join(lines) + "\n"
