"""Scenes: a named set of channels; switching leaves the rest and joins the set; `private` opts out;
a malformed scenes file is an error naming file and line, and changes no membership."""

from __future__ import annotations

import json
from pathlib import Path

from attend.domain.core import rooms
from attend.domain.messages import channels
from attend.domain.sessions import sessions
from tests.support import World, tree


def scenes_file(world: World, text: str) -> Path:
    path = world.home / ".config" / "attend" / "scenes.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_scene_leaves_every_other_channel_and_joins_its_own(world: World) -> None:
    scenes_file(world, "review:\n  channels: [review, '#deploy']\nquiet: [ops]\n")
    s = world.session("proj")
    assert s.attend("join", "ops").rc == 0
    assert s.attend("join", "deploy").rc == 0
    out = s.attend("scene", "review")
    assert out.rc == 0, out.stderr
    assert out.stdout.strip() == "[attend] scene 'review': joined: deploy, review"
    assert sessions.channels_of(world.spool, s.session_id) == ["deploy", "review"]
    assert channels.exists(world.spool, "ops") and channels.members(world.spool, "ops") == []  # history kept
    assert sessions.is_enrolled(world.spool, s.session_id)


def test_scene_private_joins_none_and_opts_out_of_the_drain(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "ops").rc == 0
    out = s.attend("scene", "private")
    assert out.rc == 0, out.stderr
    assert "opted out of the drain" in out.stdout
    assert sessions.channels_of(world.spool, s.session_id) == []
    assert not sessions.is_enrolled(world.spool, s.session_id)


def test_a_scene_with_no_channels_is_project_scope_only(world: World) -> None:
    scenes_file(world, "solo: []\n")
    s = world.session("proj")
    assert s.attend("join", "ops").rc == 0
    out = s.attend("scene", "solo")
    assert out.stdout.strip() == "[attend] scene 'solo': project scope only"
    assert sessions.channels_of(world.spool, s.session_id) == []


def test_scenes_lists_the_file_and_the_builtin_private(world: World) -> None:
    scenes_file(world, "review: {channels: [review], description: code review}\n")
    out = json.loads(world.cli("scenes", "--json").stdout)
    assert [(r["name"], r["channels"]) for r in out["scenes"]] == [("private", []), ("review", ["review"])]


def test_a_malformed_scenes_file_names_file_and_line_and_changes_no_membership(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "ops").rc == 0
    path = scenes_file(world, "good: [a]\nbad: [unclosed\n")
    before = tree(world.spool.root)
    out = s.attend("scene", "good")
    assert out.rc == 1
    assert out.stderr.startswith(f"attend: {path}:")
    assert "not valid YAML" in out.stderr
    assert tree(world.spool.root) == before


def test_a_scenes_file_nested_a_thousand_deep_is_one_line_not_a_traceback(world: World) -> None:
    path = scenes_file(world, "good: " + "[" * 1000 + "]" * 1000 + "\n")
    out = world.attend("scenes")
    assert out.returncode == 1 and out.stderr == f"attend: {path}: nested too deep to read\n", out.stderr


def test_unknown_keys_in_a_scene_are_an_error_naming_them_and_the_line(world: World) -> None:
    path = scenes_file(world, "good: [a]\nodd:\n  channels: [b]\n  colour: blue\n")
    out = world.cli("scene", "good")
    assert out.returncode == 1
    assert f"{path}:4: scene 'odd': unknown key(s) colour" in out.stderr
    renamed = scenes_file(world, "old:\n  rooms: [a]\n")
    out = world.cli("scenes")
    assert out.returncode == 1 and f"{renamed}:2:" in out.stderr and "renamed `channels:`" in out.stderr


def test_bad_channel_names_and_a_redefined_private_are_errors(world: World) -> None:
    path = scenes_file(world, "x: [ok, 'not ok']\n")
    out = world.cli("scenes")
    assert out.returncode == 1 and f"{path}:1:" in out.stderr and "invalid channel name" in out.stderr
    scenes_file(world, "private: [a]\n")
    assert "`private` is built in" in world.cli("scenes").stderr


def test_an_unknown_scene_lists_the_known_ones(world: World) -> None:
    scenes_file(world, "review: [r]\n")
    out = world.cli("scene", "nope")
    assert out.returncode == 1
    path = world.home / ".config" / "attend" / "scenes.yaml"
    assert f"unknown scene 'nope' in {path}; scenes: private, review" in out.stderr


def test_scenes_shows_each_scenes_description_and_where_scenes_yaml_is(world: World) -> None:
    path = scenes_file(world, "review: {channels: [review], description: code review}\n")
    out = world.cli("scenes")
    rows = out.stdout.splitlines()
    assert rows[0].split() == ["Scene", "Channels", "Description"]
    assert rows[2].split() == ["review", "review", "code", "review"]
    assert rows[-1] == f"scenes.yaml: {path}"


def test_the_scene_helps_example_works_once_scenes_yaml_has_the_line_it_names(world: World) -> None:
    from attend.verbs import scene as scene_verb

    command, what = scene_verb.EXAMPLES[0]
    fresh = world.cli(*command.split()[1:])  # a fresh machine: no scenes.yaml
    path = world.home / ".config" / "attend" / "scenes.yaml"
    assert fresh.returncode == 1 and f"write one in {path}, e.g. `review: [review, deploy]`" in fresh.stderr
    line = what.split("`")[1]
    scenes_file(world, line + "\n")
    s = world.session("proj")
    out = s.attend(*command.split()[1:])
    assert out.rc == 0, out.stderr
    assert sorted(c for c in channels.names(world.spool) if channels.is_member(world.spool, c, s.session_id)) == [
        "deploy",
        "review",
    ]


def test_scene_private_without_a_live_loop_also_leaves_the_project_index(world: World) -> None:
    s = world.session("proj")
    who = world.context(s).who()
    sessions.enroll(world.spool, who, "run")  # enrolled by a loop that has since ended
    index = world.spool_root / "projects" / rooms.project_key(who.origin) / s.session_id
    assert index.exists()
    assert s.attend("scene", "private").rc == 0
    assert not sessions.is_enrolled(world.spool, s.session_id) and not index.exists()
