"""What every verb call needs: the spool and a way to resolve the caller, fresh on each call.

A context either holds an open spool (``Context.default()``, or ``Context(spool=…)``), or opens it on
first use of ``ctx.spool`` (``Context.for_env(env)``): install runs before a spool exists, doctor
diagnoses a broken one, and permissions never needs one, so those verbs read ``ctx.env`` alone.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from attend import identity
from attend.domain.sessions import sessions
from attend.errors import AbortedError, AttendError, HumanOnlyError, NotEnrolledError
from attend.identity import Identity
from attend.spool import Spool, default_root

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path  # not imported on the send path (~5 ms)

MESSAGE_LIMIT = 64 * 1024  # bytes; a larger message is refused
MESSAGE_BUDGET = 400  # characters agents are told to stay under; above it is a warning only

# Identity notes (an offered id that was ignored) this process has written to stderr: each once,
# however often it resolves (the MCP server resolves on every call); the CLI skips them in warnings.
REPORTED: set[str] = set()


def enrollment_probe(spool: Spool | None) -> identity.EnrollmentProbe:
    """What the authority rule asks of an enrolled session: its host process's pid namespace, its
    origin, and the host process it enrolled from."""

    def probe(sid: str) -> tuple[str | None, str, tuple[int, str] | None] | None:
        if spool is None or not sessions.is_enrolled(spool, sid):
            return None
        try:
            enrollment = sessions.read_enrollment(spool, sid)
        except (OSError, AttendError):  # a planted enrollment (a FIFO, a link) binds nothing
            return None
        if enrollment is None:
            return None
        pid, start = enrollment.claude_pid, enrollment.proc_start
        bound = (pid, str(start)) if isinstance(pid, int) and start is not None else None
        return enrollment.pid_ns, enrollment.origin, bound

    return probe


def report_notes(who: Identity) -> None:
    for note in who.notes:
        if note not in REPORTED:
            REPORTED.add(note)
            sys.stderr.write(f"attend: warning: {note}\n")


class Context:
    def __init__(
        self,
        spool: Spool | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        payload_sid: str | None = None,
        pid: int | None = None,
        root: Path | None = None,
    ) -> None:
        self._spool = spool
        self._root = root  # where a lazy context opens its spool; None: the default for env
        self.env: Mapping[str, str] = dict(os.environ) if env is None else env
        self.cwd = cwd
        self.payload_sid = payload_sid
        self.pid = pid
        self._confirmed: set[str] = set()  # human-only actions confirmed at the terminal, each asked once

    @classmethod
    def default(cls, root: Path | None = None) -> Context:
        """The process's own context, its spool opened now (a refused spool fails here); an absent one
        is made by the first write, so a refused command writes nothing."""
        return cls(spool=Spool.open(root, create=False))

    @classmethod
    def for_env(cls, env: Mapping[str, str] | None = None, root: Path | None = None, pid: int | None = None) -> Context:
        """A context whose spool is opened only when a verb first uses ``ctx.spool``."""
        return cls(env=env, pid=pid, root=root)

    @property
    def spool(self) -> Spool:
        """The spool, opened (and checked) on first use; a refusal raises here, each time it is asked."""
        if self._spool is None:
            self._spool = Spool.open(self.spool_root, create=False)
        return self._spool

    @property
    def spool_root(self) -> Path:
        """Where the spool is, without opening (or creating) it."""
        if self._spool is not None:
            return self._spool.root
        return self._root if self._root is not None else default_root(self.env)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(root={str(self.spool_root)!r}, cwd={self.cwd!r}, pid={self.pid!r})"

    def who(self) -> Identity:
        """The caller, resolved now (nothing is memoised across calls); an id offered and ignored
        is one stderr line."""
        who = identity.authority(
            claimed=self.payload_sid,
            env=self.env,
            pid=self.pid,
            cwd=self.cwd,
            enrollment=lambda sid: enrollment_probe(self.spool)(sid),
        )
        report_notes(who)
        return who

    def human(self, action: str, question: str | None = None) -> Identity:
        """The caller, who must be the human at a terminal, outside every agent session's process tree,
        and who confirms ``action`` (what is asked, in a few words; ``question``, what the terminal
        shows) by typing yes at that terminal (``/dev/tty``, never stdin): anything else raises
        HumanOnlyError, and a "no" raises AbortedError. Asked once per action and context."""
        who = identity.authority(env=self.env, pid=self.pid, cwd=self.cwd, human_only=action)
        if action in self._confirmed:
            return who
        from attend.hosts import kin

        answer = kin.confirm(question or f"attend: {action}: go on?")
        if answer is None:
            raise HumanOnlyError(f"{action} is for a human only, and needs one at a terminal: /dev/tty cannot open")
        if not answer:
            raise AbortedError(f"{action}: not confirmed at the terminal; nothing changed")
        self._confirmed.add(action)
        return who

    def confirmed(self, action: str) -> None:
        """Count ``action`` as confirmed by the human in a seat of the human's own rather than at a
        terminal: the page (``attend web``), whose confirmation only the browser holding the cookie of
        its one-time address can give. ``human`` still checks the caller (outside every agent session's
        process tree) and then asks no terminal."""
        self._confirmed.add(action)

    @property
    def sessions_dir(self) -> str:
        return identity.sessions_home(self.env)

    def sender(self) -> Identity:
        """The caller as a sender: a Claude session must be enrolled; a human always may send."""
        who = self.who()
        enrolled = not who.is_agent or sessions.is_enrolled(self.spool, who.id)
        if not enrolled and sessions.follow_clear(self.spool, who) is None:
            raise NotEnrolledError(
                f"this Claude session ({who.id}) is not enrolled, so it could not hear a reply; "
                "arm `attend run` under the Monitor tool, or `attend join <channel>`, then send again"
            )
        return who
