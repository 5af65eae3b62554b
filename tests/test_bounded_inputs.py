"""Bounded inputs: every JSON file a session can write, and every config value a project can set, is
read so that no nesting, size or number takes a reader down, or costs the other sessions CPU.

Sessions share a uid, so each file here is one a hostile peer can plant. A value nested a thousand
deep takes two kilobytes; the standard library's decoder raises ``RecursionError`` on it, which is not
the ``ValueError`` a reader catches for "not JSON"."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from attend import safejson
from attend.testing.standin import StandIn
from tests.support import DEADLINE, Loop, World, enroll

PANE_PAUSES = int(DEADLINE / 0.02)  # pauses to wait for the peers pane before it counts as never drawn

DEEP = "[" * 1000 + "]" * 1000  # 2 KB


def deep_transcript(world: World, s: StandIn) -> Path:
    """The session's transcript, its last line an assistant turn whose usage nests 1,000 deep."""
    slug = re.sub(r"[^A-Za-z0-9]", "-", str(s.cwd))
    path = world.home / ".claude" / "projects" / slug / f"{s.session_id}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    line = '{"type":"assistant","timestamp":"2026-12-01T10:00:05.000Z","message":{"usage":' + DEEP + "}}"
    path.write_text(json.dumps({"type": "user", "timestamp": "2026-12-01T10:00:00.000Z"}) + "\n" + line + "\n")
    return path


@pytest.mark.parametrize("depth", [1000, 100_000])
def test_the_json_reader_refuses_any_depth_as_not_json(depth: int) -> None:
    with pytest.raises(ValueError):
        safejson.loads("[" * depth + "]" * depth)
    assert safejson.within(json.loads("[[[]]]"), 3) and not safejson.within(json.loads("[[[]]]"), 2)


def test_a_deep_transcript_never_fails_peers_for_everyone(world: World) -> None:
    hostile, other = world.session(name="Mallory-one"), world.session(name="Ada-two")
    enroll(world, hostile)
    enroll(world, other)
    deep_transcript(world, hostile)
    r, h = other.attend("peers"), world.attend("peers")
    for rc, out, err in ((r.rc, r.stdout, r.stderr), (h.returncode, h.stdout, h.stderr)):
        assert rc == 0 and "Traceback" not in err, err
        assert "Ada-two" in out and "Mallory-one" in out, out


def test_a_deep_transcript_never_kills_the_sessions_loop(world: World) -> None:
    s = world.session(name="Ada-two")
    deep_transcript(world, s)
    loop = Loop(world, s)
    try:
        assert world.attend("send", "--to", "Ada-two", "still hears").returncode == 0
        loop.wait_for(lambda lines: any("still hears" in ln for ln in lines), "the message after the deep transcript")
        assert loop.running() and "Traceback" not in loop.stderr(), loop.said()
    finally:
        loop.stop()


def test_a_deep_transcript_never_fails_tune(world: World) -> None:
    s = world.session(name="Ada-two")
    deep_transcript(world, s)
    out = world.attend("tune")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr


@pytest.mark.parametrize(
    "where",
    [
        ("registry", "{key}.json"),
        ("sessions", "{sid}", "enrolled"),
    ],
)
def test_a_deep_file_in_the_spool_never_fails_peers_status_or_inbox(world: World, where: tuple[str, ...]) -> None:
    hostile, other = world.session(name="Mallory-one"), world.session(name="Ada-two")
    enroll(world, hostile)
    enroll(world, other)
    registry = sorted((world.spool_root / "registry").glob("*.json"))
    key = registry[0].stem if registry else "x"
    path = world.spool_root.joinpath(*(p.format(sid=hostile.session_id, key=key) for p in where))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(DEEP)
    for verb in ("peers", "status", "inbox"):
        r = other.attend(verb)
        assert "Traceback" not in r.stderr and "RecursionError" not in r.stderr, (verb, r.stderr)
        h = world.attend(verb)
        assert "Traceback" not in h.stderr and "RecursionError" not in h.stderr, (verb, h.stderr)


# Modules whose json.loads reads only what attend itself made in the same process (never a file or the wire).
OWN_JSON = {"attend/safejson.py", "attend/mcp/discovery.py"}


def test_every_json_read_goes_through_the_bounded_reader() -> None:
    """A reader that calls json.loads (or json.load) directly dies on a value nested a thousand deep:
    every JSON read from a file or the wire goes through attend.safejson."""
    import ast

    root = Path(__file__).resolve().parent.parent
    found = []
    for path in sorted((root / "attend").rglob("*.py")):
        rel = str(path.relative_to(root))
        if rel in OWN_JSON or rel.startswith("attend/testing/"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            func = node.func if isinstance(node, ast.Call) else None
            if (
                isinstance(func, ast.Attribute)
                and func.attr in ("loads", "load")
                and isinstance(func.value, ast.Name)
                and func.value.id == "json"
            ):
                found.append(f"{rel}:{node.lineno}")
    assert not found, "read JSON with attend.safejson.loads, not json.loads:\n" + "\n".join(found)


def test_a_deep_transcript_never_fails_keepwarm(world: World) -> None:
    s = world.session(name="Ada-two")
    enroll(world, s)
    deep_transcript(world, s)
    for args in (("keepwarm",), ("keepwarm", "status"), ("keepwarm", "on")):
        r = s.attend(*args)
        assert r.rc == 0 and "Traceback" not in r.stderr and "RecursionError" not in r.stderr, (args, r.stderr)


@pytest.mark.anyio
@pytest.mark.parametrize("what", ["transcript", "session-record"])
async def test_a_deep_transcript_or_session_record_never_kills_the_chat_peers_pane(world: World, what: str) -> None:
    from attend.chat.app import ChatApp
    from attend.verbs import chat as chat_verb

    hostile, other = world.session("api", name="Mallory"), world.session("web", name="Ada")
    enroll(world, hostile)
    enroll(world, other)
    deep_transcript(world, hostile)
    if what == "session-record":
        hostile.record_path.write_text(DEEP)  # the client's record of a live process, as a peer can plant it
    shown = ("Ada", "Mallory") if what == "transcript" else ("Ada",)
    ctx = world.context()
    app = ChatApp(ctx, chat_verb.run(ctx, chat_verb.ChatRequest()), live=False)
    async with app.run_test(size=(80, 24)) as pilot:
        peers = app.query_one("#peers")
        for _ in range(PANE_PAUSES):  # a bound on the wait that catches a hang, not a timing
            if all(name in str(peers.render()) for name in shown) or not app.is_running:
                break
            await pilot.pause(0.02)
        assert app.is_running  # the deep file killed nothing
        assert all(name in str(peers.render()) for name in shown), str(peers.render())
