"""Verbs: one module each, a typed request and result, one description string, and no printing.

Every verb module has the one shape: ``DESCRIPTION`` (and ``PARAMS``, one help string per parameter,
where it has parameters), a frozen request dataclass (an empty one for a verb without parameters), and
``run(ctx: Context, req: <Name>Request) -> <Result>``; a verb with a command of its own also has
``EXAMPLES``, 2-4 (command line, what it does) pairs that end its ``--help`` (the CLI's only).
Frontends (attend.cli, attend.mcp) parse input into a request, call ``run`` and render the result;
``document`` is the one JSON form of a result, the ``--json`` output and the MCP structured result alike.

What a frontend hands a verb besides parameters (a progress callback, a stop signal, output streams)
is a request field too, marked with ``FRONTEND`` metadata: it has no PARAMS entry, and is never a parameter
of an MCP tool (the server declares each tool's parameters itself, from PARAMS).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs ~3 ms to import, and `send` imports this package
if TYPE_CHECKING:
    from typing import Any

# The metadata of a request field the frontend supplies (a callable, a stream), not a parameter of the
# verb: ``field(default=None, metadata=FRONTEND)``.
FRONTEND = {"frontend": True}


def parameters(request: Any) -> list[str]:
    """The names of a request class's parameters: its fields, less those the frontend supplies."""
    import dataclasses  # here: every verb module imports this package, and the fast send path none of them

    return [f.name for f in dataclasses.fields(request) if not f.metadata.get("frontend")]


def document(result: Any) -> dict[str, Any]:
    """A verb result as its JSON document (always with a warnings list)."""
    import dataclasses

    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        data: dict[str, Any] = dataclasses.asdict(result)
    else:
        data = dict(result)
    data.setdefault("warnings", [])
    return data
