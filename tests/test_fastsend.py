"""The click-free `send` fast path accepts exactly click's options and behaves the same."""

from __future__ import annotations

import re
import subprocess
import sys

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
    norm = lambda s: re.sub(r"\d{10}\.M\d{6}P\d+Q\d+R[0-9a-f]{8}\.[A-Za-z0-9-]+", "<id>", s)  # noqa: E731
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
    code = (
        "import sys, runpy; sys.argv = ['attend', 'send', 'hi']\n"
        "try:\n    runpy.run_path(sys.argv_path, run_name='__main__')\nexcept SystemExit: pass\n"
        "print('click' in sys.modules)"
    )
    code = code.replace("sys.argv_path", repr(ATTEND))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=world.env, cwd=world.project("proj")
    )
    assert out.stdout.strip().splitlines()[-1] == "False", out.stderr
