"""The ``attend`` console entry: print `attend --help` (attend/cli/toplevel.py), and route the Stop-hook
drain, the waiter (``attend wait --hook``), plain `send`, `peers`, `status`, plain `chat`, bare `run`
and bare `mcp` command lines to their fast paths before click (or anything heavy) is imported;
everything else goes to the click frontend."""

from __future__ import annotations

import os
import sys


def finish(code: int) -> None:
    """End a fast path whose work is all written and synced (the spool is written through file
    descriptors, never buffered), skipping the interpreter's teardown: freeing every module and object
    costs the caller a few milliseconds of wall time for nothing. Only stdout and stderr hold buffers."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except OSError:
        sys.exit(code)  # a closed pipe: the ordinary exit reports it as it always has
    os._exit(code)


def main() -> None:
    # A path that is not UTF-8 (a folder name, a message's origin) is held as lone surrogates: print
    # those as escapes rather than die on them. Valid text prints exactly as before.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")

    if sys.argv[1:] in ([], ["--help"], ["-h"], ["help"]) and "_ATTEND_COMPLETE" not in os.environ:
        # (A shell's Tab runs attend with no arguments and _ATTEND_COMPLETE set: that is click's.)
        from attend.cli import toplevel  # the list of commands, without importing every verb to list them

        if toplevel.fits():
            sys.stdout.write(toplevel.HELP + "\n")
            sys.exit(0)

    if sys.argv[1:2] == ["inbox"]:  # the drain's module only for it: `send` never loads it
        from attend.conduits import fastdrain

        if fastdrain.wants_fast_path(sys.argv):
            data = fastdrain.read_payload()
            try:
                decided = fastdrain.decide(data, os.environ)
            except Exception:  # any surprise: the full path decides, and reports
                decided = None
            if decided is not None:
                sys.exit(decided)
            from attend.conduits import drain

            sys.exit(drain.hook_main(data, sys.stdout, sys.stderr))

    # `recall --help` and `wait --help` are click's (attend/cli/hooks.py): a hook never asks for help.
    asks_help = bool({"--help", "-h"} & set(sys.argv[2:]))

    if sys.argv[1:2] == ["recall"] and not asks_help:
        from attend.conduits import recall  # the SessionStart hook after a compaction: small, fails open

        sys.exit(recall.main(sys.argv[2:], os.environ, sys.stdout, sys.stderr))

    if sys.argv[1:2] == ["wait"] and not asks_help:
        from attend.conduits import waiter  # the asyncRewake Stop hook: it waits for hours, so stays small

        sys.exit(waiter.main(sys.argv[2:], os.environ, sys.stderr))

    if sys.argv[1:] == ["hook", "edit"]:
        # The pre-tool hook of every edit (attend/leases/fasthook.py): an edit outside every other
        # session's lease is decided on the standard library alone, with no output.
        from attend.leases import fasthook

        data = fasthook.read_payload()
        try:
            decided = fasthook.decide(data, os.environ)
        except Exception:  # any surprise: the full check decides, and fails open
            decided = None
        if decided is not None:
            sys.exit(decided)
        from attend.leases import check

        sys.exit(check.edit_main(data, os.environ, sys.stdout, sys.stderr))

    if sys.argv[1:] == ["hook", "commit"]:
        from attend.leases import check  # the pre-commit guard (attend install --git-hook)

        sys.exit(check.commit_main(os.environ, sys.stderr))

    if sys.argv[1:2] == ["hook"]:
        from attend.conduits import hosthooks  # Codex's and Gemini's own hooks: small, fail open

        sys.exit(hosthooks.main(sys.argv[2:], os.environ, sys.stdout, sys.stderr))

    if sys.argv[1:2] == ["send"]:
        import gc

        # A send lives for milliseconds and ends without freeing anything (finish): the collector's
        # passes over the objects its imports make find nothing to free and cost ~2 ms of CPU a send.
        gc.disable()
        from attend.cli import fastsend  # the hot outbound path, parsed without click

        code = fastsend.run(sys.argv[2:])
        if code is not None:
            finish(code)
        gc.enable()  # the click frontend parses this command line: an ordinary process again

    if sys.argv[1:] == ["mcp"]:
        # Claude Code waits for the tool list at every session start: answer it before click loads.
        from attend.mcp import front

        front.main()

    if sys.argv[1:2] == ["chat"]:
        import importlib

        # The TUI starts without click: a plain chat or chat --room. By name, as for `run`: the app's
        # peers pane reads config.yaml, once, and the hot paths' no-yaml contract follows static imports.
        fastchat = importlib.import_module("attend.cli.fastchat")
        code = fastchat.run(sys.argv[2:])
        if code is not None:
            sys.exit(code)

    if sys.argv[1:2] in (["peers"], ["status"]):
        from attend.cli import fastquery  # the read-only commands run most, without click

        if fastquery.wants(sys.argv[1:]):
            try:
                sys.exit(fastquery.run(sys.argv[1:]))
            except BrokenPipeError:
                sys.exit(1)

    if sys.argv[1:2] == ["search"] and not asks_help:
        from attend.cli import fastsearch  # a search a person waits for, without click

        try:
            code = fastsearch.run(sys.argv[2:])
        except BrokenPipeError:
            code = 1
        if code is not None:
            sys.exit(code)

    if sys.argv[1:] == ["run"]:
        # The sensor loop without click: a hundred idle loops on one machine each keep only what the
        # loop uses (click is ~3 MB of every loop's memory). `run --help` and the rest go to click.
        import importlib

        from attend.domain.sessions.context import Context
        from attend.errors import AttendError

        # By name, as app.py loads every command: the loop reads config.yaml, and the hot paths'
        # contract (no yaml on send or the drain) follows static imports of this module.
        run_verb = importlib.import_module("attend.verbs.run")
        try:
            code = run_verb.run(Context.default(), run_verb.RunRequest())
        except AttendError as e:
            from attend.cli import failure  # only a refusal pays for it

            failure.report(e.code, f"attend: {e}", False, sys.stdout, sys.stderr)
            code = e.exit_code
        except BrokenPipeError:
            code = 1
        sys.exit(code)

    from attend.cli.app import main as cli_main

    cli_main()
