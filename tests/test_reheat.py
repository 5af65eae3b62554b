"""The reheat (issue 18): the judgment layer's two wordings in one shipped file, held in agreement
with the skill's judgment section; the disclosure rules (first message, once per stretch, after a
compaction, off by config); and the conduits that say it (the loop's disclosure sensor, the drain)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from attend.conduits import inbox_socket
from attend.conduits.sensors.base import Probe
from attend.conduits.sensors.builtin import Disclosure
from attend.domain.attention import disclosure, reheat
from attend.domain.settings import config
from attend.setup.data import data_file
from attend.testing.standin import StandIn
from tests.support import Loop, World, drain, enroll, fake_mcp_marker, has, post

SENTENCE = re.compile(r"(?<=[.!?])\s+")
JUDGMENT = re.compile(r"<!-- judgment:.*?-->\n(.*?)<!-- /judgment -->", re.S)
BOLD = re.compile(r"\*\*[^*]+\*\*\s*")


def sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE.split(" ".join(text.split())) if s.strip()]


def disagreements(skill: str, reheat_text: str) -> list[str]:
    """Where the skill's judgment section and the reheat's judgment part have drifted apart: a reheat
    sentence the skill does not say, a skill paragraph the reheat quotes nothing of, or a sentence of
    the skill's Replying paragraph (the autonomy and silence rules) the reheat leaves out."""
    section = JUDGMENT.search(skill)
    if section is None:
        return ["SKILL.md has no <!-- judgment: … --> … <!-- /judgment --> section"]
    paragraphs = [BOLD.sub("", p) for p in section.group(1).split("\n\n") if p.strip()]
    said = set(sentences(reheat.sections(reheat_text)["judgment"]))
    skill_says = {s for p in paragraphs for s in sentences(p)}
    problems = [f"the reheat says what the skill does not: {s!r}" for s in sorted(said - skill_says)]
    problems += [f"the reheat quotes nothing of: {p[:60]!r}" for p in paragraphs if not said & set(sentences(p))]
    replying = next((p for p in section.group(1).split("\n\n") if p.startswith("**Replying.**")), "")
    problems += [f"the reheat leaves out: {s!r}" for s in sentences(BOLD.sub("", replying)) if s not in said]
    return problems


def shipped() -> tuple[str, str]:
    return data_file("skills", "attend", "SKILL.md").read_text(), reheat.path().read_text()


# ---------------------------------------------------------------------- the text


def test_each_wording_fits_the_400_byte_budget() -> None:
    sizes = {mode: len(reheat.wording(mode == "mcp").encode()) for mode in ("mcp", "cli")}
    assert all(0 < n <= reheat.BUDGET for n in sizes.values()), sizes


def test_the_mcp_wording_names_the_tools_and_drops_the_quoting_rule_and_the_bash_ban() -> None:
    text = reheat.wording(True)
    assert "mcp__attend__" in text
    assert "double quotes" not in text and "attend run" not in text and "from Bash" not in text


def test_the_cli_wording_names_the_verbs_and_keeps_the_quoting_rule_and_the_bash_ban() -> None:
    text = reheat.wording(False)
    assert "attend send" in text and "attend reply" in text and "mcp__" not in text
    assert "double quotes" in text and "never run `attend run` from Bash" in text


def test_both_wordings_carry_the_judgment_layer_and_the_conduit_contract() -> None:
    for mcp in (True, False):
        text = reheat.wording(mcp)
        assert "reply without asking" in text and "Silence is a valid reply" in text
        assert "Monitor lines, at turn ends, or marked [attend]" in text
        assert "answer with attend, not SendMessage" in text  # the socket conduit's posts


def test_the_skill_says_a_message_posted_through_the_socket_is_answered_with_attend_not_sendmessage() -> None:
    skill, _ = shipped()
    said = " ".join(skill.split())
    marker = inbox_socket.HEADER.split(" (")[0]  # how the socket conduit's post begins
    assert f"starting with `{marker}`" in said and marker == "[attend] delivered by attend"
    assert (
        "Answer it with attend's `reply` or `send`, never SendMessage: the sender reads attend, and "
        "SendMessage does not reach them."
    ) in said


def test_the_skills_judgment_section_and_the_reheat_agree() -> None:
    skill, text = shipped()
    assert disagreements(skill, text) == []


@pytest.mark.parametrize(
    "drift",
    [
        ("Silence is a valid reply: an acknowledgement nobody needs is noise.", "Always acknowledge."),
        ("Answer what was asked, once. ", ""),
    ],
)
def test_a_skill_sentence_changed_without_the_reheat_is_caught(drift: tuple[str, str]) -> None:
    skill, text = shipped()
    assert drift[0] in skill
    assert disagreements(skill.replace(drift[0], drift[1]), text) != []


def test_the_reheat_ships_beside_the_skill() -> None:
    assert reheat.path() == data_file("skills", "attend", "reheat.md")


# ---------------------------------------------------------------------- the timing rules


def test_the_reheat_is_due_at_the_first_message_then_once_per_stretch() -> None:
    assert disclosure.due(None, 1000.0, 7200) == disclosure.FIRST
    assert disclosure.due(1000.0, 1000.0 + 7199, 7200) is None
    assert disclosure.due(1000.0, 1000.0 + 7200, 7200) == disclosure.STRETCH


def probe(world: World, s: StandIn, **values: float | int | str) -> Probe:
    cfg = config.defaults()
    cfg.values.update(values)
    return Probe(world.spool, world.context(s).who(), world.env, cfg, time.time(), {})


def said(sensor: Disclosure, p: Probe) -> list[str]:
    return [o.text for o in sensor.poll(p)]


def test_the_sensor_says_nothing_until_a_message_is_shown_then_once_within_the_stretch(world: World) -> None:
    s = world.session()
    enroll(world, s)
    sensor = Disclosure()
    assert said(sensor, probe(world, s)) == []
    assert sensor.observe("message", probe(world, s)) is True  # poll me now
    assert said(sensor, probe(world, s)) == [reheat.wording(False)]
    sensor.observe("message", probe(world, s))
    assert said(sensor, probe(world, s)) == []  # within the stretch


def test_a_message_after_the_stretch_brings_the_reheat_back(world: World) -> None:
    s = world.session()
    enroll(world, s)
    disclosure.stamp(world.spool, s.session_id, time.time() - 61, disclosure.FIRST)
    sensor = Disclosure()
    sensor.observe("message", probe(world, s, **{"disclosure.stretch": 60}))
    assert said(sensor, probe(world, s, **{"disclosure.stretch": 60})) == [reheat.wording(False)]


def test_the_wording_follows_the_mcp_marker_at_the_moment_of_printing(world: World) -> None:
    s = world.session()
    enroll(world, s)
    sensor = Disclosure()
    sensor.observe("message", probe(world, s))
    fake_mcp_marker(world, s.session_id)  # the server came up after the message was shown
    assert said(sensor, probe(world, s)) == [reheat.wording(True)]


def test_a_compaction_stamp_counts_as_said(world: World) -> None:
    s = world.session()
    enroll(world, s)
    disclosure.said_after_compaction(world.spool, s.session_id, time.time())
    sensor = Disclosure()
    sensor.observe("message", probe(world, s))
    assert said(sensor, probe(world, s)) == []


def off_config(world: World) -> Path:
    path = world.home / ".config" / "attend" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("sensors:\n  -disclosure:\n")
    return path


def test_turned_off_it_never_says_it(world: World) -> None:
    s = world.session()
    enroll(world, s)
    off_config(world)
    cfg = config.load(world.env)
    assert disclosure.take(world.spool, s.session_id, cfg, time.time(), False) is None
    assert not (world.spool_root / "sessions" / s.session_id / "disclosed").exists()


# ---------------------------------------------------------------------- the conduits


def reheat_lines(lines: list[str]) -> list[str]:
    return [ln for ln in lines if ln.startswith("[attend sensor=disclosure ")]


def test_the_loop_says_the_reheat_once_at_the_first_message_and_not_at_the_next(world: World) -> None:
    s = world.session()
    loop = Loop(world, s)
    post(world.spool, "open", "first")
    loop.wait_for(lambda ls: reheat_lines(ls), "the reheat")
    post(world.spool, "open", "second")
    loop.wait_for(has("second"), "the second message")
    loop.stop()
    assert reheat_lines(loop.lines()) == [f"[attend sensor=disclosure priority=low] {reheat.wording(False)}"]
    stamp = json.loads((world.spool_root / "sessions" / s.session_id / "disclosed").read_text())
    assert stamp["why"] == "first"


def test_a_loop_with_the_sensor_off_never_says_it(world: World) -> None:
    off_config(world)
    s = world.session()
    loop = Loop(world, s)
    post(world.spool, "open", "first")
    loop.wait_for(has("first"), "the message")
    post(world.spool, "open", "second")
    loop.wait_for(has("second"), "the second message")
    loop.stop()
    assert reheat_lines(loop.lines()) == []


def test_the_turn_end_drain_leaves_the_reheat_to_the_loop_and_the_waiter(world: World) -> None:
    s = world.session()
    enroll(world, s)
    post(world.spool, "open", "first")
    assert "[attend reheat]" not in json.loads(drain(world, s.session_id).stdout)["reason"]
    assert not (world.spool_root / "sessions" / s.session_id / "disclosed").exists()


def test_sensors_lists_the_disclosure_sensor_and_config_lint_checks_its_keys(world: World) -> None:
    got = {r["name"]: r for r in json.loads(world.attend("sensors", "--json").stdout)["sensors"]}
    assert got["disclosure"]["lane"] == "event" and got["disclosure"]["state"] == "on"
    path = world.home / ".config" / "attend" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("disclosure:\n  stretch: 5\nsensors:\n  disclosure: {enabled: maybe}\n")
    out = world.attend("config", "lint")
    assert out.returncode == 3
    assert f"{path}:2: disclosure.stretch: must be at least 60, not 5" in out.stdout
    assert f"{path}:4: sensors.disclosure.enabled: must be true or false" in out.stdout
    off_config(world)
    got = {r["name"]: r for r in json.loads(world.attend("sensors", "--json").stdout)["sensors"]}
    assert got["disclosure"]["state"] == "off"
