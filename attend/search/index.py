"""The search index: a disposable copy of ``rooms/`` in an SQLite FTS5 file, ``index/search.sqlite``.

The spool stays the record. The index holds, for each message, its name, its sender and its thread's root, the
rooms it is linked in, and the words of its body in a contentless full-text table (no bodies: results
are read from the records, so the index stays smaller than the text it covers).

Catch-up happens at query time, by whoever searches, never on the send path, the drain or the loop: each
room's ``new/`` is stat'ed and only a room whose folder changed since it was indexed is listed. Of a
listed room, the names after the last one indexed are added; when the count of the names up to it no
longer matches what the index holds (retention or a person removed records, a record linked late), the
room is reconciled name by name. A room gone from the spool leaves the index with its messages. So a
removal is noticed by the next search, whoever removed it, and a removed message is never found again.

The full-text table keeps no text, so a removed message's words stay in it, unreachable (every match
is joined with the message table), until they are more than a quarter of it: the next search then
rebuilds the index from the spool. Deleted, truncated, corrupt, of another schema or unreadable, the
file is made afresh and rebuilt, never repaired.

Message rows are numbered densely (the full-text table stores each row id as a delta from the last: a
sparse id costs bytes in every posting). Each row keeps a stamp, ``h``: the name's microsecond time
shifted left 12 bits, with 12 bits of the name's random part below; it is indexed, so a name is found by
its stamp, ``since:`` is a range of stamps, newest-first is the stamp index read backwards, and recency
is read off it.
"""

from __future__ import annotations

# The package's C module, whose classes ``sqlite3`` re-exports: the package itself imports datetime and
# registers adapters no query here uses (~2 ms of a 12 ms interpreter start; docs/benchmarks.md).
import _sqlite3 as sqlite3
import time

from attend.errors import AttendError
from attend.layout import INDEX, NAME_RE, NEW, ROOMS, SEARCH_DB, name_time
from attend.record import Record
from attend.search import query as q
from attend.spool import Folder, Spool

SCHEMA = 2  # PRAGMA user_version of the index this code writes; any other is rebuilt
RACY = 2.0  # seconds: a folder changed this recently may change again within its mtime's tick
WEEK_US = 7 * 86400 * 1_000_000
DEAD_SHARE = 4  # rebuild once the removed rows are more than 1/DEAD_SHARE of the live ones
DEAD_FLOOR = 64
READ_LIMIT = 1 << 20
CANDIDATES = 500  # the newest matches a query ranks
CORRUPT = frozenset({10, 11, 26})  # SQLITE_IOERR (a short read of a truncated file), _CORRUPT, _NOTADB
# What is no fault of the file (SQLITE_PERM, _BUSY, _LOCKED, _NOMEM, _READONLY, _FULL, _CANTOPEN): reported,
# never a reason to rebuild. Any other error while opening or catching up (a table or column missing from
# a file some other version wrote) makes the file afresh.
NOT_THE_FILE = frozenset({3, 5, 6, 7, 8, 13, 14})

TABLES = """
CREATE TABLE room(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, stamp INTEGER NOT NULL,
                  last TEXT NOT NULL, n INTEGER NOT NULL);
CREATE TABLE who(id INTEGER PRIMARY KEY, from_id TEXT NOT NULL, sender TEXT NOT NULL, UNIQUE(from_id, sender));
CREATE TABLE msg(id INTEGER PRIMARY KEY, h INTEGER NOT NULL, tail TEXT NOT NULL, who INTEGER NOT NULL, thread INTEGER);
CREATE INDEX msg_h ON msg(h);
CREATE INDEX msg_thread ON msg(thread) WHERE thread IS NOT NULL;
CREATE TABLE at(msg INTEGER NOT NULL, room INTEGER NOT NULL, PRIMARY KEY(msg, room)) WITHOUT ROWID;
CREATE TABLE meta(k TEXT PRIMARY KEY, v INTEGER NOT NULL) WITHOUT ROWID;
CREATE VIRTUAL TABLE fts USING fts5(body, ids, content='', tokenize='unicode61 remove_diacritics 2');
"""


class IndexError_(AttendError):
    """The index could not be used (not corrupt: locked past the timeout, the disk full)."""

    code = "index"


class Hit(Record):
    name: str
    room: str
    sender: str
    from_id: str


class Filters:
    """What the caller may see and asked for, in the index's terms."""

    def __init__(self, me: str | None = None, senders: tuple[str, ...] = ()) -> None:
        self.rooms: list[str] | None = None  # None: every room (the human)
        self.me = me  # the caller's own messages are visible wherever they are
        self.within: list[str] | None = None  # room: filters, already checked to be visible
        self.senders = senders
        self.floor_us = 0  # since: (microseconds)
        self.thread: str | None = None  # re: (a message name)


class CatchUp:
    def __init__(self, rebuilt: bool = False) -> None:
        self.added = 0
        self.removed = 0
        self.rooms = 0  # rooms listed (changed since the last search)
        self.rebuilt = rebuilt
        self.skipped: list[str] = []

    def __repr__(self) -> str:
        return f"CatchUp(added={self.added}, removed={self.removed}, rooms={self.rooms}, rebuilt={self.rebuilt})"


def name_us(name: str) -> int:
    return int(name[:10]) * 1_000_000 + int(name[12:18])


TAIL = 18  # a name's first 18 characters are its time, which its stamp holds: the row keeps the rest


def _name(h: int, tail: str) -> str:
    sec, usec = divmod(h >> 12, 1_000_000)
    return f"{sec:010d}.M{usec:06d}{tail}"


def _stamp(name: str) -> int:
    r = name.index("R", name.index("Q"))
    return (name_us(name) << 12) | (int(name[r + 1 : r + 9], 16) & 0xFFF)


class Index:
    """The index of one spool. ``connect`` readies it; ``catch_up`` brings it level with the rooms; ``search``."""

    def __init__(self, spool: Spool) -> None:
        self.spool = spool
        self.db: sqlite3.Connection | None = None
        self._who: dict[tuple[str, str], int] = {}

    # ------------------------------------------------------------------ opening

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    def connect(self, fresh: bool = False) -> sqlite3.Connection:
        self.close()
        db = self.spool.disposable_database(INDEX, SEARCH_DB, fresh=fresh)
        try:
            # Disposable: a crash mid-write can leave a corrupt file, which the next search rebuilds.
            db.execute("PRAGMA journal_mode=MEMORY")
            db.execute("PRAGMA synchronous=OFF")
            db.execute("PRAGMA auto_vacuum=FULL")  # takes effect on a new file only: freed pages go back
            if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA:
                db.execute("BEGIN IMMEDIATE")
                version = db.execute("PRAGMA user_version").fetchone()[0]  # another may have made it meanwhile
                if version == 0 and db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
                    for statement in TABLES.split(";"):
                        if statement.strip():
                            db.execute(statement)
                    db.execute(f"PRAGMA user_version={SCHEMA}")
                    version = SCHEMA
                db.execute("COMMIT")
                if version != SCHEMA:  # another schema, or a file that is no index: made afresh
                    db.close()
                    if fresh:
                        raise IndexError_("the search index could not be made afresh")
                    return self.connect(fresh=True)
        except BaseException:
            db.close()
            raise
        self.db = db
        self._who = {}
        return db

    def ensure(self) -> CatchUp:
        """Open (or make) the index and catch it up; a corrupt file is made afresh and rebuilt."""
        for attempt in (0, 1):
            try:
                if self.db is None:
                    self.connect(fresh=attempt == 1)
                return self.catch_up(rebuilt=attempt == 1)
            except sqlite3.DatabaseError as e:
                self.close()
                if attempt == 1 or (getattr(e, "sqlite_errorcode", 1) & 0xFF) in NOT_THE_FILE:
                    raise IndexError_(f"the search index cannot be used: {e}") from None
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ catching up

    def stamps(self) -> dict[str, int]:
        """Each room's new/ folder's mtime (ns); 0 when absent or changed too recently to be trusted."""
        now_ns = time.time_ns()
        return {room: stamp if now_ns - stamp > RACY * 1e9 else 0 for room, stamp in self.spool.room_stamps().items()}

    def catch_up(self, rebuilt: bool = False) -> CatchUp:
        db = self._db()
        report = CatchUp(rebuilt=rebuilt)
        stamps = self.stamps()
        known = {name: (rid, stamp) for rid, name, stamp in db.execute("SELECT id, name, stamp FROM room")}
        if all(known.get(r, (0, -1))[1] == s != 0 for r, s in stamps.items()) and set(known) <= set(stamps):
            return report
        db.execute("BEGIN IMMEDIATE")
        try:
            rows = db.execute("SELECT id, name, stamp, last, n FROM room").fetchall()
            known_rows = {name: (rid, stamp, last, n) for rid, name, stamp, last, n in rows}
            for name, (rid, *_rest) in known_rows.items():
                if name not in stamps:
                    report.removed += self._drop_room(rid)
            pending: list[tuple[str, int, str]] = []
            listed: list[tuple[int, int, list[str]]] = []
            for room, stamp in stamps.items():
                row = known_rows.get(room)
                if row is not None and row[1] == stamp != 0:
                    continue
                report.rooms += 1
                rid, names, add = self._plan_room(room, row, report)
                pending += [(name, rid, room) for name in add]
                listed.append((rid, stamp, names))
            # Every room's new names at once, oldest first: row ids follow send order.
            pending.sort()
            vanished = self._index_all(pending, report, fresh=not known_rows)
            for rid, stamp, names in listed:
                kept = [n for n in names if (rid, n) not in vanished] if vanished else names
                db.execute(
                    "UPDATE room SET stamp = ?, last = ?, n = ? WHERE id = ?",
                    (stamp, max(kept, default=""), len(kept), rid),
                )
            if self._dead() > max(DEAD_FLOOR, self._live() // DEAD_SHARE):
                db.execute("COMMIT")
                return self._rebuild()
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return report

    def _plan_room(
        self, room: str, row: tuple[int, int, str, int] | None, report: CatchUp
    ) -> tuple[int, list[str], list[str]]:
        """List a room that changed: (its id, its names, the names to add); what left it leaves the index."""
        db = self._db()
        names = [n for n in self.spool.room_entries(room) if NAME_RE.fullmatch(n)]
        if row is None:
            rid = db.execute("INSERT INTO room(name, stamp, last, n) VALUES (?, 0, '', 0)", (room,)).lastrowid
            assert rid is not None
            return rid, names, names
        rid, _, last, n = row
        older = [x for x in names if x <= last]
        add = [x for x in names if x > last]
        if len(older) != n:  # removed, or linked late: reconciled name by name
            indexed = dict(
                (_name(h, tail), mid)
                for h, tail, mid in db.execute(
                    "SELECT m.h, m.tail, m.id FROM at JOIN msg m ON m.id = at.msg WHERE at.room = ?", (rid,)
                )
            )
            present = set(older)
            for name, mid in indexed.items():
                if name not in present:
                    report.removed += self._unlink(mid, rid)
            add += [x for x in older if x not in indexed]
        return rid, names, add

    def _index_all(self, pending: list[tuple[str, int, str]], report: CatchUp, fresh: bool) -> set[tuple[int, str]]:
        """Read and index each (name, room id, room), in batches; the (room id, name) pairs gone meanwhile."""
        from attend.domain.core import envelope  # only a search that has records to index reads them

        db = self._db()
        vanished: set[tuple[int, str]] = set()
        folders: dict[str, Folder] = {}
        seen: dict[str, int] = {}
        row = db.execute("SELECT v FROM meta WHERE k = 'next'").fetchone()
        next_id = 1 if row is None else int(row[0])
        msgs: list[tuple[int, int, str, int, int | None]] = []
        texts: list[tuple[int, str, str]] = []
        ats: list[tuple[int, int]] = []

        def flush() -> None:
            db.executemany("INSERT INTO msg(id, h, tail, who, thread) VALUES (?, ?, ?, ?, ?)", msgs)
            db.executemany("INSERT INTO fts(rowid, body, ids) VALUES (?, ?, ?)", texts)
            db.executemany("INSERT OR IGNORE INTO at(msg, room) VALUES (?, ?)", ats)
            msgs.clear()
            texts.clear()
            ats.clear()

        try:
            for name, rid, room in pending:
                mid = seen.get(name)
                if mid is None and not fresh:
                    mid = self._find(name)
                if mid is None:
                    folder = folders.get(room)
                    if folder is None:
                        folder = folders[room] = self.spool.folder(ROOMS, room, NEW)
                    try:
                        sig = envelope.parse(folder.read(name, READ_LIMIT))
                    except FileNotFoundError:
                        vanished.add((rid, name))
                        continue
                    except (OSError, envelope.EnvelopeError) as e:
                        report.skipped.append(f"{room}/{name}: {e}")  # counted, so not read again until it changes
                        continue
                    mid = seen[name] = next_id
                    next_id += 1  # never reused: the full-text table may still hold a removed row's words
                    who = self._who_id(sig.from_id, sig.sender)
                    root = sig.ancestors[0] if sig.ancestors else sig.re
                    thread = _stamp(root) if root and NAME_RE.fullmatch(root) else None
                    msgs.append((mid, _stamp(name), name[TAIL:], who, thread))
                    texts.append((mid, sig.body, " ".join(q.identifiers(sig.body))))
                    report.added += 1
                ats.append((mid, rid))
                if len(msgs) >= 2000:
                    flush()
            flush()
        finally:
            for folder in folders.values():
                folder.close()
        db.execute("INSERT INTO meta(k, v) VALUES ('next', ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v", (next_id,))
        return vanished

    def _find(self, name: str) -> int | None:
        row = self._db().execute("SELECT id FROM msg WHERE h = ? AND tail = ?", (_stamp(name), name[TAIL:])).fetchone()
        return None if row is None else int(row[0])

    def _who_id(self, from_id: str, sender: str) -> int:
        if not self._who:
            self._who = {(f, s): i for i, f, s in self._db().execute("SELECT id, from_id, sender FROM who")}
        key = (from_id, sender)
        wid = self._who.get(key)
        if wid is None:
            wid = self._db().execute("INSERT INTO who(from_id, sender) VALUES (?, ?)", key).lastrowid
            assert wid is not None
            self._who[key] = wid
        return wid

    def _unlink(self, mid: int, rid: int) -> int:
        """The message leaves the room; and the index, when no other room holds it. 1 when it left the index."""
        db = self._db()
        db.execute("DELETE FROM at WHERE msg = ? AND room = ?", (mid, rid))
        if db.execute("SELECT 1 FROM at WHERE msg = ? LIMIT 1", (mid,)).fetchone() is None:
            db.execute("DELETE FROM msg WHERE id = ?", (mid,))
            db.execute("INSERT INTO meta(k, v) VALUES ('dead', 1) ON CONFLICT(k) DO UPDATE SET v = v + 1")
            return 1
        return 0

    def _drop_room(self, rid: int) -> int:
        db = self._db()
        gone = 0
        for (mid,) in db.execute("SELECT msg FROM at WHERE room = ?", (rid,)).fetchall():
            gone += self._unlink(mid, rid)
        db.execute("DELETE FROM room WHERE id = ?", (rid,))
        return gone

    def _dead(self) -> int:
        row = self._db().execute("SELECT v FROM meta WHERE k = 'dead'").fetchone()
        return 0 if row is None else int(row[0])

    def _live(self) -> int:
        return int(self._db().execute("SELECT count(*) FROM msg").fetchone()[0])

    def _rebuild(self) -> CatchUp:
        db = self.connect(fresh=True)
        # No merging while the whole spool goes in (each merge rewrites what the last one wrote), then
        # one merge into one segment: smaller and faster to search. Later catch-ups merge as usual.
        db.execute("INSERT INTO fts(fts, rank) VALUES ('automerge', 0)")
        report = self.catch_up(rebuilt=True)
        db.execute("INSERT INTO fts(fts) VALUES ('optimize')")
        db.execute("INSERT INTO fts(fts, rank) VALUES ('automerge', 4)")
        return report

    def rebuild(self) -> CatchUp:
        """Make the index afresh from the spool (a full rebuild; the benchmark times it)."""
        return self._rebuild()

    def _db(self) -> sqlite3.Connection:
        if self.db is None:
            raise IndexError_("the search index is not open")
        return self.db

    # ------------------------------------------------------------------ searching

    def search(self, query: q.Query, filters: Filters, limit: int, now: float | None = None) -> list[Hit]:
        db = self._db()
        now_us = int((time.time() if now is None else now) * 1_000_000)
        where: list[str] = []
        args: list[object] = []
        visible = filters.rooms
        if visible is not None or filters.within is not None:
            ids = dict(db.execute("SELECT name, id FROM room"))  # rooms by number: a row's test is a key lookup
        # Tested on the row id alone (KEY: the full-text table's when it is searched), so a row the caller
        # may not see is passed over before its message row is read: a session's search walks every match.
        if visible is not None:
            clause = _in_rooms([ids[r] for r in visible if r in ids])
            if filters.me is not None:
                mine = [i for (i,) in db.execute("SELECT id FROM who WHERE from_id = ?", (filters.me,))]
                clause = f"({clause} OR KEY IN (SELECT id FROM msg WHERE who IN ({_numbers(mine)})))"
            where.append(clause)
        if filters.within is not None:
            where.append(_in_rooms([ids[r] for r in filters.within if r in ids]))
        if filters.senders:
            # Senders by number too (the who table is small: one row per sender and label).
            who: set[int] = set()
            for sender in filters.senders:
                who.update(
                    i
                    for (i,) in db.execute(
                        "SELECT id FROM who WHERE from_id = ? COLLATE NOCASE OR sender LIKE ? ESCAPE '\\'",
                        (sender, _like_prefix(sender)),
                    )
                )
            where.append(f"m.who IN ({_numbers(sorted(who))})")
        if filters.floor_us:
            where.append("m.h >= ?")
            args.append(filters.floor_us << 12)
        if filters.thread is not None:
            root = _stamp(filters.thread)
            mid = self._find(filters.thread)
            if mid is not None:
                row = db.execute("SELECT thread FROM msg WHERE id = ?", (mid,)).fetchone()
                root = row[0] or root
            where.append("(m.thread = ? OR m.h = ?)")
            args += [root, root]
        excluded = query.excluded()
        match = query.expression()
        # Of the (at most ``limit``) results only: the room to show (one the caller may see first), the sender.
        room_of = "(SELECT r.name FROM at JOIN room r ON r.id = at.room WHERE at.msg = c.id"
        if visible is not None:
            room_of += f" ORDER BY r.name IN ({','.join('?' * len(visible))}) DESC"
        room_of += " LIMIT 1)"
        room_args: list[object] = list(visible) if visible is not None else []
        outer = f"SELECT c.h, c.tail, {room_of}, w.sender, w.from_id FROM ("
        after = ") AS c JOIN who w ON w.id = c.who"
        if match is not None:
            # The newest CANDIDATES matches (the full-text table walks its row ids backwards, and row ids
            # follow send order), then ranked: bm25 with recency. A common word costs no more than a rare one.
            sql = (
                outer + "SELECT m.id AS id, m.h AS h, m.tail AS tail, m.who AS who,"
                " bm25(fts) / (1.0 + (? - (m.h >> 12)) * 1.0 / ?) AS score"
                " FROM fts JOIN msg m ON m.id = fts.rowid WHERE fts MATCH ?"
                + "".join(f" AND {c.replace('KEY', 'fts.rowid')}" for c in where)
                + " ORDER BY fts.rowid DESC LIMIT ?"
                + after
                + " ORDER BY c.score LIMIT ?"
            )
            params = [*room_args, now_us, WEEK_US, match, *args, CANDIDATES, limit]
        else:
            if excluded is not None:
                where.append("m.id NOT IN (SELECT rowid FROM fts WHERE fts MATCH ?)")
                args.append(excluded)
            sql = (
                outer
                + "SELECT m.id AS id, m.h AS h, m.tail AS tail, m.who AS who FROM msg m"
                + (" WHERE " + " AND ".join(c.replace("KEY", "m.id") for c in where) if where else "")
                + " ORDER BY m.h DESC LIMIT ?"
                + after
                + " ORDER BY c.h DESC"
            )
            params = [*room_args, *args, limit]
        try:
            rows = db.execute(sql, params).fetchall()
        except sqlite3.OperationalError as e:
            if corrupt(e):
                raise
            # Never user text as syntax (query.py quotes every term); should the engine still refuse, one line.
            raise q.QueryError(f"cannot search for that: {e}") from None
        return [Hit(_name(h, tail), room or "", sender, from_id) for h, tail, room, sender, from_id in rows]

    def forget(self, name: str) -> None:
        """A result whose record is gone (removed since the last catch-up): out of the index now."""
        db = self._db()
        mid = self._find(name)
        if mid is None:
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            for (rid,) in db.execute("SELECT room FROM at WHERE msg = ?", (mid,)).fetchall():
                self._unlink(mid, rid)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def counts(self) -> dict[str, int]:
        """Messages, rooms and removed rows the index holds (tests and the benchmark read it)."""
        db = self._db()
        return {
            "messages": self._live(),
            "rooms": int(db.execute("SELECT count(*) FROM room").fetchone()[0]),
            "dead": self._dead(),
        }


def corrupt(e: sqlite3.Error) -> bool:
    code = getattr(e, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in CORRUPT:
        return True
    text = str(e)
    return "malformed" in text or "not a database" in text or "no such table" in text


def _numbers(ids: list[int]) -> str:
    """Numbers the index gave rooms or senders, for an IN list (never user text)."""
    return ",".join(str(int(i)) for i in ids)


def _in_rooms(ids: list[int]) -> str:
    """The test that a message is in one of these rooms."""
    return f"EXISTS (SELECT 1 FROM at WHERE at.msg = KEY AND at.room IN ({_numbers(ids)}))"


def _like_prefix(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def since_us(at: float) -> int:
    return int(at * 1_000_000)


__all__ = ["CatchUp", "Filters", "Hit", "Index", "IndexError_", "corrupt", "name_time", "since_us"]
