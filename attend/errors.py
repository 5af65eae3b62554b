"""One error family. The core raises; each frontend maps these to an exit code or isError in one place.

Every message is one line that says what is wrong and what to do next.
"""

from __future__ import annotations


class AttendError(Exception):
    """A failure reported to the user (exit 1)."""

    exit_code = 1
    code = "failure"  # the ``error.code`` of a --json error document


class UsageError(AttendError):
    """Bad input from the caller: a flag, a name, a message (exit 2)."""

    exit_code = 2
    code = "usage"


class SpoolError(AttendError):
    """The spool is unusable: foreign-owned, writable by others, a planted symlink, cross-device."""

    code = "spool"


class IdentityError(AttendError):
    """The caller's identity cannot be resolved the way the verb needs."""

    code = "identity"


class HumanOnlyError(IdentityError):
    """An action only a human may take, asked from an agent session's process tree."""

    code = "human_only"


class AbortedError(AttendError):
    """The person asked at the terminal said no: nothing was changed (exit 1)."""

    code = "aborted"


class NotASessionError(UsageError):
    """A verb that serves an agent session was run by someone who is not one (a human at a terminal):
    exit 2, like any other use of a command where it does not apply, whichever verb it was."""

    code = "not_a_session"


class NotEnrolledError(AttendError):
    """A Claude session that is not enrolled tried to act as a sender."""

    code = "not_enrolled"


class NotFoundError(AttendError):
    """A named message, channel, session or subscription does not exist."""

    code = "not_found"


class AmbiguousError(AttendError):
    """A short reference (a prefix of a message id) fits more than one thing: the spool's content, not
    the argument's form, makes it fail, so it exits 1 as a lookup that finds nothing does."""

    code = "ambiguous"
