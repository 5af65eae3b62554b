"""The ``attend`` console entry: route the Stop-hook drain, the waiter (``attend wait --hook``) and
plain `send` command lines to their fast paths before click (or anything heavy) is imported;
everything else goes to the click frontend."""

from __future__ import annotations

import sys


def main() -> None:
    # A path that is not UTF-8 (a folder name, a message's origin) is held as lone surrogates: print
    # those as escapes rather than die on them. Valid text prints exactly as before.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")

    from attend.conduits import fastdrain

    if fastdrain.wants_fast_path(sys.argv):
        import os

        data = fastdrain.read_payload()
        try:
            decided = fastdrain.decide(data, os.environ)
        except Exception:  # any surprise: the full path decides, and reports
            decided = None
        if decided is not None:
            sys.exit(decided)
        from attend.conduits import drain

        sys.exit(drain.hook_main(data, sys.stdout, sys.stderr))

    if sys.argv[1:2] == ["wait"]:
        import os

        from attend.conduits import waiter  # the asyncRewake Stop hook: it waits for hours, so stays small

        sys.exit(waiter.main(sys.argv[2:], os.environ, sys.stderr))

    if sys.argv[1:2] == ["send"]:
        from attend.cli import fastsend  # the hot outbound path, parsed without click

        code = fastsend.run(sys.argv[2:])
        if code is not None:
            sys.exit(code)

    from attend.cli.app import main as cli_main

    cli_main()
