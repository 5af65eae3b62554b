"""What every verb call needs: the spool and a way to resolve the caller, fresh on each call."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from attend import identity
from attend.domain import sessions
from attend.errors import NotEnrolledError
from attend.identity import Identity
from attend.spool import Spool

MESSAGE_LIMIT = 64 * 1024  # bytes; a larger message is refused
MESSAGE_BUDGET = 400  # characters agents are told to stay under; above it is a warning only


@dataclass
class Context:
    spool: Spool
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    cwd: str | None = None
    payload_sid: str | None = None
    pid: int | None = None

    @classmethod
    def default(cls, root: Path | None = None) -> Context:
        return cls(spool=Spool.open(root))

    def who(self) -> Identity:
        """The caller, resolved now (nothing is memoised across calls)."""
        return identity.resolve(
            payload_sid=self.payload_sid,
            env=self.env,
            pid=self.pid,
            cwd=self.cwd,
            is_enrolled=lambda sid: sessions.is_enrolled(self.spool, sid),
        )

    @property
    def sessions_dir(self) -> Path:
        return identity.claude_dir(self.env) / "sessions"

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
