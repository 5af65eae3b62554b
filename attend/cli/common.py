"""Rendering helpers shared by the command modules: --json, warnings, small tables."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from attend.domain.context import REPORTED, Context
from attend.verbs import document

F = TypeVar("F", bound=Callable[..., Any])


def json_option(f: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout.")(f)


def context() -> Context:
    return Context.default()


def emit(result: Any, as_json: bool, human: Callable[[Any], str]) -> None:
    """One JSON document (the verb's own dict), or human text with warnings on stderr."""
    if as_json:
        click.echo(json.dumps(document(result), ensure_ascii=False))
        return
    text = human(result)
    if text:
        click.echo(text)
    for warning in getattr(result, "warnings", []) or []:
        if warning not in REPORTED:  # an identity note, already said once when the caller was resolved
            click.echo(f"attend: warning: {warning}", err=True)


def table(rows: Sequence[Sequence[str]], header: Sequence[str] | None = None) -> str:
    all_rows = [list(header)] if header else []
    all_rows += [list(r) for r in rows]
    if not all_rows:
        return ""
    widths = [max(len(r[i]) for r in all_rows) for i in range(len(all_rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in all_rows]
    return "\n".join(lines)
