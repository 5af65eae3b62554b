"""The authority rule at every entry point (docs/architecture/sessions.md, "The authority rule").

A process of session A that names session B every way it can (a hook payload's ``session_id``,
``CLAUDE_CODE_SESSION_ID``, ``CLAUDE_CONFIG_DIR`` or ``HOME`` pointing at a forged session record,
arguments) acts as A or is refused: B's maildir and state are left as they were, nothing is sent as
B, and nothing B alone was sent (a secret in a direct message to B, planted before each probe) shows
in what the probe printed. The entry points come from the real registries: the click tree (hidden
commands too), the hook scripts `attend install` wires, and the MCP server's tool list. A new entry
point is checked without editing this file, and a planted verb that takes a payload's id, or that
prints another session's unread mail, fails the check.

Across hosts the same sweep runs with A and B sessions of different clients (Claude Code, Codex CLI,
Gemini CLI stand-ins), in a rotation where each client is once the caller and once the one named:
A's process names B by every client's variable at once (``CLAUDE_CODE_SESSION_ID``,
``CODEX_THREAD_ID``, ``GEMINI_SESSION_ID``), the payload, and forged evidence of every client (session
records for A's process and its own in a ``HOME`` of its choosing, and a process named ``codex``
holding B's thread lock); MCP calls name B as Codex's ``_meta.threadId`` does.
Beside the sweep: `attend chat` at a real terminal (a pty) in A's tree, and the inbox-socket conduit
of an `attend mcp` started in A's tree with B's environment, which must leave B's mail unclaimed.

Then what only a human may do (approve project code to run, mint a human mailbox, purge the spool)
is refused from any agent session's process tree; and a human's name cannot shadow a session's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import secrets
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import click
import pytest

from attend.cli import app
from attend.domain.sessions import sessions
from attend.domain.sessions.context import Context
from attend.mcp.server import build_server
from attend.setup.data import data_dir
from attend.testing.standin import StandIn
from attend.verbs import send as send_verb
from tests.support import ATTEND, Child, World, enroll, enroll_claimed, in_pty, maildir, post, session_of, wait_until

needs_pid_namespace = pytest.mark.skipif(
    shutil.which("unshare") is None
    or subprocess.run(["unshare", "-pf", "--mount-proc", "true"], capture_output=True).returncode != 0,
    reason="`unshare -pf --mount-proc` is unavailable here (needs root or user namespaces)",
)

# The console entry, run the way the installed script runs it; ATTEND_TEST_PLANT adds a planted
# command (a module in that folder) to the click registry first, as a new verb would be added.
RUNNER = """
import os, sys
plant = os.environ.get("ATTEND_TEST_PLANT")
if plant:
    sys.path.insert(0, plant)
    from attend.cli import app
    app.COMMANDS["planted"] = "planted:planted"
sys.argv = ["attend", *sys.argv[1:]]
from attend.cli.entry import main
main()
"""

# Forge Claude Code session records naming a session, in a folder of the caller's choosing, for
# this process (which then execs attend: the same pid), its parent and the pids given; then exec.
FORGE = """
import json, os, sys
folder, sid, cwd, pids, argv = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
os.makedirs(folder, exist_ok=True)
for pid in {os.getpid(), os.getppid(), *(int(p) for p in pids.split(",") if p)}:
    with open(f"/proc/{pid}/stat") as f:
        start = f.read().rsplit(")", 1)[1].split()[19]
    with open(f"{folder}/{pid}.json", "w") as f:
        json.dump({"pid": pid, "sessionId": sid, "cwd": cwd, "procStart": start, "kind": "interactive"}, f)
os.execv(argv[0], argv)
"""

PLANTED = '''
import json, sys
import click
from attend.conduits.drain import claimed, render_plain
from attend.domain.sessions.context import Context


@click.command()
def planted():
    """A new verb that takes the session from its payload, past the authority rule."""
    sid = json.loads(sys.stdin.read() or "{}").get("session_id")
    ctx = Context.default()
    with claimed(ctx.spool, sid) as batch:
        click.echo(render_plain(batch))
'''

# The cross-host way: from A's tool, a process that writes session records naming B (Claude Code's
# shape, which attend's Gemini records share) for itself, its parent and the pids given, in a HOME of
# its choosing for both clients, takes the name `codex` and holds a writer lock of B's thread, then
# runs the command as its child with every client's variable naming B.
FORGE_EVERY = """
import json, os, sys
home, sid, cwd, pids, pid_b = sys.argv[1:6]
argv = sys.argv[7:]
def start(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[19]
for folder in (f"{home}/.claude/sessions", f"{home}/.gemini/attend/sessions"):
    os.makedirs(folder, exist_ok=True)
    for pid in {os.getpid(), os.getppid(), *(int(p) for p in pids.split(",") if p)}:
        with open(f"{folder}/{pid}.json", "w") as f:
            json.dump({"pid": pid, "sessionId": sid, "cwd": cwd, "procStart": start(pid), "kind": "interactive"}, f)
with open("/proc/self/comm", "w") as f:
    f.write("codex")
os.makedirs(f"{home}/.codex/thread-writer-locks", exist_ok=True)
lock = open(f"{home}/.codex/thread-writer-locks/{sid}.lock", "a")
env = dict(os.environ, HOME=home, CLAUDE_PID=pid_b)
env.update(CLAUDE_CODE_SESSION_ID=sid, CODEX_THREAD_ID=sid, GEMINI_SESSION_ID=sid)
pid = os.posix_spawn(argv[0], argv, env)
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""

# A new verb that prints the unread mail of the session its payload names, claiming nothing.
PLANTED_READER = '''
import json, sys
import click
from attend.domain.sessions.context import Context


@click.command()
def planted():
    """Shows what is waiting for the session the payload names, past the authority rule."""
    sid = json.loads(sys.stdin.read() or "{}").get("session_id")
    for path in sorted((Context.default().spool_root / "sessions" / sid / "new").iterdir()):
        click.echo(path.read_text(errors="replace"))
'''

WAYS = ("payload", "environment", "config dir", "home")
CROSS = "every client's"  # the cross-host way (FORGE_EVERY)

# Who attacks whom across hosts: each client once the caller and once the one named.
PAIRINGS = (("codex", "claude"), ("gemini", "codex"), ("claude", "gemini"))

# Options that read a room named outright: any room's history may be read by design, only the caller's
# own maildir is consumed (docs/architecture/sessions.md, "Who may do what"), so what such a read
# prints of B's direct room is no leak; B's state is still judged.
READS_A_NAMED_ROOM = ("--room", "--all")

# Exempt from the CLI sweep, each with its reason; everything else in the click tree is run.
EXEMPT = {
    "demo": "runs two stand-in sessions in a throwaway HOME and spool of its own; nothing of the caller's",
}


class Scene:
    """Sessions A (the caller) and B (the one named), both enrolled, B with mail pending; each a
    session of the client named (claude, codex or gemini)."""

    def __init__(self, world: World, attacker: str = "claude", victim: str = "claude") -> None:
        self.world = world
        self.a = session_of(world, attacker, "pa")
        self.b = session_of(world, victim, "pb", name="Bodhi")
        enroll_claimed(world, self.a)
        enroll_claimed(world, self.b)
        sent = world.attend("send", "--json", "--to", self.b.session_id, "for B only")
        assert sent.returncode == 0, sent.stderr
        self.pending = json.loads(sent.stdout)["id"]
        assert maildir(world, self.b.session_id, "new")
        plant_lease(world, self.b, "b-only.txt")  # B holds a lease: no entry point releases it, or leases as B
        # B's inbound rule, and a message it holds: B's alone to set, and to accept or decline.
        assert world.attend("inbound", "hold", "--from", "hosts", "--session", self.b.session_id).returncode == 0
        self.held = post(world.spool, "d-00000000-0000-4000-8000-00000000b0b0", "held for B")
        assert world.spool.link_delivery(self.b.session_id, "d-00000000-0000-4000-8000-00000000b0b0", self.held, True)
        self.b_dir = world.spool_root / "sessions" / self.b.session_id
        self.before = files(self.b_dir)
        self.sent: set[str] = set()
        self.display = sessions.registered_names(world.spool)[self.b.session_id]
        self.forged = world.tmp / "forged"
        self.target = world.tmp / "target"  # a Claude config folder for install/uninstall to work on
        self.target.mkdir()
        self.secrets: list[str] = []

    @property
    def a_env(self) -> dict[str, str]:
        """A's tools' environment, as A's client sets it for them."""
        return {**self.world.env, **self.a.tool_env()}

    def hostile(self, way: str) -> tuple[list[str], dict[str, str]]:
        """(argv prefix, environment) for a command of A's naming B ``way``."""
        b = self.b
        if way == CROSS:
            home = str(self.forged / secrets.token_hex(4))
            forge = [sys.executable, "-c", FORGE_EVERY, home, b.session_id, str(b.cwd), str(self.a.pid), str(b.pid)]
            return [*forge, "--"], self.a_env
        if way == "payload":
            return [], self.a_env
        if way == "environment":
            return [], {**self.a_env, "CLAUDE_CODE_SESSION_ID": b.session_id, "CLAUDE_PID": str(b.pid)}
        if way == "config dir":
            folder = self.forged / "config"
            env = {**self.a_env, "CLAUDE_CONFIG_DIR": str(folder)}
        else:
            folder = self.forged / "home" / ".claude"
            env = {**self.a_env, "HOME": str(self.forged / "home")}
            env.pop("CLAUDE_CONFIG_DIR", None)
        forge = [sys.executable, "-c", FORGE, str(folder / "sessions"), b.session_id, str(b.cwd), str(self.a.pid)]
        return forge, env

    def stdin(self) -> str:
        """Every hook payload's shape at once, naming B."""
        event = {"session_id": self.b.session_id, "hook_event_name": "Stop", "stop_hook_active": False}
        return json.dumps({**event, "source": "compact", "background_tasks": [], "cwd": str(self.b.cwd)})

    def plant(self) -> None:
        """A secret for B alone in B's unread mail: a direct message from the human."""
        secret = f"secret-for-B-{secrets.token_hex(8)}"
        send_verb.run(self.world.context(), send_verb.SendRequest(secret, to=self.b.session_id))
        self.secrets.append(secret)
        self.reset()

    def leaks(self, printed: str) -> list[str]:
        """The secrets sent to B alone that a probe printed."""
        return [f"printed B's unread mail ({s})" for s in self.secrets if s in printed]

    def breaches(self) -> list[str]:
        """What changed of B's that only B may change, and anything sent as B."""
        out = []
        after = files(self.b_dir)
        for path, (data, mtime) in self.before.items():
            if path not in after:
                out.append(f"{path} of B's was removed")
            elif after[path] != (data, mtime):
                out.append(f"{path} of B's was changed")
        for path in set(after) - set(self.before):
            if not path.startswith("new/") and "lock" not in path:
                out.append(f"{path} was written into B's state")
        sent = self.sent_as_b() - self.sent
        if sent:
            out.append(f"sent as B: {sorted(sent)}")
        return out

    def sent_as_b(self) -> set[str]:
        stamp = f"From-Id: {self.b.session_id}\n".encode()
        rooms = self.world.spool_root / "rooms"
        return {p.name for p in rooms.rglob("*") if p.is_file() and stamp in p.read_bytes()[:4096]}

    def reset(self) -> None:
        """Judge the next entry point afresh: B's state, and what was sent as B, as they are now."""
        self.before = files(self.b_dir)
        self.sent = self.sent_as_b()


def plant_lease(world: World, s: Any, glob: str) -> None:
    """A lease held by session ``s``, as its own `attend lease` would write it (its host process recorded)."""
    import time

    from attend.hosts.base import proc_start
    from attend.leases import tree
    from attend.leases.store import Holding, Lease, write

    root = tree.project_root(str(s.cwd))
    lease = Lease(root, glob, "B's own", False, time.time())
    write(world.spool, Holding(s.session_id, s.pid, proc_start(s.pid), "Bodhi", None, (lease,)))


def files(root: Path) -> dict[str, tuple[bytes, int]]:
    out = {}
    for path in root.rglob("*"):
        with contextlib.suppress(FileNotFoundError):  # moved meanwhile (by a probe that acts as B)
            if path.is_file() and not path.is_symlink():
                out[str(path.relative_to(root))] = (path.read_bytes(), path.stat().st_mtime_ns)
    return out


# ---------------------------------------------------------------------- the entry points, from their registries


def click_commands(group: click.Group = app.cli, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command of the click tree, hidden ones included, groups walked."""
    ctx = click.Context(group, info_name="attend")
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        assert cmd is not None, name
        if isinstance(cmd, click.Group):
            yield from click_commands(cmd, (*prefix, name))
        else:
            yield (*prefix, name)


def hook_forms() -> list[tuple[str, ...]]:
    """Every `attend …` command line of the hook scripts `attend install` wires, and of the pre-commit
    hook `attend install --git-hook` writes."""
    from attend.leases import tree

    forms = []
    for script in sorted((data_dir("hooks") / "ways").glob("*.sh")):
        for line in script.read_text().splitlines():
            found = re.match(r'\s*(?:exec\s+)?"\$attend"\s+(.*)$', line)
            if found:
                forms.append(tuple(found.group(1).split()))
    for line in tree.HOOK_LINE.format(attend="attend").splitlines():
        if line.startswith("attend "):
            forms.append(tuple(line.split()[1:]))
    assert len(forms) >= 3, forms  # the drain, the waiter, the compact recall
    return forms


def rows(scene: Scene) -> dict[tuple[str, ...], list[list[str]]]:
    """Arguments per command, naming B wherever a command takes a name or an id; a command missing
    here runs bare (most refuse, or act on the caller alone)."""
    b, shown, target = scene.b.session_id, scene.display, str(scene.target)
    return {
        ("send",): [["--to", b, "hi"], ["--to", shown, "hi"], ["--on-behalf-of", b, "hi"], ["hi"]],
        ("reply",): [["--re", scene.pending, "hi"], ["--to", b, "hi"]],
        ("inbox",): [[], ["--drain"], ["--drain", "--format", "hook"], ["--room", f"d-{b}"], [scene.pending]],
        ("mute",): [[b], [shown]],
        ("unmute",): [[b]],
        ("join",): [["crewx"]],
        ("leave",): [["crewx", "--yes"]],
        ("dissolve",): [["crewx", "--yes"]],
        ("scene",): [["private"]],
        ("notify", "subscribe"): [["message"]],
        ("notify", "unsubscribe"): [["sub-none"]],
        ("keepwarm",): [["status"], ["on"]],
        ("sensors",): [[], ["trust"]],
        ("install",): [["--target", target, "--dry-run"]],
        ("uninstall",): [["--target", target], ["--target", target, "--purge"]],
        ("permissions",): [["--target", target]],
        ("doctor",): [["--target", target]],
        ("cleanup",): [["--dry-run"], []],
        ("completion",): [["bash"]],
        ("tail",): [["--count", "1"]],
        ("whoami",): [["--json"]],
        ("search",): [["secret", "for", "B"], ["secret", "--room", f"d-{b}"]],
        ("wait",): [[], ["--codex", b], ["--once"]],  # the host entry points: Codex's and Gemini's waiters
        # Leases: A leases and releases as itself; B's lease (planted by Scene) stays B's.
        ("lease",): [["b-only.txt"], ["--reason", "as B", "elsewhere.txt"]],
        ("release",): [[], ["b-only.txt"], ["--holder", b], ["--holder", shown]],
        ("inbound",): [
            [],
            ["--session", b],
            ["refuse", "--session", b],
            ["accept", "--session", shown],
            ["hold", "--from", "local", "--session", b],
            ["accept", scene.held, "--session", b],
            ["decline", scene.held, "--session", shown],
            ["accept", scene.held],
            ["decline", scene.held],
        ],
        ("thread",): [[scene.pending], [scene.pending[:16]]],  # a read of the thread: consumes nothing
    }


def run_cli(scene: Scene, way: str, argv: list[str], plant: Path | None = None) -> tuple[str, str]:
    prefix, env = scene.hostile(way)
    if plant is not None:
        env = {**env, "ATTEND_TEST_PLANT": str(plant)}
    box = scene.world.tmp / "calls" / secrets.token_hex(6)
    child = Child(scene.a, [*prefix, sys.executable, "-c", RUNNER, *argv], scene.stdin(), env, box)
    if argv[:1] == ["tail"]:  # it follows until a message lands: send one until it has shown one
        wait_until(lambda: child.poll() is not None or poke(scene.world), "tail to show a message and end")
    try:
        return child.communicate()
    except AssertionError:  # still running (a loop or a waiter serving B would): end it, judge what it did
        child.kill()
        return child.communicate()


def poke(world: World) -> bool:
    assert world.attend("send", "poke").returncode == 0
    return False


def cli_breaches(
    scene: Scene, way: str, commands: list[tuple[str, ...]], plant: Path | None = None, at_once: int = 4
) -> list[str]:
    """Run every command line, ``at_once`` at a time (B's state is checked after each batch, and a
    breach names the batch's command lines)."""
    table = rows(scene)
    calls = [[*c, *args] for c in commands if c[0] not in EXEMPT for args in table.get(c, [[]])]
    out = []
    with ThreadPoolExecutor(at_once) as pool:
        for start in range(0, len(calls), at_once):
            batch = calls[start : start + at_once]
            scene.plant()
            printed = list(pool.map(lambda argv: run_cli(scene, way, argv, plant), batch))
            lines = " | ".join(f"attend {' '.join(argv)}" for argv in batch)
            out += [f"{lines} [{way}]: {breach}" for breach in scene.breaches()]
            for argv, (stdout, stderr) in zip(batch, printed, strict=True):
                if not set(READS_A_NAMED_ROOM) & set(argv):
                    out += [f"attend {' '.join(argv)} [{way}]: {leak}" for leak in scene.leaks(stdout + stderr)]
                if argv == ["whoami", "--json"] and scene.b.session_id in stdout.split('"kind"', 1)[0]:
                    out.append(f"attend whoami [{way}]: resolved as B: {stdout[:300]}")
            scene.reset()
    return out


@pytest.fixture
def scene(world: World, loops: Any, request: pytest.FixtureRequest) -> Scene:
    attacker, victim = getattr(request, "param", ("claude", "claude"))
    s = Scene(world, attacker, victim)
    loops(s.a, s.a.tool_env())  # A's own loop runs, so `attend run` acting as A leaves at once (one loop per session)
    return s


@pytest.mark.parametrize("way", WAYS)
def test_every_cli_command_and_hook_acts_as_its_caller_or_is_refused(scene: Scene, way: str) -> None:
    commands = sorted({*click_commands(), *hook_forms()})
    assert ("wait", "--hook") in commands and ("recall", "--hook") in commands
    assert ("sensors",) in commands and ("chat",) in commands and ("mcp",) in commands
    assert cli_breaches(scene, way, commands) == []


# Three whole sweeps (~13 s of CPU each): the developer loop keeps the four ways above, CI runs these too.
@pytest.mark.slow
@pytest.mark.parametrize("scene", PAIRINGS, indirect=True, ids=[f"{a}-names-{b}" for a, b in PAIRINGS])
def test_a_session_of_each_client_naming_one_of_another_acts_as_itself_or_is_refused(scene: Scene) -> None:
    out, err = run_cli(scene, CROSS, ["whoami", "--json"])
    assert json.loads(out)["session_id"] == scene.a.session_id, err  # acts as A: the sweep is not all refusals
    commands = sorted({*click_commands(), *hook_forms()})
    assert cli_breaches(scene, CROSS, commands) == []


@pytest.mark.parametrize(("attacker", "victim"), PAIRINGS, ids=[f"{a}-names-{b}" for a, b in PAIRINGS])
def test_a_session_of_each_client_cannot_take_a_parked_session_of_another_whose_client_ended(
    world: World, attacker: str, victim: str
) -> None:
    """B's client has ended, its mail parked for a resume: no live process holds B, yet forged evidence
    of every client naming B still leaves A its own session."""
    scene = Scene(world, attacker, victim)
    scene.b.close()
    out, err = run_cli(scene, CROSS, ["whoami", "--json"])
    assert json.loads(out)["session_id"] == scene.a.session_id, err
    assert cli_breaches(scene, CROSS, [("inbox",)]) == []


@pytest.mark.parametrize(
    ("source", "caught"),
    [(PLANTED, "of B's was"), (PLANTED_READER, "printed B's unread mail")],
    ids=["claims B's mail", "prints B's mail"],
)
def test_a_planted_verb_that_takes_a_payloads_id_is_caught(
    scene: Scene, tmp_path: Path, monkeypatch: Any, source: str, caught: str
) -> None:
    plant = tmp_path / "plant"
    plant.mkdir()
    (plant / "planted.py").write_text(source)
    monkeypatch.syspath_prepend(str(plant))
    monkeypatch.setitem(app.COMMANDS, "planted", "planted:planted")
    commands = [c for c in click_commands() if c[0] in ("planted", "whoami")]
    assert ("planted",) in commands  # found through the registry, as any new verb is
    found = cli_breaches(scene, "payload", commands, plant, at_once=1)
    assert found and all(line.startswith("attend planted [payload]") for line in found), found
    assert any(caught in line for line in found), found
    if source == PLANTED_READER:  # B's state is as it was: only what it printed gives it away
        assert all("printed B's unread mail" in line for line in found), found


def test_every_hook_form_is_found_in_the_scripts_install_wires() -> None:
    assert {("inbox", "--drain", "--format", "hook"), ("wait", "--hook"), ("recall", "--hook")} <= set(hook_forms())
    assert {("hook", "edit"), ("hook", "commit")} <= set(hook_forms())  # the lease checks


# ---------------------------------------------------------------------- chat, at a real terminal

# Run the console entry's argv under a pseudo-terminal of its own (chat refuses a pipe before it
# asks who is calling): what it printed, then its exit status. A screen that opened instead would
# wait for keys; the caller's deadline ends it, and the closed terminal hangs it up.
PTY = """
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
out = b""
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
sys.stdout.write(out.decode("utf-8", "replace"))
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


@pytest.mark.parametrize("way", [*WAYS, "scrubbed"])
def test_chat_at_a_terminal_in_an_agent_sessions_tree_is_refused_however_it_names_another(
    world: World, way: str
) -> None:
    scene = Scene(world)
    if way == "scrubbed":  # every variable that says "agent" removed on the way down, and HOME moved
        prefix: list[str] = []
        env = {k: v for k, v in scene.a_env.items() if not k.startswith("CLAUDE")}
        env.update(HOME=str(world.tmp / "elsewhere"), CLAUDE_CONFIG_DIR="/nonexistent")
    else:
        prefix, env = scene.hostile(way)
    env["USER"] = "fixture-human"
    humans_before = sorted(p.name for p in (world.spool_root / "humans").glob("*"))
    box = world.tmp / "calls" / secrets.token_hex(6)
    child = Child(scene.a, [*prefix, sys.executable, "-c", PTY, "-c", RUNNER, "chat"], "", env, box)
    try:
        out, err = child.communicate()
    except AssertionError:
        child.kill()
        raise AssertionError("attend chat opened its screen in an agent session's tree") from None
    assert child.returncode in (1, 2), (child.returncode, out, err)
    assert "human's seat" in out or "for a human only" in out, out
    assert sorted(p.name for p in (world.spool_root / "humans").glob("*")) == humans_before
    assert scene.breaches() == []


# ---------------------------------------------------------------------- the inbox socket of `attend mcp`

# `attend mcp` with its stdin held open until the flag file appears, as its client holds it.
HOLD = """
import os, subprocess, sys, time
flag, argv = sys.argv[1], sys.argv[2:]
server = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
while not os.path.exists(flag) and server.poll() is None:
    time.sleep(0.05)
server.stdin.close()
sys.exit(server.wait())
"""


class Socket:
    """A Unix socket where Claude Code's inbox socket would be; it keeps what each post said."""

    def __init__(self, path: Path) -> None:
        import socket
        import threading

        self.posts: list[bytes] = []
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(str(path))
        self.server.listen(8)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            with conn:
                self.posts.append(conn.makefile("rb").read())


def _transcript(world: World, s: StandIn) -> None:
    from attend import identity

    path = identity.transcript_path(world.env, s.session_id, str(s.cwd))
    assert path
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("")


def test_the_inbox_socket_conduit_started_from_a_sessions_shell_with_anothers_environment_leaves_its_mail(
    world: World,
) -> None:
    from attend.conduits import inbox_socket

    scene = Scene(world)
    a, b = scene.a, scene.b
    for s in (a, b):
        _transcript(world, s)
    sock = Socket(world.tmp / "inbox.sock")
    b_env = {  # B's client's environment: its id, its pid, its inbox socket and token
        **scene.a_env,
        "CLAUDE_CODE_SESSION_ID": b.session_id,
        "CLAUDE_PID": str(b.pid),
        inbox_socket.SOCKET_ENV: str(world.tmp / "inbox.sock"),
        inbox_socket.TOKEN_ENV: "t0ken",
    }

    def serve_from(s: StandIn, name: str) -> Child:
        flag = world.tmp / f"{name}.done"
        argv = [sys.executable, "-c", HOLD, str(flag), sys.executable, "-c", RUNNER, "mcp"]
        return Child(s, argv, "", b_env, world.tmp / "calls" / name)

    def served(sid: str) -> bool:
        return inbox_socket.served_by(world.spool, sid) is not None

    hostile = serve_from(a, "from-a")
    wait_until(lambda: served(a.session_id) or served(b.session_id), "the conduit to serve a session")
    assert not served(b.session_id), "attend mcp in A's tree serves B's socket"
    assert not any(b"for B only" in post for post in sock.posts)
    (world.tmp / "from-a.done").touch()
    hostile.communicate()
    assert scene.pending in "".join(maildir(world, b.session_id, "new")), "B's mail was claimed"
    assert scene.breaches() == []
    # The harness would see it: B's own server posts B's mail to the socket.
    own = serve_from(b, "from-b")
    wait_until(lambda: any(b"for B only" in post for post in sock.posts), "B's own conduit to post B's mail")
    (world.tmp / "from-b.done").touch()
    own.communicate()


# ---------------------------------------------------------------------- MCP: every tool of the server's own list

TOOL_ARGS: dict[str, Callable[[Scene], dict[str, Any]]] = {
    "send": lambda s: {"message": "hi", "to": s.b.session_id, "on_behalf_of": s.b.session_id},
    "reply": lambda s: {"message": "hi", "re": s.pending},
    "inbox": lambda s: {"id": s.pending},
    "join": lambda s: {"name": "crewx"},
    "leave": lambda s: {"name": "crewx"},
    "mute": lambda s: {"target": s.b.session_id},
    "unmute": lambda s: {"target": s.b.session_id},
    "notify_subscribe": lambda s: {"kinds": ["open"]},
    "notify_unsubscribe": lambda s: {"subscription_id": "sub-none"},
    "inbox_wait": lambda s: {"seconds": 0},
    "lease": lambda s: {"action": "release", "globs": ["b-only.txt"]},  # B's lease: refused, or A's own
    "inbound": lambda s: {"action": "decline", "id": s.held},
    "search": lambda s: {"query": "secret for B"},  # B's direct mail is never among A's results
}


@pytest.mark.parametrize("way", WAYS)
def test_every_mcp_tool_acts_as_its_caller_or_is_refused(scene: Scene, way: str) -> None:
    prefix, env = scene.hostile(way)
    if prefix:  # forge the records in the folder the environment points at, for A's pid and this one's
        subprocess.run([*prefix, "/bin/true"], check=True, env=env, timeout=60)
    assert mcp_breaches(scene, way, env) == []


@pytest.mark.parametrize("scene", PAIRINGS, indirect=True, ids=[f"{a}-names-{b}" for a, b in PAIRINGS])
def test_every_mcp_tool_of_a_session_of_each_client_naming_one_of_another_acts_as_itself_or_is_refused(
    scene: Scene,
) -> None:
    b = scene.b.session_id
    env = {**scene.a_env, "CLAUDE_CODE_SESSION_ID": b, "CODEX_THREAD_ID": b, "GEMINI_SESSION_ID": b}
    assert mcp_breaches(scene, "threadId", env, claim=b) == []


def mcp_breaches(scene: Scene, way: str, env: dict[str, str], claim: str | None = None) -> list[str]:
    """Every tool of the server's own list called as `attend mcp` started by A would take it: the walk
    starts at A's client, whose child the server is. ``claim``: the session each call names, as the
    server takes Codex's ``_meta.threadId``."""
    spool = scene.world.spool

    def context() -> Context:
        return Context(spool=spool, env=env, cwd=str(scene.a.cwd), pid=scene.a.pid, payload_sid=claim)

    server = build_server(context)

    async def calls() -> list[str]:
        tools = [t.name for t in await server.list_tools()]
        assert {"send", "inbox", "inbox_wait", "join"} <= set(tools)
        out = []
        for name in tools:
            args = {**TOOL_ARGS.get(name, lambda s: {})(scene)}
            for extra in ({}, {"session_id": scene.b.session_id, "from_id": scene.b.session_id}):
                scene.plant()
                try:
                    printed = str(await server.call_tool(name, {**args, **extra}))
                except Exception as e:  # a refusal; what counts is what it changed, and what it said
                    printed = str(e)
                out += [f"mcp {name} {extra or ''} [{way}]: {breach}" for breach in scene.breaches()]
                out += [f"mcp {name} {extra or ''} [{way}]: {leak}" for leak in scene.leaks(printed)]
        return out

    return asyncio.run(calls())


# ---------------------------------------------------------------------- what only a human may do

HUMAN_ONLY = {  # what is asked, and the refusal's words (None: it acts as A, minting nothing)
    "sensors trust": (["sensors", "trust"], "approving project code to run"),
    "uninstall --purge": (["uninstall", "--purge"], "deleting the spool"),
    "a human mailbox": (["send", "--to", "Bodhi-alpha", "hi"], None),
}


def _project_config(world: World, s: StandIn) -> Path:
    path = s.cwd / ".claude" / "attend.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("sensors:\n  +lint:\n    script: ./tools/lint\n    interval: 60\n")
    script = s.cwd / "tools" / "lint"
    script.parent.mkdir(exist_ok=True)
    script.write_text("#!/bin/sh\necho ok\n")
    script.chmod(0o755)
    return path


@pytest.mark.parametrize("way", [*WAYS, "scrubbed"])
@pytest.mark.parametrize("action", sorted(HUMAN_ONLY))
def test_what_only_a_human_may_do_is_refused_from_an_agent_sessions_tree(scene: Scene, way: str, action: str) -> None:
    world, a = scene.world, scene.a
    _project_config(world, a)
    argv, says = HUMAN_ONLY[action]
    if way == "scrubbed":  # every variable that says "agent" removed on the way down, and HOME moved
        prefix: list[str] = []
        env = {k: v for k, v in scene.a_env.items() if not k.startswith("CLAUDE")}
        env.update(HOME=str(world.tmp / "elsewhere"), CLAUDE_CONFIG_DIR="/nonexistent")
    else:
        prefix, env = scene.hostile(way)
    env["USER"] = "Bodhi-alpha"  # the mailbox would be named after a session
    before = sorted(p.name for p in (world.spool_root / "humans").iterdir())
    box = world.tmp / "calls" / secrets.token_hex(6)
    child = Child(a, [*prefix, sys.executable, "-c", RUNNER, *argv], "", env, box)
    out, err = child.communicate()
    if says:  # refused, in one line
        assert child.returncode == 1 and out == "", (out, err)
        [line] = err.splitlines()
        assert says in line and "for a human only" in line, line
    else:  # acts as A: the name is the session's, and no mailbox is made for it
        assert child.returncode == 0 and "human" not in out, (out, err)
    assert not (world.home / ".config" / "attend" / "trusted.json").exists()
    assert scene.b_dir.is_dir()  # the spool is still there
    assert sorted(p.name for p in (world.spool_root / "humans").iterdir()) == before  # no mailbox minted
    assert scene.breaches() == []


def test_a_human_at_a_terminal_may_trust_and_purge_once_confirmed_there(world: World) -> None:
    s = world.session("pa")
    _project_config(world, s)
    rc, shown = in_pty(world, "sensors", "trust", answer="n", cwd=s.cwd)  # asked at the terminal: no
    assert rc == 1 and "not confirmed at the terminal" in shown, shown
    assert not (world.home / ".config" / "attend" / "trusted.json").exists()
    rc, shown = in_pty(world, "sensors", "trust", answer="y", cwd=s.cwd)
    assert rc == 0 and "./tools/lint" in shown, shown
    assert (world.home / ".config" / "attend" / "trusted.json").exists()
    (world.tmp / "target").mkdir()
    rc, shown = in_pty(world, "uninstall", "--purge", "--yes", "--target", str(world.tmp / "target"), answer="y")
    assert rc == 0 and "[y/N]" in shown, shown  # --yes skips nothing: confirmed at the terminal
    assert not world.spool_root.exists()


@pytest.mark.parametrize("action", ["sensors trust", "uninstall --purge"])
def test_what_only_a_human_may_do_needs_a_terminal_and_takes_no_answer_from_stdin(world: World, action: str) -> None:
    """No session anywhere above it, yet no terminal: a "yes" piped to stdin confirms nothing."""
    s = world.session("pa")
    _project_config(world, s)
    assert world.spool.root.is_dir()  # opening makes it
    argv, says = HUMAN_ONLY[action]
    extra = ["--yes"] if "--purge" in argv else []  # --yes skips nothing
    out = world.attend(*argv, *extra, stdin="y\nyes\n", cwd=s.cwd)
    assert out.returncode == 1 and out.stdout == "", (out.stdout, out.stderr)
    [line] = out.stderr.splitlines()
    assert says in line and "needs one at a terminal" in line, line
    assert not (world.home / ".config" / "attend" / "trusted.json").exists()
    assert world.spool_root.is_dir()


@needs_pid_namespace
def test_in_a_sandbox_a_scrubbed_environment_is_still_not_the_human(world: World) -> None:
    """Claude Code's Bash sandbox: no Claude process visible, and the command unsets every variable;
    the namespace's first process still shows it was started inside a session."""
    a = world.session("pa")
    enroll(world, a)
    _project_config(world, a)
    script = f'unset CLAUDECODE CLAUDE_CODE_SESSION_ID; "{ATTEND}" sensors trust; exit $?'  # sh stays pid 1
    out = subprocess.run(
        ["unshare", "-pf", "--mount-proc", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        env={**world.env, "CLAUDECODE": "1", "CLAUDE_CODE_SESSION_ID": a.session_id},
        cwd=str(a.cwd),
    )
    assert out.returncode == 1 and "for a human only" in out.stderr, out.stderr
    assert not (world.home / ".config" / "attend" / "trusted.json").exists()


@needs_pid_namespace
def test_in_a_sandbox_a_forged_record_does_not_make_another_session(world: World) -> None:
    """In A's sandbox no Claude is visible; a command writes a session record naming B for itself,
    in a claude dir of its own, and execs attend: the namespace was started for A, so not B."""
    a, b = world.session("pa"), world.session("pb")
    enroll(world, a)
    enroll(world, b)
    folder = world.tmp / "forged" / "sessions"
    forge = [sys.executable, "-c", FORGE, str(folder), b.session_id, str(b.cwd), ""]
    out = subprocess.run(  # the sandbox's first process is a shell; the forger is its child
        ["unshare", "-pf", "--mount-proc", "sh", "-c", '"$@"; exit $?', "sh", *forge, ATTEND, "whoami", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **world.env,
            "CLAUDECODE": "1",
            "CLAUDE_CODE_SESSION_ID": a.session_id,
            "CLAUDE_CONFIG_DIR": str(folder.parent),
        },
        cwd=str(a.cwd),
    )
    assert out.returncode == 0, out.stderr
    who = json.loads(out.stdout)
    assert (who["session_id"], who["resolved_by"]) == (a.session_id, "sandbox"), who  # A, by the sandbox rule


# ---------------------------------------------------------------------- a tool left without its parent

# The orphan: started from A's tool by the shell idiom given, with a cleared environment (env -i). It
# waits until the tool's shell has exited (so it was handed to init), then runs each planned command,
# also with a cleared environment, and writes their exit codes and output to a file. With "drop" it
# first points stdin, stdout and stderr at /dev/null, as the idiom's redirections do: then nothing of
# the tool's is left open in it.
ORPHAN = r"""
import json, os, subprocess, sys, time
tool, box, fds, plan = int(sys.argv[1]), sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
if fds == "drop":
    null = os.open(os.devnull, os.O_RDWR)
    for n in (0, 1, 2):
        os.dup2(null, n)
def ended(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
end = time.monotonic() + 60
while not ended(tool) and time.monotonic() < end:
    time.sleep(0.02)
out = []
for env, cwd, argv in plan:
    argv = ["env", "-i", *[f"{k}={v}" for k, v in env.items()], *argv]
    r = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, cwd=cwd)
    out.append([r.returncode, r.stdout, r.stderr])
with open(box + "/results.tmp", "w") as f:
    json.dump(out, f)
os.replace(box + "/results.tmp", box + "/results")
"""

# How a tool's shell leaves a process behind: each line starts the orphan (ORPHAN's arguments follow).
SHAPES = {
    "setsid -f": "setsid -f {orphan}",
    "nohup & disown": "nohup {orphan} & disown",
    "double fork": "( {orphan} & )",
}


def orphaned(scene: Scene, shape: str, fds: str, plan: list[tuple[dict[str, str], str, list[str]]]) -> list[Any]:
    """Run ``plan`` from an orphan A's tool leaves by ``shape``; each command's [exit code, stdout, stderr]."""
    world = scene.world
    box = world.tmp / "orphans" / secrets.token_hex(4)
    box.mkdir(parents=True)
    clean = {k: world.env[k] for k in ("HOME", "PATH", "USER")}
    orphan = " ".join(
        shlex.quote(a) for a in ["env", "-i", *[f"{k}={v}" for k, v in clean.items()], sys.executable, "-c", ORPHAN]
    )
    line = SHAPES[shape].format(orphan=f'{orphan} "$$" {shlex.quote(str(box))} {fds} {shlex.quote(json.dumps(plan))}')
    started = scene.a.run(["bash", "-c", line], env=scene.a.tool_env(), timeout=120)
    assert started.rc == 0, started.stderr
    wait_until(lambda: (box / "results").exists(), "the orphan's commands to end")
    results: list[Any] = json.loads((box / "results").read_text())
    return results


FDS = pytest.mark.parametrize("fds", ["kept", "drop"], ids=["its tool's output kept", "everything redirected"])


@FDS
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_tool_left_without_its_parent_is_never_the_human_nor_a_parked_session(
    world: World, shape: str, fds: str
) -> None:
    """A's tool leaves a process behind (``setsid -f``, ``nohup … & disown``, a double fork), its
    environment cleared: still A where what it inherited ties it to A's client, else refused (attend
    cannot tell who calls), and never the human: no script approved, no spool purged, no mailbox made.
    Nor does a record it writes for itself naming B, parked, make it B."""
    orphan_sweep(Scene(world), shape, fds)


# Each other client once the caller (~4 s each: CI runs these, the developer loop keeps Claude Code's above).
@pytest.mark.slow
@FDS
@pytest.mark.parametrize(("attacker", "victim"), PAIRINGS, ids=[f"{a}-names-{b}" for a, b in PAIRINGS])
def test_a_tool_of_each_client_left_without_its_parent_is_never_the_human_nor_a_parked_session(
    world: World, attacker: str, victim: str, fds: str
) -> None:
    orphan_sweep(Scene(world, attacker, victim), "setsid -f", fds)


def orphan_sweep(scene: Scene, shape: str, fds: str) -> None:
    world = scene.world
    scene.b.close()  # B's client ended: its mail is parked for a resume
    scene.reset()
    _project_config(world, scene.a)
    humans = sorted(p.name for p in (world.spool_root / "humans").iterdir())
    clean = {k: world.env[k] for k in ("HOME", "PATH", "USER")}
    a_cwd, b = str(scene.a.cwd), scene.b
    forge = [sys.executable, "-c", FORGE, str(world.home / ".claude" / "sessions"), b.session_id, str(b.cwd), ""]
    plan = [
        (clean, a_cwd, [ATTEND, "whoami", "--json"]),
        (clean, a_cwd, [ATTEND, "sensors", "trust"]),
        (clean, a_cwd, [ATTEND, "uninstall", "--purge", "--yes", "--target", str(scene.target)]),
        ({**clean, "USER": scene.display}, a_cwd, [ATTEND, "send", "--to", scene.display, "hi"]),
        (clean, a_cwd, [*forge, ATTEND, "whoami", "--json"]),
        (clean, a_cwd, [*forge, ATTEND, "inbox", "--drain"]),
    ]
    whoami, trusted, purged, sent, as_b, drained = orphaned(scene, shape, fds, plan)
    if fds == "kept":  # its stdout is the tool's pipe, which A's client reads: A's
        assert whoami[0] == 0 and json.loads(whoami[1])["session_id"] == scene.a.session_id, whoami
        assert "kin: " in json.loads(whoami[1])["evidence"], whoami
        assert sent[0] == 0 and "human" not in sent[1], sent  # as A, to the session
    else:  # nothing ties it to A any more: refused, in one line
        assert whoami[0] == 1 and "cannot tell who is calling" in json.loads(whoami[1])["error"]["message"], whoami
        rc, out, err = sent
        assert rc == 1 and out == "" and "cannot tell who is calling" in err, sent
        assert len(err.splitlines()) == 1, err
    for rc, out, err in (trusted, purged):
        assert rc == 1 and out == "" and "for a human only" in err, (rc, out, err)
    assert as_b[0] == 1 and "a record alone does not make a session" in json.loads(as_b[1])["error"]["message"], as_b
    assert "for B only" not in drained[1], drained  # refused: nothing drained
    assert not (world.home / ".config" / "attend" / "trusted.json").exists()
    assert scene.b_dir.is_dir()  # the spool is still there
    assert sorted(p.name for p in (world.spool_root / "humans").iterdir()) == humans  # no mailbox minted
    assert scene.pending in "".join(maildir(world, b.session_id, "new"))  # B's mail waits for B
    assert scene.breaches() == []


# ---------------------------------------------------------------------- names cannot be shadowed


def test_a_session_cannot_mint_a_human_mailbox_named_after_another_session(world: World) -> None:
    """`USER=Nico-alpha attend send --to Nico-alpha x` from a session: the message reaches the session
    Nico-alpha, no human mailbox of that name is made, and later sends still reach the session."""
    a, nico = world.session("pa"), world.session("pn", name="Nico")
    enroll(world, a)
    enroll(world, nico)
    shown = sessions.registered_names(world.spool)[nico.session_id]
    r = a.attend("send", "--json", "--to", shown, "x", env={"USER": shown})
    assert r.rc == 0, r.stderr
    sent = json.loads(r.stdout)
    assert sent["to"] == nico.session_id and sent["humans"] == []
    assert not (world.spool_root / "humans" / shown).exists()
    again = world.attend("send", "--json", "--to", shown, "and again")
    assert json.loads(again.stdout)["to"] == nico.session_id, again.stderr


def test_a_human_name_that_is_also_a_sessions_name_needs_the_explicit_form(world: World) -> None:
    human = world.attend("send", "hello", env={"USER": "nico"})  # the human nico has a mailbox first
    assert human.returncode == 0, human.stderr
    nico = world.session("pn", name="Nico")  # then a session shows the same name
    enroll(world, nico)
    bare = world.attend("send", "--to", "nico", "which one?")
    assert bare.returncode == 2 and bare.stdout == ""
    [line] = bare.stderr.splitlines()
    assert "names a human and also a session" in line and "user:nico" in line
    explicit = world.attend("send", "--json", "--to", "user:nico", "you")
    assert explicit.returncode == 0, explicit.stderr
    assert json.loads(explicit.stdout)["humans"] == ["nico"]


def test_send_says_when_a_name_resolved_to_a_human(world: World) -> None:
    assert world.attend("send", "hi", env={"USER": "dana"}).returncode == 0  # dana has a mailbox now
    text = world.attend("send", "--to", "dana", "for dana")
    assert text.returncode == 0 and text.stdout.rstrip().endswith("; dana is a human, not a session"), text.stdout
    doc = world.attend("send", "--json", "--to", "dana", "for dana")
    assert json.loads(doc.stdout)["humans"] == ["dana"]


def test_an_agent_cannot_address_a_human_into_being(world: World) -> None:
    a = world.session("pa")
    enroll(world, a)
    r = a.attend("send", "--to", "user:ghost", "boo", env={"USER": "ghost"})
    assert r.rc == 1 and "no human named 'ghost' has a mailbox" in r.stderr
    assert not (world.spool_root / "humans" / "ghost").exists()
