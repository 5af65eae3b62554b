"""CLI handler for `attend demo`."""

from __future__ import annotations

import click

from attend.errors import AttendError

DESCRIPTION = (
    "Run a narrated demo in a throwaway spool and home: two stand-in sessions join a channel, send, "
    "receive through the sensor loop and the Stop-hook drain, and reply in a thread. Cleans up after itself."
)


@click.command(help=DESCRIPTION)
def demo() -> None:
    from attend.testing import demo as demo_mod

    try:
        demo_mod.run(click.echo)
    except RuntimeError as e:
        raise AttendError(f"demo stopped: {e}") from e
