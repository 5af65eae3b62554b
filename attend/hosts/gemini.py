"""Gemini CLI: attend's own SessionStart hook records the session for the gemini process.

Gemini CLI passes no session id to its shell tool or its MCP servers (only ``GEMINI_CLI=1``) and keeps
no record that maps a process to a session; its hooks get the id (the payload's ``session_id``,
``GEMINI_SESSION_ID``). Hooks, MCP servers and shell tools are all children of one node process (the
relaunched child when the CLI relaunches itself), so attend's SessionStart hook, run as that
process's direct child, writes ``<gemini dir>/attend/sessions/<pid>.json`` for it in Claude Code's own
record shape (``pid``, ``sessionId``, ``cwd``, ``procStart``). ``/clear`` fires SessionStart again
with a new id for the same process, and the record is rewritten: the spool's /clear move follows.

The walk is then Claude Code's (``find_all``): climb to a pid with a live record whose ``procStart``
matches, each looked for where that process keeps its records, nested ones believed by the same rule. The
writer refuses an id that a live record of another process already holds, so a process of one
session cannot name itself after another live one. ``acp`` mode fires no SessionStart: there is no
record, and such a session is refused rather than mistaken for the human.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from attend import safejson
from attend.hosts import claude
from attend.hosts.base import (
    STEER,
    Found,
    Host,
    Parent,
    SessionRecord,
    ancestry,
    cmdline,
    environ_of,
    environ_via,
    first_line,
    live_records,
    parent_pid,
    pid_alive,
    proc_start,
    read_record,
    record_is_live,
)
from attend.layout import is_session_id

INSIDE_ENV = "GEMINI_CLI"
HOOK_ENV = "GEMINI_SESSION_ID"
RECORD_MAX = 1 << 16


def gemini_home(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".gemini")


def cli_home(env: Mapping[str, str]) -> str:
    """Where Gemini CLI keeps its own files (settings aside): ``$GEMINI_CLI_HOME/.gemini``, else
    ``~/.gemini``."""
    return os.path.join(env.get("GEMINI_CLI_HOME") or env.get("HOME") or os.path.expanduser("~"), ".gemini")


def project_slug(home: str, cwd: str) -> str | None:
    """The folder name Gemini gave the project at ``cwd`` under ``<home>/tmp``, from its registry
    (``projects.json``: ``{"projects": {<absolute path>: <name>}}``); None when it names none."""
    try:
        fd = os.open(os.path.join(home, "projects.json"), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        data = os.read(fd, SETTINGS_MAX + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        doc = safejson.loads(data) if len(data) <= SETTINGS_MAX else None
    except ValueError:
        return None
    projects = doc.get("projects") if isinstance(doc, dict) else None
    slug = projects.get(os.path.normpath(cwd)) if isinstance(projects, dict) else None
    if not isinstance(slug, str) or not slug or slug in (".", "..") or os.sep in slug or "\0" in slug:
        return None  # a name that would lead out of tmp/ is no project folder
    return slug


def records_home(env: Mapping[str, str] | None = None) -> str:
    """Where attend keeps its records of running Gemini sessions."""
    return os.path.join(gemini_home(env), "attend", "sessions")


def user_records() -> str | None:
    """The records folder under this user's home from the password file: where a caller that points
    ``HOME`` elsewhere still finds (and cannot hide) the session it belongs to."""
    import pwd

    try:
        return os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".gemini", "attend", "sessions")
    except KeyError:
        return None


def is_gemini_process(pid: int) -> bool:
    """A node process running the Gemini CLI (the command line names its bundle or its bin)."""
    argv = cmdline(pid)
    return bool(argv) and os.path.basename(argv[0]).startswith("node") and any("gemini" in a for a in argv[1:3])


class RecordError(Exception):
    """The SessionStart record was not written; the message says why, in one line."""


def write_record(pid: int, session_id: str, cwd: str | None, env: Mapping[str, str]) -> str:
    """Record ``session_id`` for the gemini process ``pid`` (the SessionStart hook's parent), and
    return the record's path. Refused: a process that is not the Gemini CLI, an id that is not a
    plain id, and an id a live record of another process (Gemini's or Claude Code's) already holds."""
    if not is_session_id(session_id):
        raise RecordError(f"the SessionStart payload's session_id {session_id[:80]!r} is not a session id")
    if not is_gemini_process(pid):
        raise RecordError(f"the SessionStart hook's parent (pid {pid}) is not a Gemini CLI process")
    start = proc_start(pid)
    if start is None:
        raise RecordError(f"the Gemini CLI process {pid} has gone")
    folder = records_home(env)
    for holder in (*live_records(folder), *live_records(claude.sessions_home(env))):
        if holder.session_id == session_id and holder.pid != pid:
            raise RecordError(f"session {session_id} is held by the live process {holder.pid}; not recorded for {pid}")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    record = {"pid": pid, "sessionId": session_id, "cwd": cwd, "procStart": start, "host": "gemini"}
    path = os.path.join(folder, f"{pid}.json")
    tmp = os.path.join(folder, f".{pid}.json.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    import contextlib  # here, not at the top: a send only reads records, and contextlib brings functools

    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(safejson.dumps(record))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    prune(folder)
    return path


def prune(folder: str) -> None:
    """Remove the records of processes that have ended (a pid reused later would not match anyway)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    import contextlib

    for name in names:
        if name.endswith(".json") and name[:-5].isdigit() and not pid_alive(int(name[:-5])):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, name))


class Gemini(Host):
    name = "gemini"
    inside_env = (INSIDE_ENV,)
    session_env = (HOOK_ENV,)
    one_session_per_process = True

    def find(
        self, pid: int, env: Mapping[str, str], parent: Parent = parent_pid, claims: tuple[str, ...] = ()
    ) -> Found | None:
        chain = self.find_all(pid, env, parent, claims)
        return chain[0] if chain else None

    def find_all(
        self, pid: int, env: Mapping[str, str], parent: Parent = parent_pid, claims: tuple[str, ...] = ()
    ) -> list[Found]:
        """Claude Code's rule on attend's Gemini records: each ancestor's record is looked for where
        that process keeps them (its own ``HOME``, as it was started) and where the caller's ``HOME``
        points; one found only where the caller pointed counts only when none is found where its own
        process keeps it, and a record nested under another stands in the same folder alone, naming
        no session another live record holds (``claude.standing``)."""
        mine = records_home(env)
        found: list[claude.Candidate] = []
        for hops, p in enumerate(ancestry(pid, parent)):
            theirs = environ_via(parent, p)
            own = records_home(theirs) if theirs and theirs.get("HOME") else (user_records() or mine)
            for folder in dict.fromkeys((mine, own)):
                record = read_record(folder, p)
                if record is not None and record.pid == p and record_is_live(record):
                    found.append(
                        claude.Candidate(record, os.path.join(folder, f"{p}.json"), folder, hops, folder == own)
                    )
        chain = [claude.found_of(self.name, c) for c in reversed(claude.standing(found))]
        return [f._replace(name=None) for f in chain]  # Gemini gives a session no name of its own

    def holds(self, session_id: str, env: Mapping[str, str]) -> list[int]:
        return claude.holders(session_id, (records_home(env), *filter(None, (user_records(),))))

    def is_client(self, pid: int, parent: Parent | None = None) -> bool:
        return is_gemini_process(pid)

    def processes(self, env: Mapping[str, str]) -> list[int]:
        folders = dict.fromkeys((records_home(env), *filter(None, (user_records(),))))
        return sorted({r.pid for folder in folders for r in live_records(folder)})

    def turn_end(self, reason: str) -> dict[str, str]:
        """The AfterAgent hook's deny: the next turn's user text is the reason, as it is."""
        return {"decision": "deny", "reason": reason}

    def edit_answer(self, event: str, line: str, refuse: bool) -> dict[str, object] | None:
        """Gemini's BeforeTool hook refuses with a reason but hands the model no context beside an edit
        it lets through; its AfterTool hook does (after the edit). So: a refusal at BeforeTool, the
        warning at AfterTool."""
        if event == "BeforeTool" and refuse:
            return {"decision": "deny", "reason": line}
        if event == "AfterTool" and not refuse:
            return {"hookSpecificOutput": {"hookEventName": "AfterTool", "additionalContext": line}}
        return None

    # A background shell command the model keeps running (attend wait --once), where steering is on.
    wake = STEER

    def wake_refusal(self, pid: int, env: Mapping[str, str]) -> str | None:
        """Why the gemini process ``pid`` would not turn a finished background command into a turn:
        it runs one prompt and exits, or its settings do not steer (``steering``)."""
        if not interactive(pid):
            return "gemini runs one prompt here and exits (-p), so an idle session cannot be woken"
        why = steering(process_cwd(pid), env)
        if why is not None:
            return f"{why}, so a background command's end would not wake the session; messages arrive at each turn end"
        return None

    def live_records(self, env: Mapping[str, str]) -> list[SessionRecord]:
        return live_records(records_home(env))

    def records_home(self, env: Mapping[str, str] | None = None) -> str:
        return records_home(env)

    def transcript(
        self, session_id: str, cwd: str | None, env: Mapping[str, str], pid: int | None = None
    ) -> str | None:
        """The session's chat file, as Gemini CLI 0.61 writes it: ``<gemini dir>/tmp/<project>/chats/
        session-<UTC minute>-<first 8 of the id>.jsonl``, whose first line names the whole id. The
        project's folder is the one ``<gemini dir>/projects.json`` gives the session's working
        directory. The gemini dir is the gemini process's own (``$GEMINI_CLI_HOME`` or ``$HOME``, then
        ``.gemini``), read from its environment when its pid is known."""
        if not cwd or not is_session_id(session_id):
            return None
        theirs = environ_of(pid) if pid else None
        home = cli_home(theirs if theirs and (theirs.get("HOME") or theirs.get("GEMINI_CLI_HOME")) else env)
        slug = project_slug(home, cwd)
        if slug is None:
            return None
        chats = os.path.join(home, "tmp", slug, "chats")
        try:
            names = sorted(os.listdir(chats), reverse=True)  # the newest minute first
        except OSError:
            return None
        suffix = f"-{session_id[:8]}.jsonl"
        for name in names:
            if not (name.startswith("session-") and name.endswith(suffix)):
                continue
            path = os.path.join(chats, name)
            line = first_line(path, RECORD_MAX)
            try:
                meta = safejson.loads(line) if line else None
            except ValueError:
                continue
            if isinstance(meta, dict) and meta.get("sessionId") == session_id:
                return path
        return None


HOST = Gemini()


# ---------------------------------------------------------------------- the idle wake's settings

STEERING = ("experimental", "modelSteering")  # must be true
COMPLETION = ("tools", "shell", "backgroundCompletionBehavior")  # must be "inject"
TRUST = ("security", "folderTrust", "enabled")
SETTINGS_MAX = 1 << 20


def _setting(doc: object, path: tuple[str, ...]) -> object:
    for key in path:
        if not isinstance(doc, dict) or key not in doc:
            return None
        doc = doc[key]
    return doc


def _settings_file(path: str) -> dict[str, object] | None:
    """A settings file as Gemini reads it (None: absent); one that is not plain JSON counts as
    unreadable, and so as ``{"unreadable": True}``: attend never guesses what it enables."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return {"unreadable": True}
        data = os.read(fd, SETTINGS_MAX + 1)
    finally:
        os.close(fd)
    try:
        doc = safejson.loads(data) if len(data) <= SETTINGS_MAX else None
    except ValueError:
        doc = None
    return doc if isinstance(doc, dict) else {"unreadable": True}


def settings_layers(cwd: str | None, env: Mapping[str, str]) -> list[tuple[str, dict[str, object]]]:
    """Gemini CLI's settings files in its own order, the later winning: system defaults, the user's,
    the workspace's (``<cwd>/.gemini/settings.json``, unless the workspace is the home folder), and
    the system's (``/etc/gemini-cli/settings.json`` or ``$GEMINI_CLI_SYSTEM_SETTINGS_PATH``)."""
    system = env.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH") or "/etc/gemini-cli/settings.json"
    defaults = env.get("GEMINI_CLI_SYSTEM_DEFAULTS_PATH") or os.path.join(
        os.path.dirname(system), "system-defaults.json"
    )
    user = os.path.join(gemini_home(env), "settings.json")
    paths = [("system defaults", defaults), ("user", user)]
    home = env.get("HOME") or os.path.expanduser("~")
    if cwd and os.path.realpath(cwd) != os.path.realpath(home):
        paths.append(("workspace", os.path.join(cwd, ".gemini", "settings.json")))
    paths.append(("system", system))
    return [(name, doc) for name, path in paths if (doc := _settings_file(path)) is not None]


def steering(cwd: str | None, env: Mapping[str, str]) -> str | None:
    """None when the Gemini session started in ``cwd`` turns a finished background shell command into
    a new turn (``experimental.modelSteering`` true and ``tools.shell.backgroundCompletionBehavior``
    ``"inject"``): the idle wake is available. Else why not, in a few words.

    Conservative where attend cannot know what Gemini decided: an unreadable file (JSON with
    comments, say) leaves the wake off, and with folder trust on (Gemini then ignores the settings of
    a folder it does not trust) a workspace file may turn the wake off but not on."""
    layers = settings_layers(cwd, env)
    if any(doc.get("unreadable") for _, doc in layers):
        return "a Gemini settings file is not plain JSON, so attend cannot tell whether steering is on"
    trusts = [v for name, d in layers if name != "workspace" and (v := _setting(d, TRUST)) is not None]
    trust_on = bool(trusts) and trusts[-1] is True
    values: dict[tuple[str, ...], object] = {}
    for name, doc in layers:
        for path in (STEERING, COMPLETION):
            value = _setting(doc, path)
            if value is None:
                continue
            if name == "workspace" and trust_on and value in (True, "inject"):
                continue  # a folder Gemini may not trust cannot turn the wake on
            values[path] = value
    if values.get(STEERING) is not True:
        return "experimental.modelSteering is not true in Gemini's settings"
    if values.get(COMPLETION) != "inject":
        return 'tools.shell.backgroundCompletionBehavior is not "inject" in Gemini\'s settings'
    return None


TRUSTED_FOLDERS = "trustedFolders.json"  # in cli_home, unless $GEMINI_CLI_TRUSTED_FOLDERS_PATH names it
TRUST_LEVELS = ("TRUST_FOLDER", "TRUST_PARENT", "DO_NOT_TRUST")


def folder_trust(cwd: str, env: Mapping[str, str]) -> tuple[bool, str]:
    """Whether Gemini CLI trusts the folder ``cwd`` (in a folder it does not trust it starts no MCP
    server, showing attend's as "Disabled"), and why, as Gemini decides it: its environment first,
    then ``security.folderTrust.enabled`` (on unless a settings file turns it off), then the longest
    rule of its trusted-folders file that holds ``cwd`` (``TRUST_PARENT`` trusts the rule's parent)."""
    if env.get("GEMINI_RESTRICTED_MODE") == "true" or env.get("GEMINI_CLI_TRUST_WORKSPACE") == "false":
        return False, "GEMINI_RESTRICTED_MODE or GEMINI_CLI_TRUST_WORKSPACE=false is set"
    if env.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return True, "GEMINI_CLI_TRUST_WORKSPACE=true is set"
    layers = [(n, d) for n, d in settings_layers(cwd, env) if n != "workspace"]
    trusts = [v for _, d in layers if (v := _setting(d, TRUST)) is not None]
    if trusts and trusts[-1] is False:
        return True, "folder trust is off in Gemini's settings (security.folderTrust.enabled false)"
    path = env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") or os.path.join(cli_home(env), TRUSTED_FOLDERS)
    rules = _settings_file(path)
    if rules is not None and rules.get("unreadable"):
        return False, f"{path} is not plain JSON, so attend cannot tell (Gemini refuses a file it cannot read)"
    here = os.path.realpath(cwd)
    best: tuple[int, object] = (-1, None)
    for rule, level in (rules or {}).items():
        if level not in TRUST_LEVELS:
            continue
        folder = os.path.realpath(os.path.dirname(rule) if level == "TRUST_PARENT" else rule)
        if (here == folder or here.startswith(folder.rstrip(os.sep) + os.sep)) and len(rule) > best[0]:
            best = (len(rule), level)
    if best[1] == "DO_NOT_TRUST":
        return False, f"{path} marks {cwd} DO_NOT_TRUST"
    if best[1] is not None:
        return True, f"{path} trusts {cwd}"
    return False, f"Gemini has not been asked to trust {cwd} ({path} has no rule for it)"


def process_cwd(pid: int) -> str | None:
    """The working folder of the gemini process (its workspace, whose settings it read)."""
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None


def interactive(pid: int) -> bool:
    """Whether the gemini process runs its interactive UI, where a finished background command can
    start a turn: ``-i`` says so; ``-p`` (one prompt, then exit) or a stdin that is no terminal says not."""
    full = cmdline(pid)
    at = next((i for i, a in enumerate(full[1:3], 1) if "gemini" in a), 1)
    argv = full[at + 1 :]  # the CLI's own arguments, after node's and the bundle's path
    if any(a in ("-i", "--prompt-interactive") or a.startswith("--prompt-interactive=") for a in argv):
        return True
    if any(a in ("-p", "--prompt") or a.startswith("--prompt=") for a in argv):
        return False
    try:
        tty = os.readlink(f"/proc/{pid}/fd/0")
    except OSError:
        return False
    return tty.startswith(("/dev/pts/", "/dev/tty"))
