"""CLI handlers for `attend mute` and `attend unmute`."""

from __future__ import annotations

import click

from attend.cli.app import epilog
from attend.cli.common import context, emit, json_option
from attend.verbs import mute as mute_verb
from attend.verbs import unmute as unmute_verb


def _mutes_tail(items: list[str]) -> str:
    return f" (muted now: {', '.join(items)})" if items else " (nothing muted now)"


@click.command(help=mute_verb.DESCRIPTION, epilog=epilog(mute_verb.EXAMPLES))
@click.argument("target")
@click.option("--for", "duration", metavar="DURATION", help=mute_verb.PARAMS["duration"])
@json_option
def mute(target: str, duration: str | None, as_json: bool) -> None:
    def text(r: mute_verb.Muted) -> str:
        until = f" until {r.until}" if r.until else " until unmuted"
        return f"muted {r.target}{until}: its messages stay in attend inbox, and never wake you"

    emit(mute_verb.run(context(), mute_verb.MuteRequest(target, duration)), as_json, text)


@click.command(help=unmute_verb.DESCRIPTION, epilog=epilog(unmute_verb.EXAMPLES))
@click.argument("target")
@json_option
def unmute(target: str, as_json: bool) -> None:
    def text(r: unmute_verb.Unmuted) -> str:
        return f"unmuted {r.target}" + _mutes_tail(r.mutes)

    emit(unmute_verb.run(context(), unmute_verb.UnmuteRequest(target)), as_json, text)
