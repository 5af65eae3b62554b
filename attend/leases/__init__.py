"""Leases on files: who is editing what, for as long as the holder's session lives
(docs/architecture/leases.md).

- ``globs``: what a lease's glob covers, relative to the project root (pure; the table test pins it);
- ``tree``: the working tree itself: the project root, a path made absolute, the staged files, the
  pre-commit hook (it touches files outside the spool, so it never imports the gate);
- ``store``: the leases in the spool (``sessions/<sid>/leases``, through the gate), liveness, conflicts;
- ``fasthook``: the pre-tool hook's fast path, standard library only: an edit outside every lease of
  another session costs one listing and no output;
- ``check``: the rest of the hook (a holder found): the holder's line, warn or refuse; and the commit guard.

This package sits beside the conduits and setup: it reads the domain (liveness, names, config) and is
read by the verbs and the CLI's entry; nothing below it knows leases exist, except the layout's
``CARRIED_FILES``, which keeps a session's leases across a ``/clear``.
"""
