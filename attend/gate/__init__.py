"""The gate's parts. ``attend/spool.py`` is the gate's one face: callers import ``Spool`` from there, and
nothing but that module imports these (an import-linter contract, pyproject.toml). ``Spool`` is composed
of one class per part; they share one spool root and one cache of folder handles.

- ``opening``: safe opening. ``Handles``, the base of every part: the root opened once and checked on
  its handle, the cache of top-level folder handles, every folder below opened ``O_DIRECTORY |
  O_NOFOLLOW`` from its parent's handle, reads of regular files only (``O_NOFOLLOW | O_NONBLOCK``),
  listings, the refusals (``RefusedEntry``), a full or read-only disk as one line (``NoSpaceError``,
  ``ReadOnlyError``), quarantine; ``Folder``, an open folder for sweeps; the low-level helpers
  (``_write_new``, ``_read_all``, ``_Handle``) the other parts use.
- ``maildir``: maildir records and folders. ``Maildir``: a room's records (``publish``, ``sync_records``,
  listings, stamps) and a session's or a human's maildir (the links of a send's fan-out, ``listing``,
  ``claim_all``, ``mark_seen``, held and declined deliveries, ``/clear`` moves); ``LateName``; the crash
  windows' test seam (``pause_point``).
- ``locks``: locks. ``Locks``: flock files made on first use and never unlinked (the delivery, show and
  named locks, the duplicate-run hold) and the byte-slot locks a live process holds as its evidence.
- ``state``: state files. ``State``: small files written whole (tmp + rename) or in place, appended
  lines, markers, exclusive creates, moves and removals, the bounded diagnostic log, and the one file
  handed to SQLite (the search index's).

Standard library only: the hot paths (a send, the empty turn-end drain) import the gate.
"""
