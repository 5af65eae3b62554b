"""Message ids by a unique prefix, as git takes a commit's: wherever a command takes a message id, any
prefix of one of at least ``MIN_PREFIX`` characters that no other id present shares is that id; and the
shortest such prefix is the short form a command may show.

Ids are the spool's unique names (``<seconds>.M<micros>P<pid>Q<n>R<hex>.<host>``, attend.layout). A
prefix is looked up in every room's listing (names only, never a read): a command a person types, never
a hot path (a full id is checked by its pattern alone and costs nothing here).
"""

from __future__ import annotations

from collections.abc import Iterable

from attend.errors import NotFoundError, UsageError
from attend.layout import NAME_RE
from attend.spool import Spool

MIN_PREFIX = 6
PREFIX_CHARS = frozenset("0123456789abcdefABCDEFMPQR.-" + "ghijklmnopqrstuvwxyzGHIJKLNOSTUVWXYZ")


def _could_start_an_id(text: str) -> bool:
    """An id starts with its second in ten digits, then a dot: a prefix that does not is no id's."""
    head, dot, rest = text.partition(".")
    return head.isdigit() and len(head) <= 10 and (not dot or len(head) == 10) and set(rest) <= PREFIX_CHARS


def short(msg_id: str) -> str:
    """The form a conduit shows an id in: the id up to the end of its microseconds
    (``<seconds>.M<micros>``, 18 characters of ~39), which ``resolve`` takes back. A process names its
    messages in strictly increasing microseconds, so two ids share it only when two processes named a
    message in the same microsecond; ``resolve`` then says which ids fit. Anything that is not an id
    is shown whole."""
    cut = msg_id.find("P", 11)
    return msg_id[:cut] if cut > 0 and NAME_RE.fullmatch(msg_id) else msg_id


def all_ids(spool: Spool) -> set[str]:
    """Every message id present in the spool's rooms."""
    out: set[str] = set()
    for room in spool.rooms():
        out.update(spool.room_names(room))
    return out


def resolve(spool: Spool, text: str, flag: str = "id") -> str:
    """``text`` as a full message id: itself when it is one, else the one id it is a unique prefix of."""
    if NAME_RE.fullmatch(text):
        return text
    if len(text) < MIN_PREFIX or not _could_start_an_id(text):
        raise UsageError(
            f"{flag} {text!r} is not a message id nor a prefix of one of at least {MIN_PREFIX} characters "
            "(attend inbox shows ids)"
        )
    found = sorted(i for i in all_ids(spool) if i.startswith(text))
    if not found:
        raise NotFoundError(f"no message id starts with {text!r} (attend inbox lists what is here)")
    if len(found) > 1:
        shown = ", ".join(found[:3]) + (", …" if len(found) > 3 else "")
        raise UsageError(f"{flag} {text!r} fits {len(found)} messages ({shown}); give more of the id")
    return found[0]


def shortest(ids: Iterable[str], among: set[str]) -> dict[str, str]:
    """Each id's short form: its shortest prefix (at least ``MIN_PREFIX`` characters) no other id of
    ``among`` shares, as git abbreviates a commit."""
    ordered = sorted(among)
    out: dict[str, str] = {}
    import bisect

    for i in ids:
        at = bisect.bisect_left(ordered, i)
        neighbours = [ordered[j] for j in (at - 1, at + 1) if 0 <= j < len(ordered) and ordered[j] != i]
        common = max((_common(i, n) for n in neighbours), default=0)
        out[i] = i[: max(MIN_PREFIX, common + 1)]
    return out


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
