"""Wrapper bytes per delivered message (issue 14): everything attend adds around a body, in the Stop
hook's JSON line and in the Monitor line. Goals: <= 240 bytes for a single message, <= 80 bytes for
each further message of the same drain.

The figure is the rendering's UTF-8 length (the JSON line as the hook prints it, its newline
included) less the bodies' own UTF-8 length: a realistic sender label, project and id, the CLI's
reply forms (the MCP forms are a few bytes longer). It renders in process with the conduits' own
functions, so it measures the format, not a spool.

"First": the session's first shown batch (or the first since a compaction), which ends in the reply
forms; "later": every other batch, which leaves them out.

Run: .venv/bin/python bench/attention_bytes.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attend.conduits import drain, monitor
from attend.domain.core.envelope import Signal
from attend.layout import unique_name

BODY = "the build is green; ship it?"


def signal(i: int, room: str) -> Signal:
    body = f"{BODY} {i}"
    return Signal(
        unique_name(), "Hana-beta", "agent", "s-peer", "s-me", room, "/home/u/src/api", body, 1.7e9, client="claude"
    )


def hook_bytes(signals: list[Signal], mcp: bool = False, hint: bool = True) -> int:
    """``hint``: the reason ends in the reply forms (a session's first shown batch, or the first since
    a compaction); later batches leave them out."""
    batch = drain.Batch("s-me", [s.id for s in signals], signals, None, mcp, hint=hint)
    arranged = drain.arrange(signals, lambda s: True)
    line = json.dumps({"decision": "block", "reason": drain.render_reason(batch, arranged)}, ensure_ascii=False)
    return len((line + "\n").encode()) - sum(len(s.body.encode()) for s in signals)


def main() -> None:
    one = hook_bytes([signal(0, "d-s-me")])
    ten = hook_bytes([signal(i, "d-s-me") for i in range(10)])
    one_mcp = hook_bytes([signal(0, "d-s-me")], mcp=True)
    later = hook_bytes([signal(0, "d-s-me")], hint=False)
    later_mcp = hook_bytes([signal(0, "d-s-me")], mcp=True, hint=False)
    sig = signal(0, "d-s-me")
    line = monitor.message_lines(sig)[0] + "\n"
    mon = len(line.encode()) - len(sig.body.encode())
    print(f"drain, one message, first:   {one} B wrapper (MCP forms: {one_mcp} B)   goal <= 240")
    print(f"drain, one message, later:   {later} B wrapper (MCP forms: {later_mcp} B)   goal <= 240")
    print(f"drain, each further message: {(ten - one) / 9:.1f} B wrapper                 goal <= 80")
    print(f"Monitor line, one message:   {mon} B wrapper")


if __name__ == "__main__":
    main()
