"""A holder's leases as the spool keeps them (``sessions/<sid>/leases``), and the reader that checks
the file field by field. Standard library only (``Record``, not dataclasses): the pre-tool hook's fast
path reads these."""

from __future__ import annotations

from attend import safejson
from attend.leases import globs
from attend.record import Record

MAX_FILE = 256 * 1024  # bytes of one holder's file
MAX_LEASES = 256  # leases one session holds at once
MAX_REASON = 200  # characters of a reason


class Lease(Record):
    root: str  # the project root, resolved
    glob: str  # relative to the root (globs.py)
    reason: str
    shared: bool
    since: float
    until: float | None = None  # None: as long as the holder lives

    @property
    def where(self) -> str:
        """The absolute glob: the root and the glob as one path, which leases of two roots compare by."""
        return f"{self.root.rstrip('/')}/{self.glob}"

    def covers(self, path: str) -> bool:
        rel = globs.relative(path, self.root)
        return rel is not None and globs.matches(self.glob, rel)


class Holding(Record):
    sid: str
    pid: int | None
    start: str | None
    name: str
    client: str | None
    leases: tuple[Lease, ...] = ()

    def document(self) -> bytes:
        return safejson.dumps(
            {
                "pid": self.pid,
                "start": self.start,
                "name": self.name,
                "client": self.client,
                "leases": [
                    {
                        "root": x.root,
                        "glob": x.glob,
                        "reason": x.reason,
                        "shared": x.shared,
                        "since": x.since,
                        "until": x.until,
                    }
                    for x in self.leases
                ],
            },
            indent=1,
        ).encode()


def _text(value: object, limit: int) -> str | None:
    return value if isinstance(value, str) and len(value) <= limit and "\0" not in value else None


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if number == number and abs(number) < 1e12 else None  # finite, and a plausible time


def parse(sid: str, data: bytes) -> Holding | None:
    """A holder's file, checked field by field; None when it is not one (a lease file is written by
    attend alone, so anything else there is ignored, never trusted)."""
    try:
        raw = safejson.loads(data)
    except ValueError:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("leases"), list):
        return None
    pid = raw.get("pid")
    pid = pid if isinstance(pid, int) and not isinstance(pid, bool) and 0 < pid < 1 << 31 else None
    start = _text(raw.get("start"), 32)
    name = _text(raw.get("name"), 128) or sid
    client = _text(raw.get("client"), 32)
    leases = []
    for item in raw["leases"][:MAX_LEASES]:
        if not isinstance(item, dict):
            continue
        root, glob = _text(item.get("root"), 4096), _text(item.get("glob"), globs.MAX_GLOB)
        since, until = _number(item.get("since")), item.get("until")
        if not root or not root.startswith("/") or not glob or since is None:
            continue
        end = _number(until) if until is not None else None
        if until is not None and end is None:
            continue
        reason = _text(item.get("reason"), MAX_REASON) or ""
        leases.append(Lease(root, glob, reason, item.get("shared") is True, since, end))
    return Holding(sid, pid, start if pid else None, name, client, tuple(leases))
