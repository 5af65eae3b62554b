"""whoami: who attend thinks the caller is, and how it decided."""

from __future__ import annotations

from dataclasses import dataclass, field

from attend.domain.sessions import sessions
from attend.domain.sessions.context import Context

DESCRIPTION = (
    "Show who attend resolves the caller to: session id, project, display name, the evidence that "
    "decided, and any offered id that was ignored."
)
EXAMPLES = (  # the end of `attend whoami --help` (CLI only)
    ("attend whoami", "who attend thinks you are, and how it knows"),
    ("attend whoami --machine", "three key=value lines"),
)
PARAMS: dict[str, str] = {}


@dataclass(frozen=True)
class WhoAmIRequest:
    """whoami takes no parameters."""


@dataclass
class WhoAmI:
    session_id: str
    kind: str
    origin_path: str
    resolved: bool
    resolved_by: str
    evidence: str  # e.g. "ancestry: claude pid 1234 (procStart 5678) record ~/.claude/sessions/1234.json"
    display: str
    enrolled: bool
    spool: str
    warnings: list[str] = field(default_factory=list)  # the identity notes: ids offered and ignored
    host: str | None = None  # the client whose session this is (claude, codex, gemini); None: the human


def run(ctx: Context, req: WhoAmIRequest) -> WhoAmI:
    who = ctx.who()
    return WhoAmI(
        session_id=who.id,
        kind=who.kind,
        origin_path=who.origin,
        resolved=who.resolved,
        resolved_by=who.resolved_by,
        evidence=who.evidence,
        display=sessions.display_name(ctx.spool, who),
        enrolled=who.is_agent and sessions.is_enrolled(ctx.spool, who.id),
        spool=str(ctx.spool.root),
        warnings=list(who.notes),
        host=who.host,
    )
