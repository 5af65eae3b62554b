"""The click-free `send` fast path accepts exactly click's options and behaves the same."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import click
import pytest

from attend.cli import fastsend
from attend.cli.app import cli
from tests.support import ATTEND, World

CLICK_MAIN = "import sys; from attend.cli.app import main; sys.argv[0] = 'attend'; main()"


def test_the_fast_path_knows_exactly_the_send_commands_options() -> None:
    cmd = cli.get_command(click.Context(cli), "send")
    assert cmd is not None
    names = {opt for p in cmd.params if isinstance(p, click.Option) for opt in p.opts} - {"--help", "-h"}
    assert set(fastsend.OPTIONS) == names


@pytest.mark.parametrize(
    "args",
    [
        ["hello", "world"],
        ["--json", "hi"],
        ["--json", "--", "--looks like a flag"],
        ["--to=*", "hi"],
        ["--broadcast", "--json", "hi"],
        ["--re", "bad", "hi"],
        ["--channel", "no-such", "hi"],
        ["--to", "#x", "--channel", "y", "hi"],
        [""],
        ["--on-behalf-of", "alice", "--json", "hi", "--to", "x"],
    ],
)
def test_fast_and_click_paths_answer_alike(world: World, args: list[str]) -> None:
    fast = world.attend("send", *args)
    slow = subprocess.run(
        [sys.executable, "-c", CLICK_MAIN, "send", *args],
        capture_output=True,
        text=True,
        env=world.env,
        cwd=world.project("proj"),
    )
    # A full id (--json), or the send line's short form of one (attend.domain.core.ids.sent_form).
    norm = lambda s: re.sub(r"\d{10}\.M\d{6}(P\d+Q\d+R[0-9a-f]{8}\.[A-Za-z0-9-]+)?", "<id>", s)  # noqa: E731
    assert (fast.returncode, norm(fast.stdout), norm(fast.stderr)) == (
        slow.returncode,
        norm(slow.stdout),
        norm(slow.stderr),
    )


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["--chanel", "x", "hi"], ["--to"], ["--json=yes", "hi"]])
def test_anything_unusual_is_left_to_click(args: list[str]) -> None:
    assert fastsend.parse(args) is None


def test_help_still_comes_from_click(world: World) -> None:
    out = world.attend("send", "--help")
    assert out.returncode == 0 and "starts a topic" in out.stdout


def test_the_installed_entry_takes_the_fast_path_without_importing_click(world: World) -> None:
    # The fast path ends the process without the interpreter's teardown (entry.finish), so what it
    # imported is read from the interpreter's own import log, not from sys.modules after it returns.
    out = subprocess.run(
        [sys.executable, "-X", "importtime", ATTEND, "send", "hi"],
        capture_output=True,
        text=True,
        env=world.env,
        cwd=world.project("proj"),
    )
    assert out.returncode == 0 and out.stdout.startswith("sent "), out.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    assert "attend.cli.fastsend" in imported and "click" not in imported


# What a plain send must never load: each costs more than the rest of the path (goal: the whole process
# within 2.5x a bare interpreter start, bench/send.py). dataclasses brings inspect; pathlib brings
# urllib.parse and ipaddress; the verbs' request and result types, and the drain's module, are not needed.
NEVER_ON_SEND = {
    "click",
    "yaml",
    "psutil",
    "typing",
    "dataclasses",
    "inspect",
    "pathlib",
    "urllib.parse",
    "threading",
    "attend.verbs",
    "attend.conduits.fastdrain",
    "attend.domain.attention.attention",
    # Nor what only a relay, a config file or a subprocess needs: a spool without a relay reads no mirror.
    "subprocess",
    "hashlib",
    "socket",
    "asyncio",
    "tomllib",
    "tomlkit",
    "attend.config",
    "attend.relay",
    "attend.domain.messages.remote",
}

# Every attend module a human's plain send loads, and no other: a module that joins this path costs
# every send its import (bench/send.py holds the whole process to 2.5x a bare interpreter start), so it
# joins here on purpose, with the figures in docs/benchmarks.md, or is imported where it is used.
PLAIN_SEND_MODULES = {
    "attend",
    "attend.cli",
    "attend.cli.body",
    "attend.cli.entry",
    "attend.cli.fastsend",
    "attend.cli.render",
    "attend.domain",
    "attend.domain.core",  # the domain's floors: each package's __init__ is its docstring only
    "attend.domain.core.said",  # the warnings said once a process (context's identity notes)
    "attend.domain.messages",
    "attend.domain.sessions",
    "attend.domain.messages.addressing",
    "attend.domain.sessions.context",
    "attend.domain.messages.delivery",
    "attend.domain.core.envelope",
    "attend.domain.core.framing",
    "attend.domain.sessions.humans",
    "attend.domain.core.ids",  # the send line's short id (ids.sent_form: by character, no listing)
    "attend.domain.sessions.liveness",
    "attend.domain.sessions.mcp_markers",
    "attend.domain.messages.outbound",
    "attend.domain.core.outcomes",  # the per-recipient outcomes and the inbound rule (stdlib only)
    "attend.domain.core.rooms",
    "attend.domain.sessions.sessions",
    "attend.errors",
    "attend.hosts",
    "attend.hosts.base",
    "attend.hosts.claude",
    "attend.hosts.codex",
    "attend.hosts.gemini",
    "attend.identity",
    "attend.layout",
    "attend.procfs",
    "attend.record",
    "attend.safejson",
    "attend.spool",
    # The gate's parts, behind its face (attend.spool): the one module it was, split by concern.
    "attend.gate",
    "attend.gate.locks",
    "attend.gate.maildir",
    "attend.gate.opening",
    "attend.gate.state",
}


def _send_imports(args: list[str], run: Callable[[list[str]], Any]) -> set[str]:
    out = run(args)
    rc, err = (out.returncode, out.stderr) if hasattr(out, "returncode") else (out.rc, out.stderr)
    assert rc == 0, err
    return {line.split("|")[-1].strip() for line in err.splitlines() if line.startswith("import time:")}


def test_a_plain_send_loads_only_the_standard_library_it_needs(world: World) -> None:
    send = [sys.executable, "-X", "importtime", ATTEND, "send"]
    a, b = world.session("pa", name="Tao"), world.session("pb", name="Uma")
    for s in (a, b):
        assert s.attend("join", "crew").rc == 0

    def human(args: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*send, *args], capture_output=True, text=True, env=world.env, cwd=world.project("pa"))

    to_open = _send_imports(["hello"], human)
    assert "attend.domain.messages.outbound" in to_open  # positive control: it sent, through the rules' module
    assert NEVER_ON_SEND & to_open == set()
    to_tao = _send_imports(["--to", "Tao", "hi"], human)
    assert NEVER_ON_SEND & to_tao == set()
    # A send to a live session reads its client's record (JSON): by the C scanner alone, and the id
    # checked by character, so neither json's package nor re (with enum, ~3 ms of a start) is loaded.
    assert "attend.safejson" in to_tao and {"json", "re", "enum"} & to_tao == set()
    agent = _send_imports(["--channel", "crew", "hi"], lambda args: b.run([*send, *args]))  # a session
    assert "attend.domain.messages.channels" in agent and NEVER_ON_SEND & agent == set()
    assert {"json", "re", "enum"} & agent == set()  # a session's send to a channel: its members by character
    assert len(world.spool.listing(a.session_id, "new")) == 3  # each of the three arrived


def test_a_plain_send_loads_exactly_the_attend_modules_it_is_pinned_to(world: World) -> None:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", ATTEND, "send", "hello"],
        capture_output=True,
        text=True,
        env=world.env,
        cwd=world.project("proj"),
    )
    everything = _send_imports([], lambda _args: out)
    loaded = {m for m in everything if m == "attend" or m.startswith("attend.")}
    # Nor regular expressions where no JSON is read (no session enrolled): names and addresses are checked
    # by character (layout.made_safe, the envelope's plain phrase), and re brings enum, ~3 ms of a start.
    assert {"re", "enum"} & everything == set()
    assert loaded == PLAIN_SEND_MODULES, (
        f"joined the send path: {sorted(loaded - PLAIN_SEND_MODULES)}; left it: {sorted(PLAIN_SEND_MODULES - loaded)}"
    )


# ---------------------------------------------------------------------- options anywhere, as gh and git take them

WORDS = ("urgent", "now")
OPTION_GROUPS = (("--to", "Tao-alpha"), ("--json",), ("--re", "1700000000.M000000P1Q0R00000000.host"))


def _orders() -> list[list[str]]:
    """Every interleaving of the option groups with the words (each kept whole and in its own order)."""
    import itertools

    units: list[tuple[str, ...]] = [*OPTION_GROUPS, *((w,) for w in WORDS)]
    seen: set[tuple[str, ...]] = set()
    out = []
    for perm in itertools.permutations(units):
        if [u[0] for u in perm if u[0] in WORDS] != list(WORDS):
            continue  # the message's words keep their order
        flat = tuple(tok for unit in perm for tok in unit)
        if flat not in seen:
            seen.add(flat)
            out.append(list(flat))
    return out


def _click_parse(args: list[str]) -> dict[str, object]:
    cmd = cli.get_command(click.Context(cli), "send")
    assert cmd is not None
    params = cmd.make_context("send", list(args)).params
    return {"to": params["to"], "json": params["as_json"], "re": params["re_"], "words": list(params["message"])}


def test_every_argument_order_sends_to_the_same_place_through_both_parsers() -> None:
    orders = _orders()
    assert len(orders) == 60  # 5 units, the two words in order: 5!/2
    for args in orders:
        fast = fastsend.parse(args)
        assert fast is not None, args
        got = {"to": fast.get("to"), "json": bool(fast.get("json")), "re": fast.get("re"), "words": fast["words"]}
        want = {"to": "Tao-alpha", "json": True, "re": OPTION_GROUPS[2][1], "words": list(WORDS)}
        assert got == want, args
        assert _click_parse(args) == want, args


@pytest.mark.parametrize("args", [["--", "--to", "x"], ["hi", "--", "--json"], ["--", "-"]])
def test_after_a_double_dash_everything_is_the_message_in_both_parsers(args: list[str]) -> None:
    fast = fastsend.parse(args)
    assert fast is not None
    after = args[args.index("--") + 1 :]
    before = args[: args.index("--")]
    assert fast["words"] == before + after and "to" not in fast and "json" not in fast
    assert _click_parse(args)["words"] == before + after


@pytest.mark.parametrize("text", ["--bogus", "-5", "--to-everyone"])
def test_text_that_looks_like_an_option_is_refused_without_a_double_dash(world: World, text: str) -> None:
    before = sorted(p.name for p in world.spool_root.rglob("*")) if world.spool_root.exists() else []
    out = world.attend("send", "hello", text)
    assert out.returncode == 2, out
    assert "No such option" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    after = sorted(p.name for p in world.spool_root.rglob("*")) if world.spool_root.exists() else []
    assert after == before  # nothing sent, nothing written


def test_a_word_sent_to_one_session_never_goes_to_everyone(world: World) -> None:
    # b is named too: a persona drawn from b's project path could be "Tao", a prefix of a's alias.
    a, b = world.session("pa", name="Tao"), world.session("pb", name="Uma")
    for s in (a, b):
        assert s.attend("join", "crew").rc == 0
    name = world.attend("peers", "--json")
    assert name.returncode == 0, name.stderr
    display = next(p["display"] for p in json.loads(name.stdout)["peers"] if p["session_id"] == a.session_id)
    out = world.attend("send", "urgent", "--to", display, "--json")
    assert out.returncode == 0, out.stderr
    sent = json.loads(out.stdout)
    assert sent["scope"] != "#open" and sent["delivered"] == 1, sent
    assert world.spool.listing(a.session_id, "new") == [sent["id"]]
    assert world.spool.listing(b.session_id, "new") == []
    record = world.spool.read_record(sent["room"], sent["id"]).decode()
    assert record.endswith("\n\nurgent"), record  # the option is not part of the body


@pytest.mark.parametrize("how", [["-"], []])
def test_the_body_can_come_from_stdin(world: World, how: list[str]) -> None:
    out = world.attend("send", "--json", *how, stdin="from a pipe\nsecond line\n")
    assert out.returncode == 0, out.stderr
    sent = json.loads(out.stdout)
    record = world.spool.read_record(sent["room"], sent["id"]).decode()
    assert record.endswith("\n\nfrom a pipe\nsecond line"), record


def test_an_empty_body_from_stdin_is_still_refused(world: World) -> None:
    out = world.attend("send", "-", stdin="\n")
    assert out.returncode == 2 and "empty message" in out.stderr
