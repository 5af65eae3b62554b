"""Everything the test modules share, in one place: no test module imports another.

- ``World``: one test's machine (a private HOME with a Claude config folder, a spool, stand-in
  sessions that are real processes with their own session records, and the installed `attend` run
  as a subprocess). The ``world`` fixture in conftest.py builds one per test.
- Records of a given age, written through the real send path (``post``, ``name_at``,
  ``old_signal``), and ``tree`` for byte-identical comparisons.
- Processes: polling with a deadline (``wait_until``), a process stopped by the ATTEND_PAUSE_AT
  seam (``stopped``), the sensor loop run as a child of a stand-in session (``Loop``, and ``has``
  to look for a line it printed; the ``loops`` fixture in conftest.py starts and reaps them), the
  Stop-hook drain (``drain``, ``payload``), a session's maildir (``maildir``), and a show lock held
  by a stopped process.
- MCP: ``server_as(world, s)`` is the in-process server acting as stand-in session ``s``: each call
  makes a fresh Context whose ancestry walk starts at the stand-in's pid, as a real server's would
  at its own. ``adopt(world)`` writes a session record for the test process itself, so a server
  spawned over real stdio by this process resolves as that session. ``stdio_params(world)`` passes
  the world's environment explicitly: the SDK hands a stdio child only HOME, LOGNAME, PATH, SHELL,
  TERM and USER of its own.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attend import identity
from attend.conduits import waiter
from attend.domain.core import envelope
from attend.domain.core.envelope import Signal
from attend.domain.sessions import sessions
from attend.domain.sessions.context import Context
from attend.layout import NAME_RE, unique_name
from attend.spool import Spool
from attend.testing.standin import Result, StandIn
from attend.verbs import join as join_verb

if TYPE_CHECKING:  # the MCP SDK takes a second of CPU to import: only the MCP helpers below load it
    from mcp import StdioServerParameters

    from attend.mcp.server import AttendServer

ATTEND = shutil.which("attend", path=str(Path(sys.executable).parent)) or "attend"

DEADLINE = 60.0  # generous: many helpers share two cores

# Variables a developer's own Claude Code session would leak into the tests.
SCRUB = (
    "CLAUDECODE",
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_PROJECT_DIR",
    "CLAUDE_PID",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_MESSAGING_SOCKET",
    "ATTEND_HOME",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "ATTEND_PAUSE_AT",
    "TMUX",
    "STY",
    "TERM_PROGRAM",
    "SSH_CONNECTION",
    "TERMINAL",
    "KITTY_PID",
    "ALACRITTY_SOCKET",
    "WEZTERM_PANE",
    # The runner's terminal size: pytest-xdist's workers carry COLUMNS, which would wrap a pipe's output.
    "COLUMNS",
    "LINES",
)


# ---------------------------------------------------------------------- the world


class World:
    """One test's machine: HOME, project folders, spool, and the sessions started in it."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.home = tmp / "home"
        (self.home / ".claude" / "sessions").mkdir(parents=True)
        self.env = {k: v for k, v in os.environ.items() if k not in SCRUB}
        self.env.update(
            HOME=str(self.home),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            USER="fixture-human",
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            PYTHONDONTWRITEBYTECODE="1",
        )
        self.spool_root = self.home / ".cache" / "attend"
        self.sessions: list[StandIn] = []

    def project(self, name: str) -> Path:
        path = self.tmp / "projects" / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def spool(self) -> Spool:
        return Spool.open(self.spool_root)

    def session(self, project: str = "proj", name: str | None = None, **kw: object) -> StandIn:
        s = StandIn(self.home, self.project(project), self.env, name=name, **kw)  # type: ignore[arg-type]
        self.sessions.append(s)
        return s

    def context(self, session: StandIn | None = None, cwd: Path | None = None) -> Context:
        """A library context acting as ``session`` (its pid is the ancestry start) or as the human."""
        pid = session.pid if session else os.getpid()
        return Context(spool=self.spool, env=self.env, cwd=str(cwd or self.project("proj")), pid=pid)

    def attend(
        self,
        *args: str,
        stdin: str = "",
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 60,
    ) -> subprocess.CompletedProcess[str]:
        """Run the installed `attend` as the human at a terminal (no session in its ancestry)."""
        return subprocess.run(
            [ATTEND, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**self.env, **(env or {})},
            cwd=str(cwd or self.project("proj")),
        )

    def cli(
        self, *args: str, stdin: str = "", cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """The click frontend in this process (click's CliRunner isolation), as the human, with this
        world's environment: for tests of rendering and refusals, where the caller's identity and the
        console entry's fast paths do not matter. Same result shape as ``attend``."""
        from click.testing import CliRunner

        from attend.cli import app

        want = {**self.env, **(env or {})}
        patch: dict[str, str | None] = {k: None for k in os.environ if k not in want}
        patch.update(want)
        code: int | str | None = 0
        with (
            CliRunner().isolation(input=stdin, env=patch) as (out, err, _),
            contextlib.chdir(cwd or self.project("proj")),
        ):
            try:
                app.main(list(args))
            except SystemExit as e:
                code = e.code
        rc = code if isinstance(code, int) else (0 if code is None else 1)
        return subprocess.CompletedProcess(["attend", *args], rc, out.getvalue().decode(), err.getvalue().decode())

    def close(self) -> None:
        for s in self.sessions:
            s.close()


# ---------------------------------------------------------------------- a human at a terminal


def in_pty(
    world: World,
    *args: str,
    answer: str | None = None,
    then: tuple[str, Callable[[], object]] | None = None,
    columns: int = 80,
    rows: int = 24,
    cwd: Path | None = None,
    **env: str,
) -> tuple[int, str]:
    """Run the installed `attend` as the human at a terminal of its own: a pty the size given, its
    controlling terminal (``setsid --ctty``, as a terminal emulator starts a shell); type ``answer``
    when it asks [y/N] (at /dev/tty: a human-only act's confirmation), and call ``then[1]`` once it
    has shown ``then[0]``. Returns the exit code and everything the terminal showed."""
    import fcntl
    import select
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    proc = subprocess.Popen(
        ["setsid", "--ctty", "--wait", ATTEND, *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**world.env, "TERM": "xterm", **env},
        cwd=str(cwd or world.project("proj")),
    )
    os.close(slave)
    shown, asked = b"", False
    end = time.monotonic() + DEADLINE  # catches a hang; measures nothing
    try:
        while time.monotonic() < end:
            ready, _, _ = select.select([master], [], [], 0.05)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the last writer on the terminal is gone
                break
            if not chunk:
                break
            shown += chunk
            if answer is not None and not asked and b"[y/N]" in shown:
                os.write(master, answer.encode() + b"\r")
                asked = True
            if then is not None and then[0].encode() in shown:
                then[1]()
                then = None
        else:
            proc.kill()
            raise AssertionError(f"attend {' '.join(args)} did not finish; showed {shown!r}")
    finally:
        os.close(master)
    return proc.wait(DEADLINE), shown.decode().replace("\r\n", "\n")


# ---------------------------------------------------------------------- records of a given age

_seq = itertools.count()


def name_at(at: float) -> str:
    """A unique name for time ``at``. spool.unique_name never goes back in time within a process,
    so backdated records get their names here, in the same grammar."""
    sec, usec = divmod(int(at * 1_000_000), 1_000_000)
    return f"{sec:010d}.M{usec:06d}P{os.getpid()}Q{next(_seq)}R{secrets.token_hex(4)}.test"


def post(spool: Spool, room: str, body: str, *, sender: str = "someone-else", age: float = 0.0) -> str:
    """Publish one record into ``room`` as if sent ``age`` seconds ago, fanned out as send does."""
    sig = Signal(
        id="",
        sender="Other-alpha",
        from_kind="agent",
        from_id=sender,
        to="*",
        room=room,
        origin="/elsewhere",
        body=body,
        at=0.0,
    )
    name = name_at(time.time() - age)
    sig = sig.with_id(name, time.time() - age)
    spool.publish([room], envelope.render(sig), name)
    for sid in sessions.recipients(spool, room):
        if sid != sender:
            spool.link_delivery(sid, room, name)
    return name


def old_signal(spool: Spool, body: str, room: str, age: float) -> None:
    """A room record sent ``age`` seconds ago, before anyone receiving it was enrolled. The name is
    built here: unique_name() never goes back in time within one process."""
    sec, usec = divmod(int((time.time() - age) * 1e6), 1_000_000)
    name = f"{sec:010d}.M{usec:06d}" + unique_name().split(".M", 1)[1][6:]
    sig = Signal(name, "old-human", "human", "old@tty", "*", room, "/elsewhere", body, sec)
    assert NAME_RE.fullmatch(name)
    spool.publish([room], envelope.render(sig), name)


def tree(root: object) -> dict[str, bytes | None]:
    """Every path below root with its bytes (None for a folder): for byte-identical comparisons."""
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(str(root)):
        for d in dirnames:
            out[os.path.join(dirpath, d)] = None
        for f in filenames:
            path = os.path.join(dirpath, f)
            with open(path, "rb") as fh:
                out[path] = fh.read()
    return out


def conversation(world: World) -> tuple[StandIn, StandIn, dict[str, str]]:
    """A threaded conversation between the human and two enrolled sessions, through the real send and
    reply verbs: a thread in #open (replies of replies, one from each) and a direct exchange. Returns
    the sessions and the message ids by label."""
    from attend.verbs import reply, send

    a, b = world.session("api"), world.session("web")
    for s in (a, b):
        sessions.enroll(world.spool, world.context(s).who(), "run")
    ids: dict[str, str] = {}

    def say(label: str, who: StandIn | None, text: str, re: str | None = None, to: str | None = None) -> None:
        if re is None:
            ids[label] = send.run(world.context(who), send.SendRequest(text, to=to)).id
        else:
            ids[label] = reply.run(world.context(who), reply.ReplyRequest(text, re=ids[re])).id

    say("ask", None, "Deploy window tonight?\nWe need a slot for the API migration.")
    say("api-yes", a, "22:00 works for the api side; the migration takes ten minutes", re="ask")
    say("web-yes", b, "Frontend is ready too, I will freeze main at 21:30", re="ask")
    say("take-it", None, "Good, take 22:00. Run the smoke tests first", re="api-yes")
    say("green", a, "Smoke tests green, starting the migration now", re="take-it")
    say("review", b, "Can you review my PR before the freeze?", to=a.session_id)
    say("reviewed", a, "Reviewed: one nit on the retry loop, otherwise fine", re="review")
    return a, b, ids


# ---------------------------------------------------------------------- processes


def wait_until(check: Callable[[], object], what: str | Callable[[], str], timeout: float = DEADLINE) -> object:
    """Poll ``check`` until it is truthy; the deadline catches a hang, it measures nothing. ``what``
    names the condition; a callable is asked only on a timeout (say, for what a process printed)."""
    end = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what() if callable(what) else what}")
        time.sleep(0.02)


TERMINAL_MARK = "terminal"  # tests that drive mutt or tmux: `-m "not terminal"` leaves them out, on purpose


def require_tools(*tools: str) -> None:
    """Fail, saying what to install, when a program a terminal test drives is missing: a skip would
    leave the run green with the mail-reader and chat tests never run."""
    import pytest

    missing = [tool for tool in tools if shutil.which(tool) is None]
    if missing:
        pytest.fail(
            f"{' and '.join(missing)} not installed: apt-get install {' '.join(missing)} (.ci/run installs them), "
            f'or leave these tests out on purpose with -m "not {TERMINAL_MARK}"',
            pytrace=False,
        )


def stopped(pid: int) -> bool:
    """Whether a process has stopped itself (the ATTEND_PAUSE_AT seam sends it SIGSTOP)."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return data[data.rfind(")") + 2 :].split()[0] == "T"


def with_suppress(fn: Callable[[], object]) -> None:
    with contextlib.suppress(ProcessLookupError):
        fn()


# ---------------------------------------------------------------------- the conduits


# A child of a stand-in session with Popen's handles: the shim (spawned by the stand-in) starts argv with
# the given stdin, writes the child's pid, and its exit code once it ends; output goes to files. It runs
# without site and spawns with the os module alone (subprocess's imports were most of its CPU).
_SHIM = """
import os, sys
argv, box = sys.argv[2:], sys.argv[1]
fds = [os.open(box + "/in", os.O_RDONLY)]
fds += [os.open(box + name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644) for name in ("/out", "/err")]
dup = [(os.POSIX_SPAWN_DUP2, fd, n) for n, fd in enumerate(fds)]
# SIGPIPE and SIGXFSZ back to their defaults, as Popen's restore_signals does (python ignores them).
pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=dup, setsigdef=(13, 25))
for fd in fds:
    os.close(fd)
with open(box + "/pid.tmp", "w") as f:
    f.write(str(pid))
os.replace(box + "/pid.tmp", box + "/pid")
rc = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
with open(box + "/rc.tmp", "w") as f:
    f.write(str(rc))
os.replace(box + "/rc.tmp", box + "/rc")
"""


class Child:
    """A process run as a child of stand-in session ``s`` (its Claude among the ancestors, as for a hook
    the client starts), with ``stdin`` written to it; read like a Popen: pid, poll, communicate, kill."""

    def __init__(self, s: StandIn, argv: list[str], stdin: str, env: dict[str, str], box: Path) -> None:
        box.mkdir(parents=True)
        (box / "in").write_text(stdin)
        self.box = box
        s.spawn([sys.executable, "-S", "-c", _SHIM, str(box), *argv], box / "shim.out", env=env)
        self.pid = int(str(wait_until(lambda: _read(box / "pid"), "the child to start")))
        self.returncode: int | None = None

    def poll(self) -> int | None:
        rc = _read(self.box / "rc")
        self.returncode = int(rc) if rc else None
        return self.returncode

    def communicate(self, timeout: float = DEADLINE) -> tuple[str, str]:
        wait_until(lambda: self.poll() is not None, "the child to end", timeout)
        return (self.box / "out").read_text(), (self.box / "err").read_text()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)


def _read(path: Path) -> str | None:
    try:
        return path.read_text() or None
    except OSError:
        return None


def human_mailbox(world: World, user: str = "fixture-human") -> None:
    """The human's mailbox, as its first use of the bus makes it: only a human makes one, so a session
    addresses a human only once it exists."""
    world.spool.make_maildir(user, "humans")


def payload(sid: str, active: bool = False) -> str:
    """The Stop hook's stdin for session ``sid``."""
    return json.dumps(
        {"session_id": sid, "hook_event_name": "Stop", "stop_hook_active": active, "background_tasks": []}
    )


def drain(world: World, sid: str, active: bool = False, *extra: str) -> subprocess.CompletedProcess[str]:
    """The Stop-hook drain for ``sid``, run as the hook runs it: a child of the stand-in session that
    is ``sid`` (its Claude among the drain's ancestors), or, when no stand-in is, as the human."""
    args = ("inbox", "--drain", "--format", "hook", *extra)
    owner = next((s for s in world.sessions if s.session_id == sid), None)
    if owner is None:
        return world.attend(*args, stdin=payload(sid, active))
    r = owner.attend(*args, stdin=payload(sid, active))
    return subprocess.CompletedProcess([ATTEND, *args], r.rc, r.stdout, r.stderr)


def has(text: str) -> Callable[[list[str]], bool]:
    """A check for ``Loop.wait_for``: some line the loop printed contains ``text``."""
    return lambda lines: any(text in line for line in lines)


def maildir(world: World, sid: str, sub: str) -> list[str]:
    """The names in a session's ``new``, ``claimed`` or ``cur`` folder (none if it is missing)."""
    try:
        return sorted(os.listdir(world.spool_root / "sessions" / sid / sub))
    except FileNotFoundError:
        return []


def enroll(world: World, s: StandIn) -> None:
    """Enroll a session as `attend join c<pid>` run in it would (a channel of its own), without a loop.
    In this process, its ancestry walk starting at the stand-in's pid: a test's setup, where a
    subprocess of the click frontend cost ~0.1 s of CPU for the same files (test_channels.py runs
    `attend join` itself)."""
    ctx = Context(spool=Spool.open(world.spool_root, create=False), env=s.env, cwd=str(s.cwd), pid=s.pid)
    joined = join_verb.run(ctx, join_verb.JoinRequest(f"c{s.pid}"))
    assert joined.enrolled, joined


class Loop:
    """``attend run`` as a child of a stand-in session, as Monitor runs it under Claude Code; its
    stdout goes to a file the test reads as it grows."""

    count = 0

    def __init__(self, world: World, session: StandIn, env: dict[str, str] | None = None, wait: bool = True) -> None:
        Loop.count += 1
        base = world.tmp / f"loop{Loop.count}"
        self.out, self.err, self.pidfile = (Path(f"{base}.{x}") for x in ("out", "err", "pid"))
        self.session = session
        self.result: Result | None = None
        script = f'echo $$ > "{self.pidfile}"; exec "{ATTEND}" run > "{self.out}" 2> "{self.err}"'
        self.thread = threading.Thread(target=self._host, args=(script, env), daemon=True)
        self.thread.start()
        wait_until(lambda: self.pidfile.exists() and self.pidfile.read_text().strip(), "the loop to start")
        self.pid = int(self.pidfile.read_text())
        if wait:
            self.wait_for(lambda lines: lines, "the banner")

    def _host(self, script: str, env: dict[str, str] | None) -> None:
        self.result = self.session.run(["sh", "-c", script], env=env, timeout=600)

    def lines(self) -> list[str]:
        try:
            return self.out.read_text().splitlines()
        except FileNotFoundError:
            return []

    def stderr(self) -> str:
        try:
            return self.err.read_text()
        except FileNotFoundError:
            return ""

    def running(self) -> bool:
        """Whether the loop has not exited yet."""
        return self.thread.is_alive()

    def wait_for(self, check: Callable[[list[str]], object], what: str, timeout: float = DEADLINE) -> list[str]:
        wait_until(lambda: check(self.lines()), lambda: f"{what}; {self.said()}", timeout)
        return self.lines()

    def said(self) -> str:
        """What the loop has printed so far, for a failure message."""
        return f"loop printed {self.lines()!r} {self.stderr()!r}"

    def messages(self) -> list[str]:
        return [line for line in self.lines() if "] message from " in line]

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.thread.is_alive():
            with_suppress(lambda: os.kill(self.pid, sig))
            self.thread.join(DEADLINE)
        assert self.result is not None, "the loop did not exit"
        return self.result.rc

    def kill(self) -> None:
        """Kill (SIGKILL lands on a process stopped at a pause point too) and reap."""
        if self.thread.is_alive():
            with_suppress(lambda: os.kill(self.pid, signal.SIGKILL))
            self.thread.join(DEADLINE)


def fake_mcp_marker(world: World, sid: str) -> None:
    """A live MCP presence marker, naming this (live) test process."""
    folder = world.spool_root / "sessions" / sid / "mcp"
    folder.mkdir(parents=True, exist_ok=True)
    me = os.getpid()
    (folder / f"{me}.json").write_text(json.dumps({"pid": me, "procStart": identity.proc_start(me)}))


@contextlib.contextmanager
def show_lock_held_by_a_stopped_process(world: World, sid: str) -> Iterator[None]:
    """Another conduit stuck mid-show: a process holding the session's show lock, stopped (SIGSTOP)
    while it holds it, so it never lets go until killed."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, signal, sys\nfrom attend.spool import Spool\nfrom pathlib import Path\n"
            "sp = Spool.open(Path(sys.argv[1]))\nwith sp.show_lock(sys.argv[2]):\n"
            "    os.kill(os.getpid(), signal.SIGSTOP)",
            str(world.spool_root),
            sid,
        ],
        env=world.env,
    )
    try:
        wait_until(lambda: stopped(holder.pid), "the holder to stop with the show lock held")
        yield
    finally:
        holder.kill()
        holder.wait()


# ---------------------------------------------------------------------- MCP


def server_as(world: World, s: StandIn | None) -> AttendServer:
    from attend.mcp.server import build_server

    return build_server(lambda: world.context(s))


def join_channel(world: World, s: StandIn, channel: str = "crew") -> None:
    """Enroll the stand-in the way an agent does without a loop: by joining a channel, in process."""
    join_verb.run(world.context(s), join_verb.JoinRequest(channel))


def adopt(world: World, project: str = "proj", session_id: str | None = None) -> str:
    """Write a session record naming this test process; returns its session id."""
    sid = session_id or str(uuid.uuid4())
    record = {
        "pid": os.getpid(),
        "sessionId": sid,
        "cwd": str(world.project(project)),
        "startedAt": int(time.time() * 1000),
        "procStart": identity.proc_start(os.getpid()),
        "version": "test-process",
        "kind": "interactive",
        "status": "busy",
    }
    path = identity.claude_dir(world.env) / "sessions" / f"{os.getpid()}.json"
    path.write_text(json.dumps(record))
    return sid


def stdio_params(world: World, project: str = "proj", **env: str) -> StdioServerParameters:
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "attend", "mcp"],
        cwd=str(world.project(project)),
        env={**world.env, **env},
    )


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    data = result.structured_content
    assert isinstance(data, dict)
    return data


def error_text(result: Any) -> str:
    assert result.is_error, result.structured_content
    return "".join(getattr(block, "text", "") for block in result.content)


class RawServer:
    """`attend mcp` as a child of this test process, spoken to in raw JSON-RPC lines (bytes, so a
    test can put on the wire what no client library would send)."""

    def __init__(self, world: World, cwd: Path | bytes | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "attend", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=world.env,
            cwd=cwd or str(world.project("proj")),
        )
        self.next_id = 0
        # Lines are read by a thread, so a request the server never answers fails the test, not hangs it.
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout
        for line in iter(self.proc.stdout.readline, b""):
            self.lines.put(line)

    def answer(self) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=DEADLINE)
        except queue.Empty:
            raise AssertionError("the server never answered") from None
        return json.loads(line)  # type: ignore[no-any-return]  # every stdout line is protocol

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})
        answer = self.answer()
        assert answer["id"] == self.next_id
        return answer

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(json.dumps(message).encode())

    def send_bytes(self, frame: bytes) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(frame + b"\n")
        self.proc.stdin.flush()

    def initialize(self) -> dict[str, Any]:
        answer = self.request(
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def close(self) -> tuple[int, str, str]:
        assert self.proc.stdin and self.proc.stderr
        self.proc.stdin.close()
        rc = self.proc.wait(timeout=20)
        self.reader.join(timeout=20)
        rest = b"".join(self.lines.queue).decode()
        return rc, rest, self.proc.stderr.read().decode()


class Wait:
    """One `attend wait --hook` for a stand-in session, started as Claude Code starts the hook: a child
    of the session's process (the authority rule finds the session among its ancestors)."""

    def __init__(self, world: World, s: StandIn, active: bool = False, env: dict[str, str] | None = None) -> None:
        box = world.tmp / "waiters" / secrets.token_hex(6)
        env = {**world.env, "CLAUDE_PID": str(s.pid), "CLAUDECODE": "1", **(env or {})}
        self.proc = Child(s, [ATTEND, "wait", "--hook"], payload(s.session_id, active), env, box)
        self.world, self.sid = world, s.session_id

    def waiting(self) -> bool:
        """This waiter has named itself the session's newest (it is set up and sleeping)."""
        try:
            text = (self.world.spool_root / "sessions" / self.sid / waiter.WAITER).read_text()
        except OSError:
            return False
        return text.split(" ")[0] == str(self.proc.pid)

    def done(self) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=60)
        assert self.proc.returncode is not None
        return self.proc.returncode, out, err

    def exited(self) -> bool:
        return self.proc.poll() is not None


# ---------------------------------------------------------------------- a Codex stand-in

# A process named `codex` (its comm, as the kernel shows it) that holds the writer locks of the
# threads named on its command line open, and runs the command after `--` as its child.
CODEX = r"""
import ctypes, os, subprocess, sys, time
ctypes.CDLL(None).prctl(15, b"codex", 0, 0, 0)
folder, rest = sys.argv[1], sys.argv[2:]
cut = rest.index("--")
held = [open(os.path.join(folder, "thread-writer-locks", t + ".lock"), "a") for t in rest[:cut]]
sys.exit(subprocess.run(rest[cut + 1 :], env=dict(os.environ)).returncode)
"""


def as_codex(
    world: World, threads: list[str], argv: list[str], env: dict[str, str], stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    home = world.home / ".codex"
    (home / "thread-writer-locks").mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [sys.executable, "-c", CODEX, str(home), *threads, "--", *argv],
        env={**world.env, **env},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )


# ---------------------------------------------------------------------- Codex and Gemini sessions, as stand-ins


def _client(world_tmp: Path, name: str) -> Path:
    from attend.testing.standin import client_named

    return client_named(world_tmp, name)


def thread_id() -> str:
    """A Codex thread id: a UUIDv7, its first 48 bits the moment it was made."""
    rand = secrets.token_hex(9)
    hexa = f"{int(time.time() * 1000):012x}7{rand[:3]}{8 | secrets.randbelow(4):x}{rand[3:18]}"
    return f"{hexa[:8]}-{hexa[8:12]}-{hexa[12:16]}-{hexa[16:20]}-{hexa[20:]}"


# Two thread ids for the Codex stand-ins, drawn anew in each test process: a thread id is unique on a
# machine, and the identity rule asks every process of it who holds one (Codex.holds scans /proc), so a
# constant shared by tests running side by side under xdist made one test's thread another's.
T1, T2 = thread_id(), thread_id()


# The stand-in's host, run after opening the writer lock named first (close-on-exec, as codex opens it:
# the commands it starts hold nothing).
CODEX_HOST = """
import os, sys
lock = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
sys.argv = sys.argv[2:]
with open(sys.argv[0]) as f:
    exec(compile(f.read(), sys.argv[0], "exec"), {"__name__": "__main__"})
"""


class CodexStandIn(StandIn):
    """A Codex session: a process named ``codex`` holding its thread's writer lock open, as the client
    hosting a thread does. Codex keeps no record by process; its shell tool gets ``CODEX_THREAD_ID``."""

    def __init__(self, home: Path, cwd: Path, env: dict[str, str], session_id: str | None = None, **kw: Any) -> None:
        self.lock = home / ".codex" / "thread-writer-locks" / f"{session_id or thread_id()}.lock"
        self.lock.parent.mkdir(parents=True, exist_ok=True)
        super().__init__(home, cwd, env, session_id=self.lock.stem, **kw)

    def command(self) -> list[str]:
        from attend.testing.standin import HOST

        return [str(_client(self.home.parent, "codex")), "-S", "-c", CODEX_HOST, str(self.lock), str(HOST)]

    def write_record(self, session_id: str | None = None, proc_start: str | None = None) -> None:
        """Codex writes none: its writer lock is the evidence (held once the process has started)."""
        from attend.hosts import codex

        wait_until(lambda: self.session_id in codex.held(self.pid), "the stand-in to hold its thread's lock")

    def tool_env(self) -> dict[str, str]:
        return {"CODEX_THREAD_ID": self.session_id}


class GeminiStandIn(StandIn):
    """A Gemini session: a process that looks like the Gemini CLI to /proc (``node``, its script named
    after it), with the record attend's SessionStart hook writes for it (``gemini.write_record``). Its
    shell tool gets ``GEMINI_CLI=1`` and no id."""

    def command(self) -> list[str]:
        from attend.testing.standin import HOST

        script = self.home.parent / "clients" / "gemini.py"
        node = _client(self.home.parent, "node")
        if not script.exists():
            script.symlink_to(HOST)
        return [str(node), "-S", str(script)]

    @property
    def record_path(self) -> Path:
        from attend.hosts import gemini

        return Path(gemini.records_home(self.env)) / f"{self.pid}.json"

    def write_record(self, session_id: str | None = None, proc_start: str | None = None) -> None:
        from attend.hosts import gemini

        if session_id:
            self.session_id = session_id
        wait_until(lambda: gemini.is_gemini_process(self.pid), "the stand-in to look like the Gemini CLI")
        gemini.write_record(self.pid, self.session_id, str(self.cwd), self.env)

    def tool_env(self) -> dict[str, str]:
        return {"GEMINI_CLI": "1"}


STANDINS: dict[str, type[StandIn]] = {"claude": StandIn, "codex": CodexStandIn, "gemini": GeminiStandIn}


def session_of(world: World, host: str, project: str = "proj", name: str | None = None) -> StandIn:
    """A stand-in session of ``host`` (claude, codex or gemini) in ``world``."""
    s = STANDINS[host](world.home, world.project(project), world.env, name=name)
    world.sessions.append(s)
    return s


def enroll_claimed(world: World, s: StandIn) -> None:
    """``enroll``, for a stand-in of any client: the join is handed the session's id as a hook's payload
    hands it (Codex proves a thread only when one is offered)."""
    ctx = Context(
        spool=Spool.open(world.spool_root, create=False), env=s.env, cwd=str(s.cwd), pid=s.pid, payload_sid=s.session_id
    )
    joined = join_verb.run(ctx, join_verb.JoinRequest(f"c{s.pid}"))
    assert joined.enrolled, joined
