"""tune: derive the timing keys (the governors' cooldowns, the peer activity window) from the user's own
turn cadence in their transcripts, with the evidence; ``--apply`` sets only those keys in the user's
config file, keeping its comments and order, atomically and under a lock."""

from __future__ import annotations

from dataclasses import dataclass, field

from attend import identity
from attend.domain.sessions import transcript
from attend.domain.sessions.context import Context
from attend.domain.settings import config, tuning
from attend.errors import AttendError

DESCRIPTION = (
    "Derive the timing keys (the governors' cooldowns and the peer activity window) from your own turn "
    "cadence in your Claude Code transcripts, and print each with its evidence (p50, p90, turns read); "
    "--apply sets only those keys in your config file, keeping its comments and order."
)
PARAMS = {"apply": "Write the proposed values into the user config file."}
EXAMPLES = (  # the end of `attend tune --help` (CLI only)
    ("attend tune", "what your cadence suggests, and why"),
    ("attend tune --apply", "set those keys in ~/.config/attend/config.yaml"),
)


@dataclass(frozen=True)
class TuneRequest:
    apply: bool = False


@dataclass
class TuneResult:
    transcripts: int
    turns: int
    proposals: list[tuning.Proposal]
    applied: bool
    path: str  # the user config file
    message: str
    warnings: list[str] = field(default_factory=list)


def run(ctx: Context, req: TuneRequest) -> TuneResult:
    files = transcript.all_transcripts(ctx.env)
    gaps = [g for f in files for g in transcript.turn_gaps(f)]
    path = config.user_path(ctx.env)
    cfg = config.load(ctx.env, announce=True)
    current = {k: float(cfg.get(k)) for k in ("governor.event.cooldown", "governor.message.cooldown")}
    current["peers.activity_window"] = float(cfg.get("peers.activity_window"))
    proposals = tuning.propose(gaps, current)
    where = identity.claude_dir(ctx.env) / "projects"
    if not proposals:
        what = "no transcripts" if not files else f"only {len(gaps)} turn(s) in {len(files)} transcript(s)"
        return TuneResult(len(files), len(gaps), [], False, str(path), f"{what} under {where}; nothing to tune")
    if not req.apply:
        return TuneResult(len(files), len(gaps), proposals, False, str(path), "attend tune --apply sets these")
    try:
        text = config.read_user_text(ctx.env)
    except (OSError, UnicodeDecodeError) as e:
        raise AttendError(f"cannot read {path}: {e}") from None
    if text is None:
        text = config.default_text()  # none yet: the commented defaults, with these keys set
    try:
        edited = tuning.set_values(text, {p.key: p.value for p in proposals})
    except tuning.EditError as e:
        raise AttendError(f"{path}: {e}; nothing changed") from None
    check = config.parse(edited, str(path))
    if any(check.get(p.key) != p.value for p in proposals) or len(check.problems) > len(cfg.problems):
        raise AttendError(f"{path}: the edit would not read back as proposed; nothing changed (edit it by hand)")
    config.write_atomically(path, edited)
    return TuneResult(len(files), len(gaps), proposals, True, str(path), f"set {len(proposals)} key(s) in {path}")
