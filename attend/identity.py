"""The authority rule: who is calling, and so on whose behalf it may act (``authority``).

Every entry point asks it, fresh on every call (docs/architecture/sessions.md, "The authority rule"):
1. the ancestry decides: each host (attend/hosts) finds its session among the caller's ancestors by
   live evidence kept where the host's own process keeps it, never where the caller's environment
   points; the nearest one that stands wins;
2. a hook payload's ``session_id`` or an environment's session id that disagrees with the ancestry is
   ignored, with a note; neither makes an identity by itself. A hook acts only for the session that
   runs it (``hook=True``);
3. with no session in the ancestry, an environment's id B is accepted only under the sandbox rule: B
   is enrolled, and the caller's pid namespace differs from the one B's host process runs in (as
   recorded when B enrolled through its ancestry): a client's Bash sandbox, where the walk ends at the
   namespace's pid 1;
4. otherwise the human, ``$USER`` whatever the terminal, but never while the caller, an ancestor or
   the namespace's first process runs inside a host. What only a human may do asks ``human_only``.

The walk reads /proc directly on Linux (a few reads per ancestor, and no psutil import on the hot
paths); psutil is the portable fallback where /proc is absent.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping

from attend.errors import HumanOnlyError, IdentityError
from attend.hosts import DEFAULT as DEFAULT_HOST
from attend.hosts import HOSTS
from attend.hosts.base import MAX_HOPS as MAX_HOPS
from attend.hosts.base import Found, Host, Parent, Procs, adopted, ancestry, environ_via, terminal
from attend.hosts.base import SessionRecord as SessionRecord
from attend.hosts.base import environ_of as environ_of
from attend.hosts.base import live_records as live_records
from attend.hosts.base import parent_pid as parent_pid
from attend.hosts.base import pid_alive as pid_alive
from attend.hosts.base import pid_namespace as pid_namespace
from attend.hosts.base import proc_start as proc_start
from attend.hosts.base import read_record as read_record
from attend.hosts.base import record_from as record_from
from attend.hosts.base import record_is_live as record_is_live
from attend.layout import is_session_id
from attend.record import Record


class Identity(Record):
    kind: str  # "agent" | "human"
    id: str  # the session id, or the human's user name
    origin: str  # project path (worktrees normalised)
    resolved_by: str  # "ancestry" | "sandbox" | "terminal"
    resolved: bool  # an agent whose live session record was found
    host_pid: int | None = None  # the host's process that owns the session (ancestry only)
    proc_start: str | None = None
    name: str | None = None  # the session's own name from its record, when set
    notes: tuple[str, ...] = ()  # ids that were offered and ignored, one line each
    evidence: str = ""  # what decided, in one line (``attend whoami`` shows it)
    pid_ns: str | None = None  # the pid namespace the session's host process runs in (ancestry only)
    host: str | None = None  # the name of the host whose session this is (Host.name); None for a human

    @property
    def is_agent(self) -> bool:
        return self.kind == "agent"


# ---------------------------------------------------------------------- origin and persona


def normalise_origin(cwd: str) -> str:
    """The project a working directory belongs to: cut the tail of a worktree a client keeps inside
    the project (``Host.worktrees``); map a git worktree."""
    path = os.path.normpath(cwd)
    for host in HOSTS:
        if not host.worktrees:
            continue
        marker = os.sep + host.worktrees
        cut = path.find(marker + os.sep)
        if cut <= 0 and path.endswith(marker):
            cut = len(path) - len(marker)
        if cut > 0:
            return path[:cut]
    return _git_main_root(path) or path


def _git_main_root(path: str) -> str | None:
    """For a path inside a linked git worktree, the same place in the main repository."""
    probe = path
    for _ in range(64):
        dotgit = os.path.join(probe, ".git")
        if os.path.isdir(dotgit):
            return None  # the main repository itself
        if os.path.isfile(dotgit):
            try:
                with open(dotgit, encoding="utf-8") as f:
                    line = f.readline().strip()
            except OSError:
                return None
            if not line.startswith("gitdir:"):
                return None
            gitdir = os.path.normpath(os.path.join(probe, line[len("gitdir:") :].strip()))
            parts = gitdir.split(os.sep)
            if len(parts) >= 3 and parts[-2] == "worktrees" and parts[-3] == ".git":
                main = os.sep.join(parts[:-3]) or os.sep
                rest = os.path.relpath(path, probe)
                return main if rest == "." else os.path.join(main, rest)
            return None
        parent = os.path.dirname(probe)
        if parent == probe:
            return None
        probe = parent
    return None


_NAMES = [
    "Ada",
    "Alba",
    "Aiko",
    "Anya",
    "Arlo",
    "Asha",
    "Ava",
    "Bea",
    "Bo",
    "Cai",
    "Cora",
    "Dara",
    "Dev",
    "Eda",
    "Eli",
    "Ema",
    "Enzo",
    "Esme",
    "Ezra",
    "Faye",
    "Fenn",
    "Gia",
    "Gus",
    "Hana",
    "Idris",
    "Ilse",
    "Ines",
    "Ira",
    "Isla",
    "Ivo",
    "Jae",
    "Jax",
    "Juno",
    "Kai",
    "Kaya",
    "Kit",
    "Lana",
    "Leo",
    "Lior",
    "Lulu",
    "Luz",
    "Mae",
    "Mara",
    "Milo",
    "Mina",
    "Nia",
    "Nico",
    "Noa",
    "Nora",
    "Odin",
    "Olli",
    "Omar",
    "Opal",
    "Oren",
    "Otto",
    "Pax",
    "Pia",
    "Quin",
    "Rafa",
    "Remy",
    "Rhea",
    "Rio",
    "Rumi",
    "Saga",
    "Sami",
    "Sana",
    "Suki",
    "Tam",
    "Tao",
    "Tess",
    "Theo",
    "Uma",
    "Uri",
    "Vera",
    "Vik",
    "Wren",
    "Xan",
    "Yara",
    "Yuki",
    "Zane",
    "Zara",
    "Zeno",
    "Zia",
    "Zoe",
]


def fnv1a64(text: str) -> int:
    h = 0xCBF29CE484222325
    for b in text.encode("utf-8", "surrogateescape"):  # a cwd that is not UTF-8 keeps its bytes
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def nickname(origin: str) -> str:
    """A stable persona for a project path (the same path always gives the same name)."""
    return _NAMES[fnv1a64(origin) % len(_NAMES)]


def persona(identity: Identity) -> str:
    """A human's user name; a session's nickname, the fallback for a session whose client gives it no
    name of its own (sessions.display_name: the client's name wins)."""
    if identity.kind == "human":
        return identity.id.split("@", 1)[0]
    return nickname(identity.origin)


# ---------------------------------------------------------------------- humans


def _login_name() -> str:
    """The account name from the password database, when the environment names none."""
    import pwd

    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return "unknown"


def human_id(env: Mapping[str, str]) -> str:
    """The human is ``$USER``, whatever the terminal: one person, one identity, one set of channels."""
    user = env.get("USER") or env.get("LOGNAME") or _login_name()
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in user)


# ---------------------------------------------------------------------- resolution


# What the rule asks of an enrolled session: (the pid namespace its host process runs in, as recorded
# when it enrolled through its ancestry, or None; its origin; the host process it enrolled from, as
# (pid, procStart), or None). None: not enrolled.
EnrollmentProbe = Callable[[str], "tuple[str | None, str, tuple[int, str] | None] | None"]


def remembered(parent: Parent = parent_pid) -> Procs:
    """``parent``, each pid's answers read once: one resolution asks every host, and each climbs the
    same ancestry, reading each ancestor's ``stat`` and ``environ`` (``Procs``). Made anew for each
    resolution, so nothing outlives the call."""
    return Procs(parent)


def find_caller(
    pid: int,
    env: Mapping[str, str],
    claims: tuple[str, ...] = (),
    parent: Parent = parent_pid,
    enrollment: EnrollmentProbe | None = None,
) -> tuple[Host, Found] | None:
    """The caller's session among every host's in its ancestry, with the host that found it: taken
    from the outermost inward, the nearest that stands. The outermost stands; one nested under it
    (of any host: a client started from a session's shell, or a record its tools wrote for a process
    of their own) stands only when its id is free: no other live process of any host holds it, and
    the spool has not bound it to another process (``enrollment``). A session's tools cannot write
    their way into a session that is another's.

    Evidence found only where the caller's environment pointed (a record under a ``HOME`` of its
    choosing) counts only when no host found any where its process keeps it, as within each host.
    Where the hosts' evidence is mixed, the outermost must be free of another live process too: a
    session record is a file, and one naming B for a process of A's client (a Codex or Gemini
    process has no Claude Code record of its own to lose), or for an ancestor above it, would
    otherwise stand outside A's own session."""
    chain = [(host, f) for host in HOSTS for f in host.find_all(pid, env, parent, claims)]
    if any(f.own for _, f in chain):  # each host's rule across them: where the caller pointed counts last
        chain = [(host, f) for host, f in chain if f.own]
    if not chain:
        return None
    chain.sort(key=lambda hf: -hf[1].hops)  # outermost first; at one hop, in HOSTS order
    mixed = len({host.name for host, _ in chain}) > 1
    standing: list[tuple[Host, Found]] = []
    for host, found in chain:
        if not standing:
            if not (mixed and _taken(found, env, enrollment)):
                standing.append((host, found))
        elif any(found.session_id == s.session_id for _, s in standing) or _free(found, env, enrollment):
            standing.append((host, found))
    return standing[-1] if standing else None


def _taken(found: Found, env: Mapping[str, str], enrollment: EnrollmentProbe | None) -> bool:
    """Whether the session ``found`` names is another live process's: the spool binds it to another
    process that still runs, or (bound to none) another live process's evidence names it. A session
    resumed in a new process, its old one ended, is not taken."""
    enrolled = enrollment(found.session_id) if enrollment is not None else None
    bound = enrolled[2] if enrolled is not None else None
    if bound is not None:
        return bound != (found.pid, found.proc_start) and pid_alive(bound[0]) and proc_start(bound[0]) == bound[1]
    return any(p != found.pid for host in HOSTS for p in host.holds(found.session_id, env))


def _free(found: Found, env: Mapping[str, str], enrollment: EnrollmentProbe | None) -> bool:
    """Whether a session found nested under another names an id no other process has: none of any
    host's live evidence names it, and its enrollment (when there is one) binds it to this process."""
    if any(p != found.pid for host in HOSTS for p in host.holds(found.session_id, env)):
        return False
    enrolled = enrollment(found.session_id) if enrollment is not None else None
    bound = enrolled[2] if enrolled is not None else None
    return bound is None or bound == (found.pid, found.proc_start)


def _held_elsewhere(host: Host, found: Found, enrollment: EnrollmentProbe | None) -> str | None:
    """Why ``found`` is not the caller's although it stands: the spool binds its session to another
    live process of the host (a record rewritten to name a running session). None: it may be."""
    if enrollment is None or not host.one_session_per_process:
        return None
    enrolled = enrollment(found.session_id)
    bound = enrolled[2] if enrolled is not None else None
    if bound is None or bound == (found.pid, found.proc_start):
        return None
    pid, start = bound
    if not pid_alive(pid) or proc_start(pid) != start:
        return None  # its process has ended: resumed in this one
    return (
        f"session {found.session_id} is held by its live process {pid}, so the record "
        f"{found.record_path} naming it for process {found.pid} is not believed"
    )


def _agent(host: Host, found: Found, notes: tuple[str, ...]) -> Identity:
    return Identity(
        kind="agent",
        id=found.session_id,
        origin=normalise_origin(found.cwd or os.getcwd()),
        resolved_by="ancestry",
        resolved=True,
        # A process that hosts many sessions never stands for one (no liveness, no /clear move by pid).
        host_pid=found.pid if host.one_session_per_process else None,
        proc_start=found.proc_start if host.one_session_per_process else None,
        name=found.name,
        notes=notes,
        evidence=host.evidence(found),
        pid_ns=pid_namespace(found.pid),
        host=host.name,
    )


SANDBOX_FIX = "run attend from the session itself"


def _sandbox(host: Host, offered: tuple[str, str] | None, pid: int | None, probe: EnrollmentProbe) -> Identity:
    """The sandbox rule: no session in the ancestry, the environment names enrolled session B, and
    the caller is in another pid namespace than B's host process. In B's own namespace B's host would
    be visible as an ancestor if it were one, so there the environment's id is refused."""
    if offered is None:
        inside = next((var for var in host.inside_env if var), "")
        var = host.session_env[0] if host.session_env else "a session id"
        raise IdentityError(
            f"{inside}=1 is set but no {host.name} session is among this process's ancestors and "
            f"{var} is unset; {SANDBOX_FIX} (or unset {inside} to act as a human)"
        )
    var, env_sid = offered
    rule = f"no {host.name} session is among this process's ancestors, so {var} {env_sid} is refused"
    enrolled = probe(env_sid) if is_session_id(env_sid) else None
    if enrolled is None:
        raise IdentityError(f"{rule}: the sandbox rule needs an enrolled session, and it is not one; {SANDBOX_FIX}")
    theirs, origin, _bound = enrolled
    mine = pid_namespace(pid)
    if theirs is None or mine is None:
        raise IdentityError(
            f"{rule}: the sandbox rule needs the pid namespace {env_sid} enrolled from, and "
            f"{'its enrollment records none' if theirs is None else 'this one is unreadable'}; {SANDBOX_FIX}"
        )
    if mine == theirs:
        raise IdentityError(
            f"{rule}: the sandbox rule needs another pid namespace than its {host.name} process's ({theirs}), "
            f"where that process would be visible if it were an ancestor; {SANDBOX_FIX}"
        )
    # Narrower where the evidence is there: the namespace's first process shows the id the sandbox
    # was started with, which a command inside it cannot change for its parent.
    first = environ_of(1) if pid is None else None
    started = (first or {}).get(var)
    if started and started != env_sid:
        raise IdentityError(f"{rule}: this pid namespace was started for session {started}; {SANDBOX_FIX}")
    return Identity(
        kind="agent",
        id=env_sid,
        origin=origin,
        resolved_by="sandbox",
        resolved=False,
        evidence=f"sandbox: pid namespace {mine} differs from the enrollment's {theirs}",
        host=host.name,
    )


def inside_host(pid: int | None = None, parent: Parent = parent_pid) -> tuple[Host, int, str] | None:
    """The nearest process of ``pid``'s ancestry (``pid`` itself, its parents, and the pid namespace's
    first process) whose environment says it runs inside a host: (host, pid, variable). Environments
    are read as each process was started (``/proc/<pid>/environ``), so unsetting a variable on the
    way down hides nothing."""
    start = os.getpid() if pid is None else pid
    for p in [*ancestry(start, parent), 1]:
        env = environ_via(parent, p) or {}
        for host in HOSTS:
            for var in (*host.inside_env, *host.session_env):
                if env.get(var):
                    return host, p, var
    return None


def authority(
    *,
    claimed: str | None = None,
    env: Mapping[str, str] | None = None,
    pid: int | None = None,
    enrollment: EnrollmentProbe | None = None,
    cwd: str | None = None,
    hook: bool = False,
    human_only: str | None = None,
) -> Identity:
    """THE authority rule: who is calling, and so on whose behalf it may act. Every entry point asks
    it (docs/architecture/sessions.md, "The authority rule"), fresh on each call:

    - a session, when its host's process is among the caller's ancestors (each host's ``find``: live
      evidence, nearest first), or under the sandbox rule (``enrollment`` answers for it);
    - else the human, ``$USER``; never while the caller or any ancestor runs inside a host.

    An id offered by a hook payload (``claimed``) or the environment never makes an identity: it is
    ignored with a note. ``hook``: a hook acts only for the session that runs it, so a payload naming
    any other session (or a hook with no session above it) is refused. ``human_only``: the action is a
    human's alone (approving project code to run, minting a human mailbox, purging the spool), refused
    from any agent session's process tree, with one line naming ``human_only``."""
    env = os.environ if env is None else env
    start = os.getpid() if pid is None else pid
    parent = remembered()
    if human_only is not None:
        return _human_only(human_only, env, start, cwd, parent)
    found = find_caller(start, env, (claimed,) if claimed else (), parent, enrollment)
    if found is not None and (why := _held_elsewhere(*found, enrollment) or _unproved(*found, enrollment)) is not None:
        raise IdentityError(f"{why}; {SANDBOX_FIX}")

    if hook:
        if found is None:
            raise IdentityError(f"no agent session is among this hook's ancestors, so session {claimed} is refused")
        if claimed != found[1].session_id:
            raise IdentityError(
                f"the hook payload names session {claimed}, but this hook runs in session {found[1].session_id}; "
                "a hook acts only for the session that runs it"
            )
        return _agent(*found, ())

    if found is not None:
        host, where = found
        offered = [("the hook payload's session_id", claimed)]
        offered += [o for h in HOSTS if (o := h.offered_id(env)) is not None]
        notes = tuple(
            f"{what} {value} disagrees with the session in the ancestry ({where.session_id}); ignored"
            for what, value in offered
            if value and value != where.session_id
        )
        return _agent(host, where, notes)

    inside = next((h for h in HOSTS if h.offered_id(env)), None) or next((h for h in HOSTS if h.inside(env)), None)
    if inside is None:
        for host in HOSTS:
            if (why := host.inside_ancestry(start, parent)) is not None:
                claim = f" (the session_id offered, {claimed}, is not one of them)" if claimed else ""
                raise IdentityError(
                    f"this process is inside {host.name} ({why}) but no session of it is proved{claim}; {SANDBOX_FIX}"
                )
    if inside is not None:
        who = _sandbox(inside, inside.offered_id(env), pid, enrollment or (lambda _sid: None))
        if claimed and claimed != who.id:
            note = f"the hook payload's session_id {claimed} disagrees with the sandbox's ({who.id}); ignored"
            return who._replace(notes=(note,))
        return who

    if (above := inside_host(start, parent)) is not None:
        host, p, var = above
        raise IdentityError(
            f"no {host.name} session is visible from here, yet process {p} above this one runs inside one "
            f"({var} is set in its environment), so this is not the human either; {SANDBOX_FIX}"
        )
    if (top := adopted(start, parent)) is not None:  # left without its parent: what ties it to a session
        tie = _kin(start, top, env, enrollment)
        if tie is not None:
            if tie[1] is None:
                raise IdentityError(f"this process {tie[2]}, so it is not the human; {SANDBOX_FIX}")
            return _agent(tie[0], tie[1], ())._replace(evidence=f"kin: {tie[2]}; {tie[0].evidence(tie[1])}")
        if terminal(start, parent) == 0:
            raise IdentityError(_cannot_tell(top))
    notes = ()
    if claimed:
        notes = (f"the hook payload's session_id {claimed} has no session in the ancestry; ignored",)
    return Identity(
        kind="human",
        id=human_id(env),
        origin=normalise_origin(cwd or os.getcwd()),
        resolved_by="terminal",
        resolved=False,
        notes=notes,
        evidence="human: no session in the ancestry",
    )


def _cannot_tell(top: int) -> str:
    return (
        f"cannot tell who is calling: process {top} was left without its parent (no session in its "
        "ancestry, nothing of one it holds open) and there is no terminal; run it from a terminal, "
        "or from cron or a service (systemd-run --user)"
    )


def _unproved(host: Host, found: Found, enrollment: EnrollmentProbe | None) -> str | None:
    """Why ``found`` is not the caller's although it stands: its record names a session that is
    already enrolled from another process (a parked session, to be resumed), for a process that is not
    the host's client. Only the client itself resumes a session; a record written for a shell or any
    other program makes at most a session of its own, never one enrolled elsewhere. None: it may be."""
    if host.is_client(found.pid):
        return None
    if enrollment is not None:
        enrolled = enrollment(found.session_id)
        if enrolled is None or enrolled[2] == (found.pid, found.proc_start):
            return None  # never enrolled, or enrolled from this very process
    return (
        f"the record {found.record_path} names session {found.session_id} for process {found.pid}, "
        f"which is not a {host.name} process; a record alone does not make a session"
    )


def _kin(
    start: int, top: int, env: Mapping[str, str], enrollment: EnrollmentProbe | None
) -> tuple[Host, Found | None, str] | None:
    """What ties a process left without its parent (``top`` was handed to another) to a session: a
    live member of its process group with a session among its ancestors (or inside a host), or a
    host's process holding the other end of what it inherited (a pipe, a socket, its output file's
    folder); neither one the caller started itself. (host, the session or None when only "inside" is
    proved, why in words), or None."""
    from attend.hosts import kin  # only for a process left without its parent: never on a plain send

    chain = kin.chain_to(start, top, remembered())
    for p in kin.relatives(chain, remembered()):
        procs = remembered()
        found = find_caller(p, environ_of(p) or {}, (), procs, enrollment)
        if found is not None and _unproved(*found, enrollment) is None:
            return found[0], found[1], f"shares its process group with process {p}"
        if (above := inside_host(p, procs)) is not None:
            return above[0], None, f"shares its process group with process {p}, inside {above[0].name}"
    mine: set[tuple[int, int]] = set()
    for p in chain:
        mine |= kin.inherited(p)
    if not mine:
        return None
    for host in HOSTS:
        for h in host.processes(env):
            if h in chain or kin.descends(h, chain, remembered()) or not host.is_client(h) or not (mine & kin.held(h)):
                continue  # a client the caller started (a script talking to it) is its child, not its tie
            why = f"holds open what {host.name} process {h} holds (its output's pipe, socket or folder)"
            one = host.serves(h)  # a process hosting one session proves it; one hosting several, none
            found = find_caller(h, environ_of(h) or {}, one if len(one) == 1 else (), remembered(), enrollment)
            if found is not None and found[0] is host and _unproved(*found, enrollment) is None:
                return host, found[1], why
            return host, None, why
    return None


def _human_only(action: str, env: Mapping[str, str], pid: int, cwd: str | None, parent: Parent) -> Identity:
    """The human at a terminal, outside every agent session's process tree, or HumanOnlyError naming
    ``action``. The confirmation typed at that terminal is the caller's to ask (``Context.human``)."""
    fix = "run it yourself, from a terminal outside any agent session"
    found = find_caller(pid, env, (), parent)
    if found is not None:
        host, where = found
        raise HumanOnlyError(
            f"{action} is for a human only, and this runs in {host.name} session {where.session_id}; {fix}"
        )
    offered = next((h for h in HOSTS if h.inside(env)), None)
    if offered is not None:
        raise HumanOnlyError(f"{action} is for a human only, and this runs inside {offered.name}; {fix}")
    for host in HOSTS:
        if (why := host.inside_ancestry(pid, parent)) is not None:
            raise HumanOnlyError(f"{action} is for a human only, and this runs inside {host.name} ({why}); {fix}")
    if (above := inside_host(pid, parent)) is not None:
        host, p, var = above
        raise HumanOnlyError(
            f"{action} is for a human only, and this runs inside {host.name} (process {p} above it has {var}); {fix}"
        )
    if (top := adopted(pid, parent)) is not None and (tie := _kin(pid, top, env, None)) is not None:
        raise HumanOnlyError(f"{action} is for a human only, and this process {tie[2]}; {fix}")
    if terminal(pid, parent) == 0:
        raise HumanOnlyError(
            f"{action} is for a human only, and needs one at a terminal: this process has no controlling "
            f"terminal to confirm on; {fix}"
        )
    return Identity(
        kind="human",
        id=human_id(env),
        origin=normalise_origin(cwd or os.getcwd()),
        resolved_by="terminal",
        resolved=False,
        evidence="human: no session in the ancestry, and no host above",
    )


def resolve(
    *,
    payload_sid: str | None = None,
    env: Mapping[str, str] | None = None,
    pid: int | None = None,
    enrollment: EnrollmentProbe | None = None,
    cwd: str | None = None,
) -> Identity:
    """Who is calling: ``authority`` with nothing more asked."""
    return authority(claimed=payload_sid, env=env, pid=pid, enrollment=enrollment, cwd=cwd)


def transcript_path(
    env: Mapping[str, str], session_id: str, cwd: str | None, host: Host | None = None, pid: int | None = None
) -> str | None:
    """Where ``host`` (default: ``hosts.DEFAULT``, Claude Code) writes the session's transcript, from its
    own working directory (not the normalised origin) and, when known, the host's process that owns it
    (``Host.transcript``)."""
    return (host or DEFAULT_HOST).transcript(session_id, cwd, env, pid)


WORKING_WINDOW = 30.0  # seconds: a transcript written this recently means the session is working


def transcript_status(
    env: Mapping[str, str], record: SessionRecord, window: float = WORKING_WINDOW, host: Host | None = None
) -> str:
    """ "working" when the session's transcript was written in the last ``window`` seconds, else "waiting"."""
    return activity(transcript_path(env, record.session_id, record.cwd, host, record.pid), window)


def activity(path: str | None, window: float = WORKING_WINDOW) -> str:
    """ "working" when the transcript at ``path`` was written in the last ``window`` seconds, else
    "waiting"; "unknown" with no transcript to look at."""
    if path is None:
        return "unknown"
    try:
        age = time.time() - os.stat(path).st_mtime
    except OSError:
        return "unknown"
    return "working" if age < window else "waiting"
