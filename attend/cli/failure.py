"""How a refusal reaches the caller, for the click frontend and the click-free fast path alike: one
line on stderr, or, when the command line asked for ``--json``, one JSON document on stdout,
``{"error": {"code": …, "message": …}}``, so a script never scrapes stderr. The exit code is the
same either way. Standard library only: the fast send path imports it."""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~3 ms to import on the hot paths; mypy reads this as true
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import TextIO


def wants_json(argv: Sequence[str]) -> bool:
    """Whether ``--json`` is among the options (words after ``--`` are the message, not options)."""
    args = list(argv)
    if "--" in args:
        args = args[: args.index("--")]
    return "--json" in args


def report(code: str, message: str, as_json: bool, out: TextIO, err: TextIO) -> None:
    """``message`` is the one line a human reads (it names attend or the command already)."""
    if as_json:
        import json

        out.write(json.dumps({"error": {"code": code, "message": message}}, ensure_ascii=False) + "\n")
        out.flush()
    else:
        err.write(message + "\n")
        err.flush()
