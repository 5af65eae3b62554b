"""`attend thread <id>` prints a thread from its root, indented as chat shows it; and any unique prefix of
a message id (at least 6 characters) is taken wherever an id is, as git takes a commit's."""

from __future__ import annotations

import json
import subprocess

from attend.domain.core import ids
from attend.domain.sessions import sessions
from attend.verbs import reply, send
from tests.support import ATTEND, World


def attend(world: World, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ATTEND, *args], env=world.env, cwd=world.project("proj"), capture_output=True, text=True, timeout=60
    )


def conversation(world: World) -> dict[str, str]:
    a, b = world.session("api"), world.session("web")
    for s in (a, b):
        sessions.enroll(world.spool, world.context(s).who(), "run")
    got = {}
    got["root"] = send.run(world.context(a), send.SendRequest("deploy tonight?")).id
    got["yes"] = reply.run(world.context(b), reply.ReplyRequest("yes, at ten", re=got["root"])).id
    got["why"] = reply.run(world.context(a), reply.ReplyRequest("why ten?", re=got["yes"])).id
    got["also"] = reply.run(world.context(b), reply.ReplyRequest("and tests first", re=got["root"])).id
    got["other"] = send.run(world.context(b), send.SendRequest("another topic")).id
    return got


def test_thread_prints_the_whole_thread_from_its_root_indented_from_any_of_its_messages(world: World) -> None:
    got = conversation(world)
    out = attend(world, "thread", got["why"])
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    bodies = [(len(line) - len(line.lstrip()), line.strip()) for line in lines if line.strip() and ":" not in line]
    assert bodies[:4] == [
        (2, "deploy tonight?"),
        (4, "yes, at ten"),
        (6, "why ten?"),
        (4, "and tests first"),
    ], out.stdout
    assert "another topic" not in out.stdout
    assert lines[-1] == f"3 replies under {ids.shortest([got['root']], ids.all_ids(world.spool))[got['root']]}"
    doc = json.loads(attend(world, "thread", "--json", got["root"]).stdout)
    assert doc["root"] == got["root"] and [m["id"] for m in doc["messages"]] == [
        got["root"],
        got["yes"],
        got["why"],
        got["also"],
    ]


def test_a_unique_prefix_of_an_id_is_taken_wherever_an_id_is(world: World) -> None:
    got = conversation(world)
    everything = ids.all_ids(world.spool)
    short = ids.shortest(list(everything), everything)
    for full, prefix in short.items():  # each short form is unique, and no shorter than 6
        assert len(prefix) >= ids.MIN_PREFIX and [i for i in everything if i.startswith(prefix)] == [full]
    prefix = short[got["yes"]]
    read = attend(world, "inbox", "--json", prefix)
    assert read.returncode == 0, read.stderr
    assert json.loads(read.stdout)["messages"][0]["id"] == got["yes"]
    answered = attend(world, "reply", "--json", "--re", prefix, "from the human")
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["re"] == got["yes"]
    assert attend(world, "thread", prefix).returncode == 0


def test_a_prefix_that_fits_several_ids_or_none_or_is_too_short_is_refused_in_one_line(world: World) -> None:
    got = conversation(world)
    shared = got["root"][: ids.MIN_PREFIX]  # the seconds of a timestamp: every message of this test
    several = attend(world, "inbox", shared)
    assert several.returncode == 2 and "fits" in several.stderr and "give more of the id" in several.stderr
    assert len(several.stderr.strip().splitlines()) == 1
    none = attend(world, "reply", "--re", "999999999", "hi")
    assert none.returncode == 1 and "no message id starts with '999999999'" in none.stderr, none.stderr
    short = attend(world, "thread", got["root"][:5])
    assert short.returncode == 2 and "at least 6 characters" in short.stderr
