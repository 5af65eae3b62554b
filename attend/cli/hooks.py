"""CLI handlers for the two hook-only commands, `recall` and `wait`. The console entry runs them
before click (attend/cli/entry.py): these click commands give them `--help`, `attend help recall|wait`
and their section of the reference, and behave as the entry's route does when run through click."""

from __future__ import annotations

import os
import sys

import click

from attend.cli.app import epilog

RECALL_HELP = (
    "After a compaction, give the session back the threads it was shown and has not answered, and the "
    "reheat. It runs only as Claude Code's SessionStart hook (matcher compact), which attend install wires."
)
RECALL_EXAMPLES = (
    ("attend recall --hook", "what the installed hook runs, with the hook's payload on stdin"),
    ("attend help recall", "this help"),
)
WAIT_HELP = (
    "The waiter: a Stop hook (asyncRewake) that waits while the session is idle, costing no model turn, and "
    "wakes it when a message lands. It runs only as that hook, which attend install wires."
)
WAIT_EXAMPLES = (
    ("attend wait --hook", "what the installed hook runs, with the hook's payload on stdin"),
    ("attend status", "whether this session's waiter is wired and waiting"),
)
HOOK_HELP = "Run as the hook: read the hook's payload on stdin."


@click.command(help=RECALL_HELP, epilog=epilog(RECALL_EXAMPLES))
@click.option("--hook", is_flag=True, help=HOOK_HELP)
def recall(hook: bool) -> None:
    from attend.conduits import recall as conduit

    raise SystemExit(conduit.main(["--hook"] if hook else [], os.environ, sys.stdout, sys.stderr))


@click.command(help=WAIT_HELP, epilog=epilog(WAIT_EXAMPLES))
@click.option("--hook", is_flag=True, help=HOOK_HELP)
def wait(hook: bool) -> None:
    from attend.conduits import waiter

    raise SystemExit(waiter.main(["--hook"] if hook else [], os.environ, sys.stderr))
