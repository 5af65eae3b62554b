"""CLI handlers for the loop's other senses: sensors, keepwarm, tune."""

from __future__ import annotations

import shlex

import click

from attend.cli.app import epilog
from attend.cli.common import context, emit, json_option, table
from attend.verbs import keepwarm as keepwarm_verb
from attend.verbs import sensors as sensors_verb
from attend.verbs import tune as tune_verb


def _sensors_text(r: sensors_verb.SensorsResult) -> str:
    rows = [
        [
            s.name,
            s.kind,
            s.lane,
            s.state + (f" ({s.why})" if s.why else ""),
            f"{s.interval:g}s / {s.min_interval:g}s",
            s.description,
            s.source,
        ]
        for s in r.sensors
    ]
    text = table(rows, ["Sensor", "Kind", "Lane", "State", "Interval", "Description", "Source"])
    # What a script sensor runs, word for word: a description is the file's to choose.
    commands = [f"  {s.name} runs: {shlex.join(s.command)}" for s in r.sensors if s.command]
    if commands:
        text = (
            text.rstrip("\n") + "\n\nScript sensors run exactly (never through a shell):\n" + "\n".join(commands) + "\n"
        )
    if r.trusted:
        pinned = [
            f"  {a.name}: {shlex.join(a.command)}"
            + "".join(f"\n    {name} sha256 {sha[:16]}" for name, sha in a.files.items())
            for a in r.approved
        ]
        head = f"trusted {r.trusted} as it is now; its script sensors run from the next loop start"
        text = "\n".join([head, *pinned]) + "\n" + text
    return text


@click.command(help=sensors_verb.DESCRIPTION, epilog=epilog(sensors_verb.EXAMPLES))
@click.argument("action", required=False, default="list", type=click.Choice(sensors_verb.ACTIONS))
@json_option
def sensors(action: str, as_json: bool) -> None:
    emit(sensors_verb.run(context(), sensors_verb.SensorsRequest(action)), as_json, _sensors_text)


def _keepwarm_text(r: keepwarm_verb.KeepwarmResult) -> str:
    from attend.domain.attention.keepwarm import duration

    c = r.card
    if c is None:
        return r.message
    if c.last_request_ago is None:
        cache = "no request yet this session"
    elif c.warm:
        cache = f"warm, {duration(c.left)} left (last request {duration(c.last_request_ago)} ago)"
    else:
        cache = f"cold, last request {duration(c.last_request_ago)} ago"
    rows = [
        ["model", c.model or "unknown (no usage in the transcript yet)"],
        ["cache", cache],
        ["context", f"{c.tokens:,} tokens"],
        ["cold cost", f"${c.cold_cost:.2f} to re-write it (warm turn ${c.warm_cost:.2f})"],
        ["keepwarm", c.keepwarm],
    ]
    return table(rows)


@click.command(help=keepwarm_verb.DESCRIPTION, epilog=epilog(keepwarm_verb.EXAMPLES))
@click.argument("action", required=False, default="status", type=click.Choice(keepwarm_verb.ACTIONS))
@click.argument("window", required=False)
@json_option
def keepwarm(action: str, window: str | None, as_json: bool) -> None:
    emit(keepwarm_verb.run(context(), keepwarm_verb.KeepwarmRequest(action, window)), as_json, _keepwarm_text)


def _tune_text(r: tune_verb.TuneResult) -> str:
    rows = [[p.key, f"{p.current:g}", f"{p.value:g}", p.evidence] for p in r.proposals]
    return (table(rows, ["Key", "Now", "Proposed", "Why"]) + "\n" if rows else "") + r.message


@click.command(help=tune_verb.DESCRIPTION, epilog=epilog(tune_verb.EXAMPLES))
@click.option("--apply", "apply_", is_flag=True, help=tune_verb.PARAMS["apply"])
@json_option
def tune(apply_: bool, as_json: bool) -> None:
    emit(tune_verb.run(context(), tune_verb.TuneRequest(apply_)), as_json, _tune_text)
