"""CLI handlers for the operator's tools: config, cleanup, tail."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import click

from attend.cli.app import epilog
from attend.cli.common import context, emit, json_option, quiet_option, table
from attend.domain.core import framing
from attend.errors import AttendError
from attend.verbs import cleanup as cleanup_verb
from attend.verbs import config as config_verb
from attend.verbs import document
from attend.verbs import tail as tail_verb


class LintProblems(AttendError):
    """`config lint` found problems: exit 3, as linters do, apart from usage (2) and failure (1)."""

    exit_code = 3


PROGRESS_UNITS = 50  # a cleanup over more folders than this shows a progress bar on a terminal


def _config_text(r: config_verb.ConfigResult) -> str:
    if r.action == "path":
        mark = {True: "", False: " (absent)"}
        return f"{r.user_path}{mark[r.user_path in r.files]}\n{r.project_path}{mark[r.project_path in r.files]}"
    if r.action == "init":
        return f"wrote default config to {r.user_path}"
    if r.action == "lint":
        return "\n".join(r.problems) if r.problems else f"ok: {', '.join(r.files) or 'no config files; defaults'}"
    rows = [
        [s.key, s.value if isinstance(s.value, str) else f"{s.value:g}", s.source]  # "default", or the file that set it
        for s in r.settings
    ]
    return table(rows, ["Key", "Value", "Set in"])


@click.command(help=config_verb.DESCRIPTION, epilog=epilog(config_verb.EXAMPLES))
@click.argument("action", required=False, default="show", type=click.Choice(config_verb.ACTIONS))
@json_option
def config(action: str, as_json: bool) -> None:
    result = config_verb.run(context(), config_verb.ConfigRequest(action))
    emit(result, as_json, _config_text)
    if action == "lint" and result.problems:
        if as_json:
            raise SystemExit(3)  # the document above lists the problems; a second one would break --json
        n = len(result.problems)
        raise LintProblems(f"config lint: {n} problem{'s' if n != 1 else ''}; fix the lines above")


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _cleanup_text(r: cleanup_verb.CleanupResult) -> str:
    lines = []
    if r.dry_run:
        lines += [f"would remove {i.path} ({i.bytes} bytes; {i.reason})" for i in r.items]
        if r.files > len(r.items):
            lines.append(f"... and {r.files - len(r.items)} more")
    parts = ", ".join(f"{k} {t.files}" for k, t in sorted(r.by_reason.items())) or "nothing"
    if r.dry_run:
        lines.append(f"dry run: would remove {r.files} file(s), {_size(r.bytes)} ({parts}); examined {r.examined}")
    else:
        lines.append(f"cleaned up {r.files} file(s), freed {_size(r.bytes)} ({parts}); examined {r.examined}")
    if r.sessions:
        verb = "would reap" if r.dry_run else "reaped"
        lines.append(f"{verb} {len(r.sessions)} ended session(s): {', '.join(s[:8] for s in r.sessions)}")
    if r.channels:
        verb = "would remove" if r.dry_run else "removed"
        lines.append(f"{verb} emptied channel(s): {', '.join('#' + c for c in r.channels)}")
    return "\n".join(lines)


@click.command(help=cleanup_verb.DESCRIPTION, epilog=epilog(cleanup_verb.EXAMPLES))
@click.option("--dry-run", is_flag=True, help=cleanup_verb.PARAMS["dry_run"])
@json_option
@quiet_option
def cleanup(dry_run: bool, as_json: bool) -> None:
    bar: Any = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None and total > PROGRESS_UNITS and sys.stderr.isatty():
            bar = click.progressbar(length=total, label="cleanup", file=sys.stderr)
            bar.__enter__()
        if bar is not None:
            bar.update(done - bar.pos)

    try:
        result = cleanup_verb.run(context(), cleanup_verb.CleanupRequest(dry_run, progress))
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    emit(result, as_json, _cleanup_text)


SCOPE_WIDTH = 16  # tail's columns: a longer room or sender is cut with "…", so the bodies line up
SENDER_WIDTH = 16


def _cell(text: str, width: int) -> str:
    return (text if len(text) <= width else text[: width - 1] + "…").ljust(width)


def _line(r: Any, utc: bool = False) -> str:
    """One line per record, whatever the body or the sender's name holds (attend.domain.core.framing):
    nothing in them reaches the terminal as a line break or an escape sequence."""
    from attend.cli import terminal

    body = " ".join(framing.inline(r.body).split())
    if len(body) > 160:
        body = body[:159] + "…"
    scope, sender = _cell(framing.inline(r.scope), SCOPE_WIDTH), _cell(framing.label(r.sender), SENDER_WIDTH)
    return f"{terminal.clock(r.at, utc)}  {scope}  {sender}  {body}"


@click.command(help=tail_verb.DESCRIPTION, epilog=epilog(tail_verb.EXAMPLES))
@click.option("--all", "all_", is_flag=True, help=tail_verb.PARAMS["all"])
@click.option("--count", type=click.IntRange(min=1), help=tail_verb.PARAMS["count"])
@click.option("--utc", is_flag=True, help="Show times in UTC, not local time.")
@json_option
def tail(all_: bool, count: int | None, utc: bool, as_json: bool) -> None:
    from attend.cli import terminal
    from attend.conduits.tail import Record, Watching

    def show(item: Watching | Record) -> None:
        if isinstance(item, Watching):
            how = "" if item.mode == "inotify" else " (polling: no inotify here)"
            where = f"times {terminal.zone(utc=utc)}"
            click.echo(f"attend: tailing {len(item.rooms)} room(s){how}, {where}; Ctrl-C to stop", err=True)
            return
        click.echo(json.dumps(document(item), ensure_ascii=False) if as_json else _line(item, utc))
        sys.stdout.flush()

    try:
        tail_verb.run(context(), tail_verb.TailRequest(all_, count, show))
    except KeyboardInterrupt:
        os._exit(0)  # Ctrl-C is the normal way out; no traceback, and no flush on a closed pipe
