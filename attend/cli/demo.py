"""CLI handler for `attend demo`."""

from __future__ import annotations

import click

from attend.cli.app import epilog
from attend.errors import AttendError

DESCRIPTION = (
    "Run a narrated demo in a throwaway spool and home: two stand-in sessions join a channel, send, "
    "receive through the sensor loop and the Stop-hook drain, and reply in a thread. Cleans up after itself. "
    "With --keep, two stand-in sessions then stay live for 10 minutes in a sandbox of their own, answering "
    "with canned replies, and it says how to talk to them from chat."
)


EXAMPLES = (
    ("attend demo", "watch two stand-in sessions talk; your own spool is untouched"),
    ("attend demo | less", "read it at your own pace"),
    ("attend demo --keep", "then a sandbox with two live stand-in sessions to try chat, reply and mute on"),
)


@click.command(help=DESCRIPTION, epilog=epilog(EXAMPLES))
@click.option("--keep", is_flag=True, help="Then leave two stand-in sessions live for 10 minutes, to talk to.")
def demo(keep: bool) -> None:
    from attend.testing import demo as demo_mod

    try:
        demo_mod.run(click.echo)
        if keep:
            demo_mod.keep(click.echo)
    except RuntimeError as e:
        raise AttendError(f"demo stopped: {e}") from e
