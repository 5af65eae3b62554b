"""Search: find anything said in the spool (``attend search``; docs/architecture/search.md).

- ``query``: the query language, parsed here into a safe full-text expression (every term quoted) and
  filters; no user text ever reaches the engine unquoted, and a query that cannot be read is one line.
- ``index``: the index, a disposable copy of ``rooms/`` in an SQLite FTS5 file under the spool (opened by
  the gate), caught up at query time; deleted, truncated or corrupt, it is rebuilt, never repaired.
- ``snippet``: the piece of a body around what matched, the match marked.

Standard library only (``sqlite3``, ``re``, ``unicodedata``). Nothing on the send path, the drain or the
loop imports it: they never pay for the index.
"""
