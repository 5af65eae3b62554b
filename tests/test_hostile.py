"""A hostile spool: what a user (or another program) may plant below the spool root must never turn
attend against the user's own files, nor hang it (docs/architecture/spool.md).

- A symlink planted where retention walks (``rooms/<room>``, ``rooms/<room>/tmp``,
  ``sessions/<sid>/tmp``) is never followed: `attend cleanup`, ``retention.run``, ``retention.sweep``
  and the running loop's sweep leave the link's target byte for byte as it was.
- A maildir folder (``new/``, ``claimed/``, ``cur/``) swapped for a symlink under a running loop or a
  drain: nothing in the link's target is moved, renamed, removed or added to.
- A FIFO planted where attend reads a file (a room record, the log, an MCP marker, an enrollment,
  a registry entry) never hangs a command: each finishes, without a traceback; the drain hook exits
  0 (it fails open), anything else succeeds skipping the file or exits 1 with one line naming it.

The helpers below are local copies of tests/support.py's (the loop runner, polling with a deadline,
the Stop payload), so this file also runs unchanged against the tree before the gate rewrite.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from attend.domain import retention
from attend.errors import AttendError
from attend.spool import Spool
from attend.testing.standin import Result, StandIn

if TYPE_CHECKING:
    from tests.conftest import World

ATTEND = shutil.which("attend", path=str(Path(sys.executable).parent)) or "attend"
DEADLINE = 60.0  # for conditions that must come true; generous, many processes share two cores
HANG = 20.0  # a command still running after this long on a planted FIFO is hung on it
QUIET = 30.0  # the longest a test waits for a loop to act on a planted link before judging it anyway
DAY = 86400.0
USER_BYTES = b"the user's own notes, not attend's\n"


# ---------------------------------------------------------------------- helpers (local copies)


def wait_until(check: Callable[[], object], what: str, timeout: float = DEADLINE) -> object:
    """Poll ``check`` until it is truthy; the deadline catches a hang, it measures nothing."""
    end = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def payload(sid: str, active: bool = False) -> str:
    return json.dumps(
        {"session_id": sid, "hook_event_name": "Stop", "stop_hook_active": active, "background_tasks": []}
    )


def enroll(s: StandIn) -> None:
    """Enroll a session by `attend join` (a channel of its own), without a loop."""
    r = s.attend("join", f"c{s.pid}")
    assert r.rc == 0, r.stderr


class Loop:
    """``attend run`` as a child of a stand-in session, as Monitor runs it; stdout and stderr go to
    files the test reads as they grow."""

    count = itertools.count()

    def __init__(self, world: World, session: StandIn, wait: bool = True) -> None:
        base = world.tmp / f"hostile-loop{next(Loop.count)}"
        self.out, self.err, self.pidfile = (Path(f"{base}.{x}") for x in ("out", "err", "pid"))
        self.session = session
        self.result: Result | None = None
        script = f'echo $$ > "{self.pidfile}"; exec "{ATTEND}" run > "{self.out}" 2> "{self.err}"'
        self.thread = threading.Thread(target=self._host, args=(script,), daemon=True)
        self.thread.start()
        wait_until(lambda: self.pidfile.exists() and self.pidfile.read_text().strip(), "the loop to start")
        self.pid = int(self.pidfile.read_text())
        if wait:
            self.wait_for(lambda lines: lines, "the banner")

    def _host(self, script: str) -> None:
        self.result = self.session.run(["sh", "-c", script], timeout=600)

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
        return self.thread.is_alive()

    def wait_for(self, check: Callable[[list[str]], object], what: str, timeout: float = DEADLINE) -> list[str]:
        wait_until(lambda: check(self.lines()), f"{what}; loop printed {self.lines()!r} {self.stderr()!r}", timeout)
        return self.lines()

    def stop(self) -> int:
        """SIGTERM, then wait for the exit: the loop finishes the step it is in first."""
        if self.thread.is_alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
            self.thread.join(DEADLINE)
        assert self.result is not None, "the loop did not exit on SIGTERM"
        return self.result.rc

    def kill(self) -> None:
        if self.thread.is_alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            self.thread.join(DEADLINE)


@pytest.fixture
def sensor_loops(world: World) -> Iterator[Callable[..., Loop]]:
    started: list[Loop] = []

    def start(session: StandIn, wait: bool = True) -> Loop:
        loop = Loop(world, session, wait)
        started.append(loop)
        return loop

    yield start
    for loop in started:
        loop.kill()


def has(text: str) -> Callable[[list[str]], bool]:
    return lambda lines: any(text in line for line in lines)


_seq = itertools.count()


def record_name(at: float | None = None) -> str:
    """A unique name in the spool's grammar (attend.spool.unique_name) for time ``at``."""
    sec, usec = divmod(int((time.time() if at is None else at) * 1_000_000), 1_000_000)
    return f"{sec:010d}.M{usec:06d}P{os.getpid()}Q{next(_seq)}R{secrets.token_hex(4)}.hostile"


def snapshot(root: Path) -> dict[str, tuple[str, bytes | None]]:
    """Every path below ``root`` (never following a link), with its kind and a file's bytes."""
    out: dict[str, tuple[str, bytes | None]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path).encode())
            elif path.is_dir():
                out[rel] = ("dir", None)
            elif path.is_file():
                out[rel] = ("file", path.read_bytes())
            else:
                out[rel] = ("other", None)
    return out


def backdate(root: Path, seconds: float) -> None:
    """Set ``root`` and everything below it (links themselves included) back by ``seconds``."""
    when = time.time() - seconds
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            os.utime(os.path.join(dirpath, name), (when, when), follow_symlinks=False)
    os.utime(root, (when, when), follow_symlinks=False)


def no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text, text


def quarantined_user_files(world: World) -> list[str]:
    """Files in the spool's quarantine/ that came from the user's folder (by their bytes)."""
    folder = world.spool_root / "quarantine"
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    hits = []
    for name in names:
        path = folder / name
        with contextlib.suppress(OSError):
            if path.is_file() and USER_BYTES in path.read_bytes():
                hits.append(name)
    return hits


def repair_cursor(world: World, sid: str, room: str = "open") -> str:
    """The loop's repair cursor for ``room``: the newest record its repair pass has looked at."""
    try:
        raw = json.loads((world.spool_root / "sessions" / sid / "repair.json").read_text())
    except (OSError, ValueError):
        return ""
    return str(raw.get(room, "")) if isinstance(raw, dict) else ""


def names_in(folder: Path) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def sent_id(world: World, body: str) -> str:
    out = world.attend("send", "--json", body)
    assert out.returncode == 0, out.stderr
    return str(json.loads(out.stdout)["id"])


# ---------------------------------------------------------------------- 1. retention never follows a link


def user_folder(where: Path, many: int = 40) -> Path:
    """A folder outside the spool holding a user's files, all 40 days old: plain files, and ``new/``
    and ``tmp/`` subfolders whose names look like the spool's own (old record names in new/)."""
    where.mkdir(parents=True)
    for i in range(many):
        (where / f"note-{i:02d}.txt").write_bytes(USER_BYTES + f"note {i}\n".encode())
    (where / "new").mkdir()
    for i in range(many):
        (where / "new" / record_name(time.time() - 40 * DAY - i)).write_bytes(USER_BYTES + f"record {i}\n".encode())
    (where / "tmp").mkdir()
    for i in range(10):
        (where / "tmp" / f"draft-{i}").write_bytes(USER_BYTES + f"draft {i}\n".encode())
    backdate(where, 40 * DAY)
    return where


def plant_link(link: Path, target: Path) -> None:
    """Replace ``link`` (a folder, if there is one) with a symlink to ``target``, made to look old."""
    if link.is_dir() and not link.is_symlink():
        shutil.rmtree(link)
    link.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.symlink(target, link)
    when = time.time() - DAY
    os.utime(link, (when, when), follow_symlinks=False)


def stale_control(world: World) -> Path:
    """A stale tmp file in a real room: retention that really ran removes it (a positive control)."""
    folder = world.spool_root / "rooms" / "control-room" / "tmp"
    folder.mkdir(parents=True, mode=0o700)
    os.chmod(folder.parent, 0o700)
    control = folder / "stale"
    control.write_bytes(b"abandoned")
    when = time.time() - 37 * 3600
    os.utime(control, (when, when))
    return control


SITES = ["rooms/@x", "rooms/@x of a live channel", "rooms/open/tmp", "sessions/<sid>/tmp"]
RUNNERS = ["attend cleanup", "retention.run", "retention.sweep", "the loop's sweep"]


def plant_retention_link(world: World, site: str, target: Path) -> Path:
    """Plant the site's symlink to ``target``; returns the link's path."""
    root = world.spool_root
    assert world.attend("send", "a room record, so the spool and #open exist").returncode == 0
    if site == "rooms/@x":
        link = root / "rooms" / "@x"  # the room of a channel that does not exist: an orphan room
    elif site == "rooms/@x of a live channel":
        out = world.attend("join", "x")
        assert out.returncode == 0, out.stderr
        link = root / "rooms" / "@x"
    elif site == "rooms/open/tmp":
        link = root / "rooms" / "open" / "tmp"
    else:
        other = world.session("other")  # a live, enrolled session whose tmp/ is swapped
        enroll(other)
        link = root / "sessions" / other.session_id / "tmp"
    plant_link(link, target)
    return link


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("site", SITES)
def test_retention_never_deletes_through_a_symlink_planted_in_the_spool(
    world: World, sensor_loops: Callable[..., Loop], site: str, runner: str
) -> None:
    target = user_folder(world.tmp / "users-folder")
    plant_retention_link(world, site, target)
    control = stale_control(world)
    before = snapshot(target)
    succeeded = True
    if runner == "attend cleanup":
        out = world.attend("cleanup", timeout=HANG * 3)
        no_traceback(out.stdout, out.stderr)
        assert out.returncode in (0, 1), out.stderr
        if out.returncode == 1:
            assert len(out.stderr.strip().splitlines()) == 1, out.stderr
        succeeded = out.returncode == 0
    elif runner in ("retention.run", "retention.sweep"):
        spool = Spool.open(world.spool_root)
        try:
            if runner == "retention.run":
                retention.run(spool, retention.Policy.default(), is_live=lambda sid: True)
            else:
                retention.sweep(spool, is_live=lambda sid: True)
        except (OSError, AttendError) as e:  # refusing, with an error naming the link, is allowed
            succeeded = False
            print(f"retention refused: {e}")
    else:
        s = world.session("proj")
        loop = sensor_loops(s)  # its first housekeeping runs the bounded sweep

        def swept() -> bool:
            gone = not control.exists() or snapshot(target) != before
            return gone or "cleanup" in loop.stderr() or not loop.running()

        wait_until(swept, f"the loop's sweep; loop printed {loop.lines()!r} {loop.stderr()!r}")
        loop.stop()
        no_traceback(loop.stderr())
        succeeded = "cleanup" not in loop.stderr()
    assert snapshot(target) == before, f"retention changed the target of the symlink at {site}"
    if succeeded:
        assert not control.exists(), "the positive control: a retention that ran removes a stale tmp file"


# ---------------------------------------------------------------------- 2. a maildir folder swapped for a link


def swap_for_link(world: World, sid: str, sub: str) -> Path:
    """Rename the session's real ``sub`` folder away, and put a symlink to a user's folder (holding
    one file) in its place; returns the user's folder."""
    folder = world.spool_root / "sessions" / sid / sub
    outside = world.tmp / f"users-{sub}"
    outside.mkdir()
    (outside / "notes.txt").write_bytes(USER_BYTES)
    folder.rename(world.tmp / f"moved-away-{sub}")
    os.symlink(outside, folder)
    return outside


@pytest.mark.parametrize("sub", ["new", "claimed", "cur"])
def test_a_running_loop_never_touches_the_target_of_a_maildir_folder_swapped_for_a_symlink(
    world: World, sensor_loops: Callable[..., Loop], sub: str
) -> None:
    s = world.session("proj")
    loop = sensor_loops(s)
    world.attend("send", "before the swap")
    loop.wait_for(has("before the swap"), "the first message")  # every folder is in use (and cached)
    outside = swap_for_link(world, s.session_id, sub)
    before = snapshot(outside)
    name = sent_id(world, "after the swap")
    err_before = len(loop.stderr())
    new = world.spool_root / "sessions" / s.session_id / "new"
    touched: list[object] = []

    def said(*words: str) -> bool:
        return any(w in loop.stderr()[err_before:] for w in words)

    def acted() -> bool:
        now = snapshot(outside)
        if now != before:
            touched.append(now)  # even for a moment: a delivery renamed through the link, then out
        if touched or not loop.running():
            return True
        # A repair pass looked at the message (and the recovery of claimed/ that follows it in the
        # same housekeeping runs before SIGTERM takes effect) ...
        repaired = repair_cursor(world, s.session_id) >= name or said("repair", "recover")
        # ... and, if its sender could link it, the loop tried to show it.
        pending = name in names_in(new)
        return repaired and (not pending or has("after the swap")(loop.lines()) or said("deliver"))

    with contextlib.suppress(AssertionError):  # a loop that stays quiet is judged as it stands after QUIET
        wait_until(acted, "the loop to act after the swap", QUIET)
    loop.stop()
    no_traceback(loop.stderr())
    assert not touched, f"the loop changed the target of {sub}/ for a moment: {touched[0]!r}"
    assert snapshot(outside) == before, f"the loop changed the target of the symlink at {sub}/"
    assert quarantined_user_files(world) == [], "the user's file was moved into quarantine/"
    assert name not in "".join(names_in(outside))


@pytest.mark.parametrize("sub", ["new", "claimed", "cur"])
def test_a_drain_never_touches_the_target_of_a_maildir_folder_swapped_for_a_symlink(world: World, sub: str) -> None:
    s = world.session("proj")
    enroll(s)
    world.attend("send", "before the swap")
    first = world.attend("inbox", "--drain", "--format", "hook", stdin=payload(s.session_id), timeout=HANG)
    assert "before the swap" in first.stdout, first.stderr  # every folder is in use
    outside = swap_for_link(world, s.session_id, sub)
    before = snapshot(outside)
    name = sent_id(world, "after the swap")
    try:
        out = world.attend("inbox", "--drain", "--format", "hook", stdin=payload(s.session_id), timeout=HANG)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the drain hung on a {sub}/ swapped for a symlink")
    no_traceback(out.stdout, out.stderr)
    assert out.returncode == 0, out.stderr
    assert len(out.stderr.strip().splitlines()) <= 1, out.stderr
    assert snapshot(outside) == before, f"the drain changed the target of the symlink at {sub}/"
    assert quarantined_user_files(world) == [], "the user's file was moved into quarantine/"
    assert name not in "".join(names_in(outside))


# ---------------------------------------------------------------------- 3. a FIFO never hangs a reader


@dataclass
class Outcome:
    rc: int
    stdout: str
    stderr: str


def human(world: World, *args: str, stdin: str = "") -> Outcome:
    """`attend` run by the human at a terminal, bounded by HANG."""
    try:
        out = world.attend(*args, stdin=stdin, timeout=HANG)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`attend {' '.join(args)}` hung (still running after {HANG:.0f} s)")
    return Outcome(out.returncode, out.stdout, out.stderr)


def as_session(s: StandIn, *args: str, stdin: str = "") -> Outcome:
    """`attend` run as a child of stand-in session ``s``, bounded by HANG."""
    out = s.run([ATTEND, *args], stdin=stdin, timeout=HANG)
    if out.rc == 127 and "timed out after" in out.stderr:
        pytest.fail(f"`attend {' '.join(args)}` in a session hung (still running after {HANG:.0f} s)")
    return Outcome(out.rc, out.stdout, out.stderr)


def drain_hook(world: World, s: StandIn) -> Outcome:
    return human(world, "inbox", "--drain", "--format", "hook", stdin=payload(s.session_id))


def plant_fifo(path: Path) -> None:
    """Replace ``path`` (if it is a file) with a FIFO."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    os.mkfifo(path, 0o600)


def judged(out: Outcome, fifo: Path, hook: bool = False) -> None:
    """Finished (the caller bounded it); no traceback; a hook exits 0; anything else succeeds, or
    exits 1 with one line naming the planted file by its path (``…/rooms/open/new/<id>``)."""
    print(f"outcome: rc={out.rc} stdout={out.stdout!r} stderr={out.stderr!r}")
    no_traceback(out.stdout, out.stderr)
    if hook:
        assert out.rc == 0, out.stderr
        return
    assert out.rc in (0, 1), (out.rc, out.stderr)
    if out.rc == 1:
        named = f"{fifo.parent.name}/{fifo.name}"  # the path's last two parts, whatever the root is spelt as
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and named in lines[0], f"want one line naming {fifo}: {out.stderr!r}"


ROOM_RECORD_READERS = [
    "inbox",
    "inbox --all",
    "inbox <id>",
    "reply --re <id>",
    "join (its cold start reads #open)",
    "tail --count 1",
    "the loop's repair pass",
]


@pytest.mark.parametrize("reader", ROOM_RECORD_READERS)
def test_a_fifo_as_a_room_record_never_hangs_a_reader(
    world: World, sensor_loops: Callable[..., Loop], reader: str
) -> None:
    # From another human: a reader never lists its own messages.
    assert world.attend("send", "an ordinary record first", env={"USER": "another-human"}).returncode == 0
    new = world.spool_root / "rooms" / "open" / "new"
    if reader == "tail --count 1":
        out_path, err_path = world.tmp / "tail.out", world.tmp / "tail.err"
        with out_path.open("wb") as out_f, err_path.open("wb") as err_f:
            proc = subprocess.Popen(
                [ATTEND, "tail", "--count", "1"],
                stdin=subprocess.DEVNULL,
                stdout=out_f,
                stderr=err_f,
                env=world.env,
                cwd=str(world.project("proj")),
            )
        try:
            wait_until(lambda: b"tailing" in err_path.read_bytes() or proc.poll() is not None, "tail to start")
            fifo = new / record_name()
            plant_fifo(fifo)
            assert world.attend("send", "after the fifo").returncode == 0
            try:
                rc = proc.wait(timeout=HANG)
            except subprocess.TimeoutExpired:
                pytest.fail(f"`attend tail --count 1` hung on the FIFO at {fifo}")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        out = Outcome(rc, out_path.read_text(), err_path.read_text())
        judged(out, fifo)
        if rc == 0:
            assert "after the fifo" in out.stdout, out
        return
    if reader == "the loop's repair pass":
        s = world.session("proj")
        loop = sensor_loops(s)
        fifo = new / record_name()
        plant_fifo(fifo)
        name = sent_id(world, "after the fifo")
        loop.wait_for(has("after the fifo"), "the message (linked by its sender)")
        with contextlib.suppress(AssertionError):
            wait_until(
                lambda: repair_cursor(world, s.session_id) >= name or fifo.name in loop.stderr(),
                "the repair pass to get past the FIFO",
                HANG + 10,
            )
        if not (repair_cursor(world, s.session_id) >= name or fifo.name in loop.stderr()):
            pytest.fail(f"the loop's repair pass hung on the FIFO at {fifo}; loop said {loop.stderr()!r}")
        world.attend("send", "the loop still listens")
        loop.wait_for(has("the loop still listens"), "the loop to go on after the FIFO", HANG)
        assert loop.stop() == 0
        no_traceback(loop.stderr())
        return
    fifo = new / record_name()
    plant_fifo(fifo)
    if reader == "inbox":
        out = human(world, "inbox")
    elif reader == "inbox --all":
        out = human(world, "inbox", "--all")
    elif reader == "inbox <id>":
        out = human(world, "inbox", fifo.name)
    elif reader == "reply --re <id>":
        out = human(world, "reply", "--re", fifo.name, "an answer")
    else:
        s = world.session("late")
        out = as_session(s, "join", "latecomers")
    judged(out, fifo)
    if reader in ("inbox", "inbox --all") and out.rc == 0:
        assert "an ordinary record first" in out.stdout  # the rest of the room is still listed


LOG_READERS = ["attend log", "the drain hook (reporting a bad delivery)"]


@pytest.mark.parametrize("reader", LOG_READERS)
def test_a_fifo_as_the_log_never_hangs_a_reader_or_writer(world: World, reader: str) -> None:
    s = world.session("proj")
    enroll(s)
    fifo = world.spool_root / "log" / "attend.log"
    plant_fifo(fifo)
    if reader == "attend log":
        judged(human(world, "log"), fifo)
        return
    world.attend("send", "pending")
    junk = world.spool_root / "sessions" / s.session_id / "new" / record_name(time.time() - 60)
    junk.write_bytes(b"not a signal")  # the drain sets it aside and reports that, into the log
    out = drain_hook(world, s)
    judged(out, fifo, hook=True)
    assert "pending" in out.stdout, out.stderr


MARKER_READERS = ["the drain hook", "peers", "status (in the session)", "the loop's banner"]


@pytest.mark.parametrize("reader", MARKER_READERS)
def test_a_fifo_as_an_mcp_marker_never_hangs_a_reader(
    world: World, sensor_loops: Callable[..., Loop], reader: str
) -> None:
    s = world.session("proj")
    enroll(s)
    fifo = world.spool_root / "sessions" / s.session_id / "mcp" / f"{os.getpid()}.json"
    plant_fifo(fifo)
    if reader == "the drain hook":
        world.attend("send", "pending")
        out = drain_hook(world, s)
        judged(out, fifo, hook=True)
        assert "pending" in out.stdout, out.stderr
    elif reader == "peers":
        judged(human(world, "peers"), fifo)
    elif reader == "status (in the session)":
        judged(as_session(s, "status"), fifo)
    else:
        loop = sensor_loops(s, wait=False)
        with contextlib.suppress(AssertionError):
            loop.wait_for(lambda lines: lines or not loop.running(), "the banner", HANG)
        if not loop.lines() and loop.running():
            pytest.fail(f"`attend run` hung on the FIFO at {fifo} before its banner")
        loop.stop()
        no_traceback(loop.stderr())


ENROLLMENT_READERS = [
    "the drain hook",
    "the drain hook after a /clear",
    "send (in the session)",
    "peers",
    "status (in the session)",
    "inbox (in the session)",
    "join (in the session)",
    "the loop's start",
]


@pytest.mark.parametrize("reader", ENROLLMENT_READERS)
def test_a_fifo_as_an_enrollment_never_hangs_a_reader(
    world: World, sensor_loops: Callable[..., Loop], reader: str
) -> None:
    s = world.session("proj")
    enroll(s)
    world.attend("send", "pending")
    fifo = world.spool_root / "sessions" / s.session_id / "enrolled"
    plant_fifo(fifo)
    if reader == "the drain hook":
        judged(drain_hook(world, s), fifo, hook=True)
    elif reader == "the drain hook after a /clear":
        new = str(uuid.uuid4())
        s.write_record(session_id=new)  # the same Claude process under a new id: the drain moves the old one
        judged(as_session(s, "inbox", "--drain", "--format", "hook", stdin=payload(new)), fifo, hook=True)
    elif reader == "send (in the session)":
        judged(as_session(s, "send", "from a session whose enrollment is a FIFO"), fifo)
    elif reader == "peers":
        judged(human(world, "peers"), fifo)
    elif reader == "status (in the session)":
        judged(as_session(s, "status"), fifo)
    elif reader == "inbox (in the session)":
        judged(as_session(s, "inbox"), fifo)
    elif reader == "join (in the session)":
        judged(as_session(s, "join", "another"), fifo)
    else:
        loop = sensor_loops(s, wait=False)
        with contextlib.suppress(AssertionError):
            loop.wait_for(lambda lines: lines or not loop.running(), "the banner", HANG)
        if not loop.lines() and loop.running():
            pytest.fail(f"`attend run` hung on the FIFO at {fifo} before its banner")
        loop.stop()
        no_traceback(loop.stderr())


REGISTRY_READERS = ["peers", "send --channel x", "send (in the session)", "join (in the session)", "send --to <name>"]


@pytest.mark.parametrize("reader", REGISTRY_READERS)
def test_a_fifo_as_a_registry_entry_never_hangs_a_reader(world: World, reader: str) -> None:
    s = world.session("proj")
    enroll(s)
    assert world.attend("join", "x").returncode == 0
    entries = [p for p in (world.spool_root / "registry").iterdir() if p.name.endswith(".json")]
    assert len(entries) == 1, entries  # the project's registry, where the session holds its ordinal
    fifo = entries[0]
    plant_fifo(fifo)
    if reader == "peers":
        out = human(world, "peers")
    elif reader == "send --channel x":
        out = as_session(s, "send", "--channel", "x", "to the channel")
    elif reader == "send (in the session)":
        out = as_session(s, "send", "to everyone")
    elif reader == "join (in the session)":
        out = as_session(s, "join", "another")
    else:
        out = human(world, "send", "--to", "nobody-by-that-name", "to a name")
        no_traceback(out.stdout, out.stderr)
        # No such name: a not-found error is the right answer, as long as it came back.
        return
    judged(out, fifo)
