"""Rendering helpers shared by the command modules: --json, warnings, small tables."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

from attend.cli.render import table as table  # the command modules take it from here
from attend.domain.sessions.context import REPORTED, Context
from attend.verbs import document

F = TypeVar("F", bound=Callable[..., Any])


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")(f)


QUIET = "attend.quiet"  # click context meta: -q/--quiet was given


def _set_quiet(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        ctx.meta[QUIET] = True


def quiet_option(f: F) -> F:
    """``-q/--quiet``: no success line (the --json document, warnings and errors still print)."""
    option = click.option(
        "-q",
        "--quiet",
        is_flag=True,
        expose_value=False,
        callback=_set_quiet,
        help="Print nothing on success (warnings and errors still go to stderr).",
    )
    return option(f)


def quiet() -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get(QUIET))


def complete(kind: str) -> Callable[[click.Context, click.Parameter, str], list[Any]]:
    """A shell_complete callback: live candidates of ``kind`` (to, channel, id) from
    attend.cli.completion, imported only on a Tab; any failure is no candidates, silently."""

    def candidates(_ctx: click.Context, _param: click.Parameter, incomplete: str) -> list[Any]:
        try:
            from attend.cli import completion

            return completion.candidates(kind, incomplete)
        except Exception:  # a Tab never prints a traceback into the prompt
            return []

    return candidates


def context() -> Context:
    return Context.default()


def emit(result: Any, as_json: bool, human: Callable[[Any], str], paged: bool = False) -> None:
    """One JSON document (the verb's own dict), or human text with warnings on stderr; ``paged``
    text goes through the pager when it is longer than the terminal (attend.cli.terminal)."""
    if as_json:
        click.echo(json.dumps(document(result), ensure_ascii=False))
        return
    text = "" if quiet() else human(result)
    if text and paged:
        from attend.cli import terminal

        terminal.show(text)
    elif text:
        click.echo(text)
    for warning in getattr(result, "warnings", []) or []:
        if warning not in REPORTED:  # an identity note, already said once when the caller was resolved
            click.echo(f"attend: warning: {warning}", err=True)
