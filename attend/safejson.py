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
    try:
        if not kw:
            value = _scanned(data)
            if value is not _OTHER:
                return value
        import json  # here, not above: a send that reads no JSON never pays for the module

        return json.loads(data, **kw)
    except RecursionError:
        raise TooDeep("JSON nested too deep to read") from None


_OTHER = object()  # what _scanned returns when json.loads must decide (and word the error)
_SPACE = " \t\n\r"
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


class _Reading:
    """What the C scanner asks of ``json.loads``'s decoder, with its defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


def _scanned(data: str | bytes | bytearray) -> Any:
    """The value ``json.loads(data)`` gives, read by the C scanner the json package itself uses, but
    without importing the package: its import brings ``re`` and ``enum`` (~3 ms, a tenth of a send
    process, which reads a client's record). Anything out of the ordinary (bytes not plain UTF-8, a
    byte-order mark, text that is not one JSON value) is ``_OTHER``: ``json.loads`` decides it, so the
    values and the errors are json's own (tests/test_outside_input.py holds the two equal)."""
    try:
        import _json
    except ImportError:
        return _OTHER
    if not isinstance(data, str):
        if data[:3] == b"\xef\xbb\xbf" or b"\x00" in data[:4]:
            return _OTHER  # a BOM or UTF-16/32: json.loads detects the encoding
        try:
            data = bytes(data).decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            return _OTHER
    if data.startswith("\ufeff"):
        return _OTHER
    start = len(data) - len(data.lstrip(_SPACE))
    try:
        value, end = _json.make_scanner(_Reading())(data, start)  # type: ignore[arg-type]  # duck-typed, as json.decoder passes its decoder
    except (StopIteration, ValueError):
        return _OTHER
    if data[end:].strip(_SPACE):
        return _OTHER  # extra data after the value
    return value


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
