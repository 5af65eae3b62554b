"""CLI handlers for scenes: `attend scene NAME` switches to one, `attend scenes` lists them (apart from
channels.py, so a join does not import what reading scenes.yaml needs)."""

from __future__ import annotations

import click

from attend.cli.app import epilog
from attend.cli.channels import not_shown
from attend.cli.common import context, emit, json_option, quiet_option, table
from attend.verbs import scene as scene_verb
from attend.verbs import scenes as scenes_verb


def _scene_text(r: scene_verb.SceneResult) -> str:
    if r.opted_out:
        tail = "" if not r.enrolled else " (the drain stops when the running sensor loop ends)"
        return f"[attend] scene '{r.scene}': no channels; opted out of the drain{tail}"
    if not r.channels:
        return f"[attend] scene '{r.scene}': project scope only"
    return f"[attend] scene '{r.scene}': joined: {', '.join(r.channels)}{not_shown(r.withheld)}"


@click.command(help=scene_verb.DESCRIPTION, epilog=epilog(scene_verb.EXAMPLES))
@click.argument("name")
@json_option
@quiet_option
def scene(name: str, as_json: bool) -> None:
    emit(scene_verb.run(context(), scene_verb.SceneRequest(name)), as_json, _scene_text)


def _scenes_text(r: scenes_verb.Scenes) -> str:
    rows = [
        [
            s.name,
            ", ".join(s.channels) or ("(none — drain off)" if s.builtin else "(none — project only)"),
            s.description,
        ]
        for s in r.scenes
    ]
    defined = len(r.scenes) > 1
    where = f"scenes.yaml: {r.path}" + ("" if defined else " (none defined yet; e.g. `review: [review, deploy]`)")
    return table(rows, ["Scene", "Channels", "Description"]) + "\n" + where


@click.command(help=scenes_verb.DESCRIPTION, epilog=epilog(scenes_verb.EXAMPLES))
@json_option
def scenes(as_json: bool) -> None:
    emit(scenes_verb.run(context(), scenes_verb.ScenesRequest()), as_json, _scenes_text)
