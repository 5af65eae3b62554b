"""drain: ``attend inbox --drain [--format plain|hook]``, the Stop hook's conduit.

The drain itself lives in attend.conduits.drain; this module is the verb surface: its description,
its one parameter, and a request carrying the Stop payload and the output streams. The hook form's
common case never gets here: attend.cli.entry hands it to attend.conduits.fastdrain before click or
any verb is imported, and only what that fast path cannot decide reaches the full drain.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import IO

from attend.domain.sessions.context import Context
from attend.errors import UsageError
from attend.verbs import FRONTEND

DESCRIPTION = "Claim and print what is pending, marking it seen (Stop hook)."
PARAMS = {"format": "With --drain: plain, or hook JSON."}
FORMATS = ("plain", "hook")


@dataclass(frozen=True)
class DrainRequest:
    format: str = "plain"
    # The hook form's Stop payload as read from stdin: it names the session (``session_id``) and
    # says whether the hook already blocked once (``stop_hook_active``).
    payload: bytes = field(default=b"", metadata=FRONTEND)
    out: IO[str] = field(default_factory=lambda: sys.stdout, metadata=FRONTEND)
    err: IO[str] = field(default_factory=lambda: sys.stderr, metadata=FRONTEND)


def run(ctx: Context, req: DrainRequest) -> int:
    """The exit code, 0 in either form. The plain form drains for the caller ``ctx`` resolves to.

    The hook form never breaks the agent's turn end: it takes the caller from the payload, opens the
    spool itself, and turns any internal error into one stderr line (and a line in the spool's log);
    ``ctx`` is not used for it, so a context whose spool would be refused reaches it unopened.
    """
    if req.format not in FORMATS:
        raise UsageError(f"the drain's format is one of {', '.join(FORMATS)}, not {req.format!r}")
    from attend.conduits import drain

    if req.format == "hook":
        return drain.hook_main(req.payload, req.out, req.err)
    drain.plain(ctx, req.out, req.err)
    return 0
