"""CLI handlers for the two conduit commands, `recall` and `wait`. The console entry runs them
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
    "The waiter: waits while the session is idle, costing no model turn, and wakes it when a message lands. "
    "In Claude Code it is a Stop hook (asyncRewake), which attend install wires. In an interactive Gemini CLI "
    "session whose settings enable steering (experimental.modelSteering, and tools.shell."
    'backgroundCompletionBehavior "inject"), the model runs it as a background shell command with --once: it '
    "prints the messages and exits when they land, and Gemini hands that to the model as a new turn."
)
WAIT_EXAMPLES = (
    ("attend wait --hook", "what the installed hook runs, with the hook's payload on stdin"),
    ("attend wait --once", "a Gemini session's waiter: run_shell_command with is_background true"),
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
@click.option("--once", is_flag=True, help="Wait for this Gemini session's next messages, print them and exit.")
def wait(hook: bool, once: bool) -> None:
    from attend.conduits import waiter

    argv = (["--hook"] if hook else []) + (["--once"] if once else [])
    raise SystemExit(waiter.main(argv, os.environ, sys.stderr))
