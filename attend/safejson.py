"""JSON read from a file or the wire, so that no nesting can crash the reader.

Every file attend reads is writable by every session of the same user, and a peer (or a client) can
plant a value nested a thousand deep in two kilobytes. The standard library's decoder then raises
``RecursionError``, which is not a ``ValueError``: a reader that catches ``ValueError`` for "not
JSON" dies instead, and with it a sensor loop, or ``attend peers`` for every caller. ``loads``
turns that into the ``ValueError`` every reader already handles (one file skipped, the rest read).

``within(value, depth)`` is for the few readers that then walk the value recursively (the MCP
frame's checks): it measures without recursing.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class TooDeep(ValueError):
    """JSON nested deeper than the decoder (or the caller) follows."""


def loads(data: str | bytes | bytearray, **kw: Any) -> Any:
    """``json.loads`` (``kw`` passed on), but a value nested too deep to decode is a ``ValueError``
    (``TooDeep``), as any other text that is not JSON is."""
    import json  # here, not above: a send that reads no JSON never pays for the module (~1 ms)

    try:
        return json.loads(data, **kw)
    except RecursionError:
        raise TooDeep("JSON nested too deep to read") from None


def dumps(value: object, **kw: Any) -> str:
    """``json.dumps`` (``kw`` passed on), importing the module only when something is written."""
    import json

    return json.dumps(value, **kw)


def within(value: object, depth: int) -> bool:
    """Whether ``value``'s lists and objects nest at most ``depth`` levels (iterative: no recursion)."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            if level >= depth:
                return False
            stack.extend((v, level + 1) for v in item)
    return True


def text_field(obj: object, key: str, limit: int = 4096) -> str | None:
    """``obj[key]`` when ``obj`` is an object and the value is a string of at most ``limit``
    characters holding no NUL or other control character; else None. For the fields of what another
    program hands attend (a hook's payload, a client's record): a bad field is dropped, never used."""
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, str) or len(value) > limit or not value.isprintable():
        return None
    return value
