"""The gate: the only code that opens, lists, creates, links, renames or removes anything under the
spool root. Everything else names spool files by their parts (``"sessions", sid, "new"``), as
declared in ``attend.layout``, and asks ``Spool`` here. See docs/architecture/spool.md.

This module is the gate's one face: every caller imports ``Spool`` (and the gate's errors, ``Folder``,
``default_root``…) from here, and nothing else imports the parts. ``Spool`` is composed of them, each a
concern of its own in the package ``attend.gate`` (its ``__init__`` says what each part holds):

- ``attend/gate/opening.py``, safe opening: the root and the handle cache, every folder opened
  ``O_DIRECTORY | O_NOFOLLOW`` from its parent's handle, reads, refusals, ``Folder``;
- ``attend/gate/maildir.py``, maildir records and folders: publish, the links of a send, listings,
  claim, seen, held;
- ``attend/gate/locks.py``, locks: flock files and byte-slot locks;
- ``attend/gate/state.py``, state files: written whole or in place, markers, moves, removals, the log,
  the search index's SQLite file.

They share one handle cache (one ``Spool`` object), and a method is found on the class as it was when
the gate was one module: a send calls ``publish`` and ``_link_into`` directly, with no step between.

It holds by construction, not by care:
- The root is opened once and checked on its handle (ours, not writable by others). Every folder
  below it is opened relative to its parent's handle with ``O_DIRECTORY | O_NOFOLLOW``, and every
  operation happens relative to that handle (``dir_fd=``). A folder swapped for a symlink is never
  followed, not even one swapped after an earlier check: nothing trusts a path across calls.
- Reads open with ``O_NOFOLLOW | O_NONBLOCK`` and accept only a regular file (``fstat``), so a FIFO
  or a device planted in the spool never hangs a command; it is refused with a one-line error.
- A path part is one component: never empty, ``.``, ``..`` or holding a ``/``.

Invariants kept by the parts: a signal is written whole in ``tmp/`` and linked into ``new/``, never
overwriting; a send is durable once its record and the room's ``new/`` are fsynced; a name is never
linked twice into one maildir; a conduit claims with one rename (each listed where it is kept, in
attend/gate/maildir.py); folders are 0700 and files 0600 whatever the umask (attend/gate/opening.py).

Standard library only (the drain's fast path imports it): the delivery lock is a plain ``flock``,
what portalocker calls on Linux, so the two interoperate.
"""

from __future__ import annotations

import os

from attend import layout as L
from attend.gate.maildir import SYNC_THREADS, LateName, Maildir, pause_point
from attend.gate.opening import (
    DIR_MODE,
    FILE_MODE,
    REMOVE_RUN,
    REMOVE_THREADS,
    Entry,
    Folder,
    NoSpaceError,
    ReadOnlyError,
    RefusedEntry,
    check_same_device,
)
from attend.gate.state import State

TYPE_CHECKING = False  # not typing's: its import would cost the drain's fast path a millisecond
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "REMOVE_RUN",
    "REMOVE_THREADS",
    "SYNC_THREADS",
    "Entry",
    "Folder",
    "LateName",
    "NoSpaceError",
    "ReadOnlyError",
    "RefusedEntry",
    "Spool",
    "check_same_device",
    "default_root",
    "pause_point",
]


def default_root(env: Mapping[str, str] | None = None) -> Path:
    from pathlib import Path

    return Path(L.default_root(env))


class Spool(Maildir, State):
    """One spool root, opened once. Every path below it goes through here: handles and reads
    (``Handles``), rooms and maildirs (``Maildir``), locks (``Locks``), state files (``State``)."""

    @classmethod
    def open(cls, root: str | os.PathLike[str] | None = None, *, create: bool = True) -> Spool:
        """Open and check the spool, making it when absent. With ``create=False`` an absent root is made
        by the first write instead, so a command that only reads, or is refused, leaves the filesystem
        as it found it (the frontends open it so)."""
        spool = cls(L.default_root() if root is None else root)
        if create or os.path.lexists(spool._r):
            spool._ready()
        else:
            spool._lazy = True
        return spool
