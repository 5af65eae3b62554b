"""CLI handler for `attend demo`."""

from __future__ import annotations

import click

from attend.cli.app import epilog
from attend.errors import AttendError

DESCRIPTION = (
    "Run a narrated demo in a throwaway spool and home: two stand-in sessions join a channel, send, "
    "receive through the sensor loop and the Stop-hook drain, and reply in a thread. Cleans up after itself."
)


EXAMPLES = (
    ("attend demo", "watch two stand-in sessions talk; your own spool is untouched"),
    ("attend demo | less", "read it at your own pace"),
)


@click.command(help=DESCRIPTION, epilog=epilog(EXAMPLES))
def demo() -> None:
    from attend.testing import demo as demo_mod

    try:
        demo_mod.run(click.echo)
    except RuntimeError as e:
        raise AttendError(f"demo stopped: {e}") from e
