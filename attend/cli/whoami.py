"""CLI handler for `attend whoami`: who attend resolves the caller to, and the evidence."""

from __future__ import annotations

import click

from attend.cli.app import epilog
from attend.cli.common import context, emit, json_option, table
from attend.verbs import whoami as whoami_verb


def _whoami_text(w: whoami_verb.WhoAmI) -> str:
    rows = [
        ["session", w.session_id],
        ["origin", w.origin_path],
        ["resolved", f"{'yes' if w.resolved else 'no'} ({w.resolved_by})"],
        ["evidence", w.evidence],
        *(["ignored", note] for note in w.warnings),
        ["display", w.display],
        ["kind", w.kind + (f" ({w.host})" if w.host else "")],
        ["enrolled", "yes" if w.enrolled else "no"],
    ]
    return table(rows) + f"\nspool: {w.spool}"


@click.command(help=whoami_verb.DESCRIPTION, epilog=epilog(whoami_verb.EXAMPLES))
@click.option("--machine", is_flag=True, help="Print exactly session_id=, origin_path= and resolved= lines.")
@json_option
def whoami(machine: bool, as_json: bool) -> None:
    if machine and as_json:
        raise click.UsageError("choose one output: --machine (three key=value lines) or --json")
    result = whoami_verb.run(context(), whoami_verb.WhoAmIRequest())
    if machine:
        click.echo(
            f"session_id={result.session_id}\norigin_path={result.origin_path}\n"
            f"resolved={'true' if result.resolved else 'false'}"
        )
        return
    emit(result, as_json, _whoami_text)
