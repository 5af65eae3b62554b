"""CLI handlers for channels: join, leave, channels, dissolve (scene and scenes are in scenes.py)."""

from __future__ import annotations

import sys

import click

from attend.cli.app import epilog
from attend.cli.common import complete, context, emit, json_option, quiet_option, table
from attend.verbs import channels as channels_verb
from attend.verbs import dissolve as dissolve_verb
from attend.verbs import join as join_verb
from attend.verbs import leave as leave_verb


def terminal() -> bool:
    """Whether there is someone to ask: a question needs a terminal to answer on."""
    return sys.stdin.isatty()


def bare(name: str) -> str:
    return name.strip().removeprefix("#")


def not_shown(n: int) -> str:
    return f" ({n} earlier message{'s' if n != 1 else ''} not shown; attend inbox)" if n else ""


def _joined_text(r: join_verb.Joined) -> str:
    pin = " (pinned)" if r.pinned else ""
    if r.already:
        return f"[attend] already in #{r.channel}{pin}"
    return f"[attend] joined #{r.channel}{pin}{not_shown(r.withheld)}"


@click.command(help=join_verb.DESCRIPTION, epilog=epilog(join_verb.EXAMPLES))
@click.argument("name", shell_complete=complete("channel"))
@click.option("--pin", is_flag=True, help=join_verb.PARAMS["pin"])
@json_option
@quiet_option
def join(name: str, pin: bool, as_json: bool) -> None:
    emit(join_verb.run(context(), join_verb.JoinRequest(name, pin)), as_json, _joined_text)


YES_HELP = "Do not ask: yes. Without a terminal to ask on, this is how to confirm."


def _left_text(r: leave_verb.Left, emptied: bool) -> str:
    if not r.was_member:
        return f"[attend] not in #{r.channel}; nothing to leave"
    if r.removed:
        return f"[attend] left #{r.channel}; it was empty, so it is deleted with its history"
    if emptied:
        return f"[attend] left #{r.channel}; it is empty, and its history stays until retention takes it"
    return f"[attend] left #{r.channel}"


@click.command(help=leave_verb.DESCRIPTION, epilog=epilog(leave_verb.EXAMPLES))
@click.argument("name", shell_complete=complete("channel"))
@click.option("--yes", "-y", is_flag=True, help="Do not ask: " + leave_verb.PARAMS["purge"])
@json_option
@quiet_option
def leave(name: str, yes: bool, as_json: bool) -> None:
    ctx = context()
    emptied = leave_verb.would_empty(ctx, name)
    # History goes only when asked for: --yes, or yes to the question on a terminal (default no).
    purge = yes or (
        emptied and terminal() and click.confirm(f"#{bare(name)} will be empty. Delete its history?", err=True)
    )
    emit(leave_verb.run(ctx, leave_verb.LeaveRequest(name, purge)), as_json, lambda r: _left_text(r, emptied))


def _channels_text(r: channels_verb.Channels) -> str:
    if r.action != "list":
        name = r.changed or ""
        if r.removed:
            return f"[attend] unpinned #{name}; it was empty, so it is gone"
        ch = r.channels[0] if r.channels else None
        desc = ch.description if ch else ""
        return {
            "create": f"[attend] created #{name}" + (f" — {desc}" if desc else ""),
            "describe": f"[attend] #{name} — {desc}" if desc else f"[attend] cleared #{name} description",
            "pin": f"[attend] pinned #{name}",
            "unpin": f"[attend] unpinned #{name}",
        }[r.action]
    lines = []
    rows = [["#open", "(all)", "(always)", "(base)", "the commons"]]
    for c in r.channels:
        rows.append(
            [
                "#" + c.name,
                str(len(c.members)),
                "yes" if c.joined else "",
                "yes" if c.pinned else "no",
                c.description,
            ]
        )
    lines.append(table(rows, ["Channel", "Members", "Joined", "Pinned", "Description"]))
    return "\n".join(lines)


def _joined_only_text(r: channels_verb.Channels) -> str:
    if not r.channels:
        return "channels: none joined (#open and the project only)"
    return table([["#" + c.name, "yes" if c.pinned else "no"] for c in r.channels], ["Channel", "Pinned"])


@click.command(help=channels_verb.DESCRIPTION, epilog=epilog(channels_verb.EXAMPLES))
@click.argument("action", required=False, default="list", type=click.Choice(channels_verb.ACTIONS))
@click.argument("name", required=False, shell_complete=complete("channel"))
@click.argument("description", nargs=-1)
@click.option("--joined", is_flag=True, help=channels_verb.PARAMS["joined"])
@json_option
@quiet_option
def channels(action: str, name: str | None, description: tuple[str, ...], joined: bool, as_json: bool) -> None:
    if action == "list" and name is not None:
        raise click.UsageError("channels list takes no name; use channels describe NAME to change one")
    req = channels_verb.ChannelsRequest(action, name, " ".join(description) or None, joined)
    result = channels_verb.run(context(), req)
    emit(result, as_json, _joined_only_text if joined else _channels_text)


def _dissolved_text(r: dissolve_verb.Dissolved) -> str:
    n = len(r.released)
    detail = "was empty" if n == 0 else f"{n} member{'s' if n != 1 else ''} released"
    return f"[attend] dissolved #{r.channel} ({detail})"


@click.command(help=dissolve_verb.DESCRIPTION, epilog=epilog(dissolve_verb.EXAMPLES))
@click.argument("name", shell_complete=complete("channel"))
@click.option("--yes", "-y", is_flag=True, help=YES_HELP)
@json_option
@quiet_option
def dissolve(name: str, yes: bool, as_json: bool) -> None:
    ctx = context()
    if not yes:
        channel = dissolve_verb.check(ctx, name)  # a refusal before the question, not after it
        if not terminal():
            raise click.UsageError(
                f"dissolve deletes #{channel} and its history; add --yes to confirm (no terminal to ask on)"
            )
        click.confirm(f"Dissolve #{channel}: remove it, its members and its history?", abort=True, err=True)
    emit(dissolve_verb.run(ctx, dissolve_verb.DissolveRequest(name)), as_json, _dissolved_text)
