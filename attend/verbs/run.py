"""run: the sensor loop, ``attend run``, launched by the agent under Claude Code's Monitor tool.

The loop itself lives in attend.conduits.loop; this module is the verb surface: its description,
and a request carrying where the frontend wants the loop's lines to go.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from attend.domain.sessions.context import Context
from attend.verbs import FRONTEND

DESCRIPTION = (
    "Run the sensor loop for this Claude session: one line per incoming message or peer event. "
    "Launch it only with the Monitor tool (never Bash); re-arm it when Monitor's deadline ends it. "
    "Optional where attend install wired the waiter, which wakes an idle session without Monitor."
)
EXAMPLES = (  # the end of `attend run --help` (CLI only)
    ("attend run", "the sensor loop; a session arms it under the Monitor tool"),
    ("attend run 2>/dev/null | head -1", "wait for the next message"),
)
PARAMS: dict[str, str] = {}


@dataclass(frozen=True)
class RunRequest:
    # Each event line, written and flushed at once (Monitor wakes the session per stdout line);
    # None: this process's stdout.
    write: Callable[[str], None] | None = field(default=None, metadata=FRONTEND)
    # Each warning line (never a Monitor event); None: this process's stderr.
    warn: Callable[[str], None] | None = field(default=None, metadata=FRONTEND)


def _stderr(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def run(ctx: Context, req: RunRequest) -> int:
    """Runs until killed; the exit code: 0 for a clean stop, or when another loop already serves the session."""
    from attend.conduits import loop

    return loop.run(ctx, req.write or loop.stdout_writer(), req.warn or _stderr)
