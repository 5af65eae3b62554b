"""Config: user file overlaid by the project's; lint names file, line, key and problem and exits 3;
a bad key is reported on stderr while the rest still loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attend.domain.settings import config
from tests.support import World


def user_config(world: World, text: str) -> Path:
    path = world.home / ".config" / "attend" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def project_config(world: World, text: str) -> Path:
    path = world.project("proj") / ".claude" / "attend.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def settings(out: str) -> dict[str, dict[str, object]]:
    return {s["key"]: s for s in json.loads(out)["settings"]}


def test_defaults_apply_with_no_files(world: World) -> None:
    out = world.cli("config", "--json")
    assert out.returncode == 0 and out.stderr == ""
    got = settings(out.stdout)
    assert got["retention.max_age_days"]["value"] == 14
    assert got["retention.max_per_room"]["source"] == "default"


def test_the_project_overlay_wins_for_the_keys_a_project_may_set(world: World) -> None:
    user = user_config(world, "retention:\n  max_age_days: 3\nsensor:\n  cleanup_interval: 300\n")
    proj = project_config(world, "sensor:\n  cleanup_interval: 1200\n")
    got = settings(world.cli("config", "show", "--json").stdout)
    assert got["retention.max_age_days"]["value"] == 3.0 and got["retention.max_age_days"]["source"] == str(user)
    assert got["sensor.cleanup_interval"]["value"] == 1200.0 and got["sensor.cleanup_interval"]["source"] == str(proj)


def test_a_bad_key_is_reported_on_stderr_while_the_rest_still_loads(world: World) -> None:
    path = user_config(world, "retention:\n  max_age_days: soon\n  max_per_room: 50\n  max_pre_room: 9\n")
    out = world.cli("config", "--json")
    assert out.returncode == 0
    got = settings(out.stdout)
    assert got["retention.max_per_room"]["value"] == 50
    assert got["retention.max_age_days"]["value"] == 14  # the bad value keeps its default
    assert f"{path}:2: retention.max_age_days: must be a number, not 'soon'" in json.loads(out.stdout)["warnings"]
    text = world.cli("config")
    assert text.returncode == 0 and ["retention.max_per_room", "50"] in [
        ln.split()[:2] for ln in text.stdout.splitlines()
    ]
    assert f"{path}:2: retention.max_age_days: must be a number, not 'soon'" in text.stderr
    assert f"{path}:4: retention.max_pre_room: unknown key" in text.stderr


def test_lint_prints_file_line_key_problem_and_exits_3(world: World) -> None:
    path = user_config(world, "retention:\n  max_per_room: 0\n")
    proj = project_config(world, "retention:\n  max_age_days: 1\n")
    out = world.cli("config", "lint")
    assert out.returncode == 3
    assert out.stdout.splitlines() == [
        f"{path}:2: retention.max_per_room: must be at least 1, not 0",
        f"{proj}:2: retention.max_age_days: applies to the whole machine; set it in the user config, not a project's",
    ]


def test_lint_of_clean_files_exits_0(world: World) -> None:
    user_config(world, "retention:\n  max_age_days: 7\n")
    out = world.cli("config", "lint")
    assert out.returncode == 0 and out.stdout.startswith("ok:")


def test_invalid_yaml_is_a_problem_with_its_line(world: World) -> None:
    path = user_config(world, "retention:\n  max_age_days: [1,\n")
    out = world.cli("config", "lint")
    assert out.returncode == 3
    assert out.stdout.startswith(f"{path}:3: not valid YAML")  # the whole file's problem: no key, not "-"


def test_lint_answers_an_unknown_key_with_the_closest_known_one(world: World) -> None:
    path = user_config(world, "retention:\n  max_pre_room: 9\ngovernor:\n  mesage:\n    cooldown: 3\nfoo: 1\n")
    out = world.cli("config", "lint")
    assert out.returncode == 3
    assert out.stdout.splitlines() == [
        f"{path}:2: retention.max_pre_room: unknown key; did you mean retention.max_per_room?",
        f"{path}:5: governor.mesage.cooldown: unknown key; did you mean governor.message.cooldown?",
        f"{path}:6: foo: unknown key; attend config lists the known keys",
    ]


def test_lint_answers_a_misspelt_section_with_the_closest_known_one(world: World) -> None:
    # An empty misspelt section holds no key to report, so it passed as ok.
    path = user_config(world, "sensr: 1\ngovernor: {mesage: {}}\nsensrs: {}\nretenton:\n  max_age_days: 3\n")
    out = world.cli("config", "lint")
    assert out.returncode == 3
    assert out.stdout.splitlines() == [
        f"{path}:1: sensr: unknown key; did you mean sensor?",
        f"{path}:2: governor.mesage: unknown key; did you mean governor.message?",
        f"{path}:3: sensrs: unknown key; did you mean sensors?",
        f"{path}:5: retenton.max_age_days: unknown key; did you mean retention.max_age_days?",
    ]


def test_lint_says_a_value_given_for_a_section_belongs_in_its_keys(world: World) -> None:
    path = user_config(world, "governor:\n  message: 3\nretention:\n  # every key left at its default\n")
    out = world.cli("config", "lint")
    assert out.returncode == 3  # an empty section (config init's, its keys commented out) is no problem
    assert out.stdout.splitlines() == [
        f"{path}:2: governor.message: is a section: set its keys, e.g. governor.message.cooldown"
    ]


def test_lint_answers_a_sensor_entrys_misspelt_key_or_name_with_the_closest(world: World) -> None:
    path = user_config(world, "sensors:\n  context: {intervl: 120}\n  keepwarn: {enabled: false}\n")
    out = world.cli("config", "lint")
    assert out.returncode == 3
    assert out.stdout.splitlines() == [
        f"{path}:2: sensors.context.intervl: unknown key; did you mean interval?",
        f"{path}:3: sensors.keepwarn: not a built-in sensor (peers, context, keepwarm, disclosure); "
        "did you mean keepwarm?",
    ]


def test_lint_checks_the_relay_sections_keys_as_attend_relay_reads_them(world: World) -> None:
    path = user_config(world, "relay:\n  servers: [nats://bus:4222]\n  heartbaet: 10\n")
    out = world.cli("config", "lint")
    assert out.returncode == 3
    assert out.stdout.splitlines()[0].startswith(f"{path}:1: relay.heartbaet: unknown key")
    user_config(world, "relay:\n  servers: [nats://bus:4222]\n  heartbeat: 10\n")
    assert world.cli("config", "lint").returncode == 0


def test_config_names_where_each_value_is_set_defaults_too(world: World) -> None:
    path = user_config(world, "retention:\n  max_age_days: 3\n")
    rows = {ln.split()[0]: ln.split()[2:] for ln in world.cli("config").stdout.splitlines()[1:]}
    assert rows["retention.max_age_days"] == [str(path)]
    assert rows["retention.max_per_room"] == ["default"]  # not a blank cell


def test_path_prints_both_files(world: World) -> None:
    out = world.cli("config", "path")
    assert out.stdout.splitlines() == [
        f"{config.user_path(world.env)} (absent)",
        f"{world.project('proj') / '.claude' / 'attend.yaml'} (absent)",
    ]


def test_loading_config_does_not_import_yaml_without_files(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys; from attend.domain.settings import config; "
        "config.load({'HOME': sys.argv[1]}, sys.argv[1]); print('yaml' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_files_digest_is_its_sha256_so_trust_given_earlier_still_holds() -> None:
    import hashlib

    text = "sensors:\n  +ci: {script: ./ci.sh}\n# é\n"
    assert config.digest(text) == hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------- bounds


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e999"])
@pytest.mark.parametrize(
    "text", ["sensor: {{cleanup_interval: {v}}}", "context: {{threshold: {v}}}", "keepwarm: {{idle_seconds: {v}}}"]
)
def test_config_refuses_a_number_that_is_not_finite(text: str, value: str) -> None:
    cfg = config.parse(text.format(v=value), "x.yaml")
    key = next(iter(p.key for p in cfg.problems))
    assert cfg.values[key] == config.KEYS[key].default
    assert any("must be a finite number" in p.message or "must be at least" in p.message for p in cfg.problems)


@pytest.mark.parametrize("field", ["interval", "timeout"])
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_a_script_sensor_refuses_a_non_finite_interval_or_timeout(field: str, value: str) -> None:
    cfg = config.parse(f"sensors:\n  +ci: {{script: ./ci, {field}: {value}}}\n", "x.yaml")
    assert "ci" not in cfg.sensors
    assert [p.key for p in cfg.problems] == [f"sensors.+ci.{field}"]


@pytest.mark.parametrize("value", ["1e-300", "0.5", "29"])
def test_the_cleanup_interval_stays_on_the_loops_grid_or_off(value: str) -> None:
    cfg = config.parse(f"sensor: {{cleanup_interval: {value}}}", "x.yaml")
    assert cfg.values["sensor.cleanup_interval"] == 600 and "at least 30 (or 0, off)" in cfg.problems[0].message
    assert config.parse("sensor: {cleanup_interval: 0}", "x.yaml").values["sensor.cleanup_interval"] == 0
    assert config.parse("sensor: {cleanup_interval: 30}", "x.yaml").values["sensor.cleanup_interval"] == 30


def test_the_config_grid_is_the_loops() -> None:
    from attend.conduits import loop

    assert config.GRID == loop.TICK


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("sensor: {cleanup_interval: 30}", "sensor.cleanup_interval"),
        ("sensor: {cleanup_budget: 1000000}", "sensor.cleanup_budget"),
        ("sensors: {keepwarm: {interval: 1}}", "sensors.keepwarm.interval"),
        ("sensors: {context: {interval: 20}}", "sensors.context.interval"),
    ],
)
def test_a_project_file_may_not_make_its_loops_spend_more_than_the_defaults(world: World, text: str, key: str) -> None:
    proj = project_config(world, text + "\n")
    cfg = config.load(world.env, str(world.project("proj")))
    assert [(p.file, p.key) for p in cfg.problems] == [(str(proj), key)], cfg.problems
    assert "in a project's file" in cfg.problems[0].message
    assert cfg.values["sensor.cleanup_interval"] == 600 and cfg.values["sensor.cleanup_budget"] == 5000
    assert all(s.interval is None for s in cfg.sensors.values())
    user_config(world, text + "\n")  # the user may
    assert config.parse(text, "user.yaml").problems == []


def test_a_project_file_nested_a_thousand_deep_is_one_problem_not_a_crash(world: World) -> None:
    project_config(world, "a: " + "[" * 1000 + "]" * 1000 + "\n")
    cfg = config.load(world.env, str(world.project("proj")))
    assert [p.message for p in cfg.problems] == ["nested too deep to read; " + config.PROJECT_IGNORED]
    out = world.attend("config", "lint")
    assert out.returncode == 3 and "nested too deep to read" in out.stdout and "Traceback" not in out.stderr


SUB_GRID = (
    "sensors:\n  context: {interval: 20}\n  keepwarm: {interval: 1}\n  disclosure: {interval: 1}\n"
    "  +ci: {script: ./ci, interval: 5}\n"
)


def test_a_timer_under_the_loops_grid_comes_only_from_a_file_the_user_wrote_or_approved(world: World) -> None:
    """The user's own file may wake its own loops off the grid; a project's file, which a session can
    write, may not, unless the user approved that file's text (a script sensor's interval is in it)."""
    from attend.domain.settings import trust

    user = config.parse(SUB_GRID, "user.yaml")
    assert user.problems == []
    assert {n: s.interval for n, s in user.sensors.items()} == {"context": 20, "keepwarm": 1, "disclosure": 1, "ci": 5}
    path = project_config(world, SUB_GRID)
    cfg = config.load(world.env, str(world.project("proj")))
    keys = sorted(p.key for p in cfg.problems)
    assert keys == ["sensors.context.interval", "sensors.disclosure.interval", "sensors.keepwarm.interval"], keys
    assert all(f"at least {config.GRID:g} in a project's file" in p.message for p in cfg.problems), cfg.problems
    assert not {"context", "keepwarm", "disclosure"} & set(cfg.sensors)  # each keeps its default interval
    ci = cfg.sensors["ci"]
    assert ci.project and ci.interval == 5
    assert trust.verdict(world.env, ci, cfg.digests[str(path)]) is not None  # never run until approved
