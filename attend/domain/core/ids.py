"""Message ids by a unique prefix, as git takes a commit's: wherever a command takes a message id, any
prefix of one of at least ``MIN_PREFIX`` characters that no other id present shares is that id; and the
shortest such prefix is the short form a command may show.

Ids are the spool's unique names (``<seconds>.M<micros>P<pid>Q<n>R<hex>.<host>``, attend.layout). A
prefix is looked up in every room's listing (names only, never a read): a command a person types, never
a hot path (a full id is checked by its pattern alone and costs nothing here).

The send line and the conduits cannot pay for that listing (hot paths), so they show ``sent_form``: the id up to
its microsecond, which names one message unless two were sent in the same microsecond. An id starts with
its time, so no later message can come to share that prefix; should two ever share it, ``resolve``
says so and asks for more of the id.
"""

from __future__ import annotations

from attend.errors import AmbiguousError, NotFoundError, UsageError
from attend.layout import NAME_RE

TYPE_CHECKING = False  # the send path imports this module for sent_form: no typing there; mypy reads it as true
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from attend.spool import Spool

MIN_PREFIX = 6
SENT_FORM = len("1796557827.M123456")  # seconds, ".M", microseconds
DENSE = 5000  # ids sharing the first MIN_PREFIX characters past which short_forms does not sort them
PREFIX_CHARS = frozenset("0123456789abcdefABCDEFMPQR.-" + "ghijklmnopqrstuvwxyzGHIJKLNOSTUVWXYZ")


def _could_start_an_id(text: str) -> bool:
    """An id starts with its second in ten digits, then a dot: a prefix that does not is no id's."""
    head, dot, rest = text.partition(".")
    return head.isdigit() and len(head) <= 10 and (not dot or len(head) == 10) and set(rest) <= PREFIX_CHARS


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
    # A set: a record linked into several rooms is one message.
    found = sorted({n for room in spool.rooms() for n in spool.room_names(room) if n.startswith(text)})
    if not found:
        raise NotFoundError(f"no message id starts with {text!r} (attend inbox lists what is here)")
    if len(found) > 1:
        shown = ", ".join(found[:3]) + (", …" if len(found) > 3 else "")
        raise AmbiguousError(f"{flag} {text!r} fits {len(found)} messages ({shown}); give more of the id")
    return found[0]


def lookup(spool: Spool, text: str, flag: str = "id") -> str | None:
    """``text`` as a full message id when it is one or a prefix of one (``resolve``'s rule and errors), or
    None when it cannot be an id's prefix at all (a name, say): for an argument that takes either."""
    if NAME_RE.fullmatch(text):
        return text
    if len(text) < MIN_PREFIX or not _could_start_an_id(text):
        return None
    return resolve(spool, text, flag)


def short_forms(spool: Spool, wanted: Iterable[str], listed: Mapping[str, list[str]] | None = None) -> dict[str, str]:
    """Each of ``wanted``'s short form among every id present: only names that share an id's first
    ``MIN_PREFIX`` characters can lengthen it, so only those are kept from the (unsorted) listing. Where
    more than ``DENSE`` do (that many messages within the ~3 hours 6 digits of a second span), sorting
    them costs more than the listing it shortens: each id is shown as the send line shows it.
    ``listed``: rooms the caller has listed already (names as listed), not listed again."""
    wanted = list(wanted)
    heads = {i[:MIN_PREFIX] for i in wanted}
    known = listed or {}
    among = set(wanted)
    for room in spool.rooms():
        among.update(n for n in (known[room] if room in known else spool.room_entries(room)) if n[:MIN_PREFIX] in heads)
        if len(among) > DENSE:  # no need to read further
            return {i: sent_form(i) for i in wanted}
    return shortest(wanted, among)


def sent_form(msg_id: str) -> str:
    """The short form the send line and the conduits show without a listing: the id up to its
    microsecond (see above), which ``resolve`` takes back.
    By character, not the id's pattern: the send path compiles no regular expression."""
    head = msg_id[:SENT_FORM]
    return head if len(msg_id) > SENT_FORM and msg_id[SENT_FORM] == "P" and head[10:12] == ".M" else msg_id


def shortest(ids: Iterable[str], among: set[str]) -> dict[str, str]:
    """Each id's short form: its shortest prefix (at least ``MIN_PREFIX`` characters) no other id of
    ``among`` shares, as git abbreviates a commit."""
    import bisect

    ordered = sorted(among)
    out: dict[str, str] = {}

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
