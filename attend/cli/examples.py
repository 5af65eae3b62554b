"""The examples that end every command's help, from the EXAMPLES beside each verb's DESCRIPTION: one
(command line, what it does) pair each, 2-4 per command. The same text feeds ``--help`` (as click's
epilog) and docs/cli/attend.md. Standard library only: ``attend --help`` imports it."""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~3 ms to import on the hot paths; mypy reads this as true
if TYPE_CHECKING:
    from collections.abc import Sequence

HEADING = "Examples:"


def lines(pairs: Sequence[tuple[str, str]]) -> list[str]:
    """Each example as one line, the comments aligned."""
    width = max(len(command) for command, _ in pairs)
    return [f"{command.ljust(width)}  # {what}" for command, what in pairs]


def epilog(pairs: Sequence[tuple[str, str]]) -> str:
    # \b keeps click from re-wrapping the paragraph that follows it into one line.
    return HEADING + "\n\n\b\n" + "\n".join(lines(pairs))
