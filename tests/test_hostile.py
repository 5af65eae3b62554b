"""A hostile spool: what a user (or another program) may plant below the spool root must never turn
attend against the user's own files, nor hang it (docs/architecture/spool.md).

- A symlink planted where retention walks (``rooms/<room>``, ``rooms/<room>/tmp``,
  ``sessions/<sid>/tmp``) is never followed: `attend cleanup`, ``retention.run``, ``retention.sweep``
  and the running loop's sweep leave the link's target byte for byte as it was, say so naming the
  link, and still clean the rest of the spool.
- A maildir folder (``new/``, ``claimed/``, ``cur/``) swapped for a symlink under a running loop or a
  drain: nothing in the link's target is moved, renamed, removed or added to; the loop says it
  refused, naming the folder, and goes on running.
- A FIFO planted where attend reads a file (a room record, the log, an MCP marker, an enrollment,
  a registry entry) never hangs a command, nor draws a traceback. Each reader's answer is pinned:
  it succeeds without a word (QUIET), succeeds with one line naming the file (WARNS), or exits 1
  with one line naming it (REFUSES); the drain hook always exits 0 (it fails open).

The second round of hostile findings (issue 24) is pinned beside the code each one guards; this index
says where (``test_the_index_of_hostile_findings_names_tests_that_exist`` keeps it true):

1. a session takes over another's idle waiter and reads its mail:
   test_waiter.py::test_a_waiter_named_for_another_session_cannot_displace_its_waiter_or_read_its_mail,
   test_authority.py::test_every_cli_command_and_hook_acts_as_its_caller_or_is_refused
2. a script sensor's approval is no boundary (the agent approves it, the program is not pinned, the
   listing hides the command):
   test_authority.py::test_what_only_a_human_may_do_is_refused_from_an_agent_sessions_tree,
   test_sensors.py::test_a_project_script_changed_after_approval_is_untrusted_again_and_never_runs,
   test_sensors.py::test_an_approval_pins_the_script_an_interpreter_runs_and_the_target_of_a_link,
   test_sensors.py::test_a_bytecode_cache_planted_beside_an_approved_module_never_runs,
   test_sensors.py::test_the_listing_and_trust_print_the_exact_command_not_the_description
3. headers injected through RFC 2047 encoded words, repeated keys:
   test_envelope.py::test_an_encoded_word_in_a_subject_or_name_never_forges_a_header,
   test_envelope.py::test_no_supported_interpreter_decodes_an_encoded_word_into_the_header_block,
   test_envelope.py::test_a_record_with_a_repeated_structural_header_is_refused
4. a session mints a human mailbox named after another session:
   test_authority.py::test_a_session_cannot_mint_a_human_mailbox_named_after_another_session,
   test_humans.py::test_a_human_at_a_terminal_named_after_a_session_is_refused_and_makes_no_mailbox
5. JSON nested 1,000 deep kills readers:
   test_bounded_inputs.py::test_a_deep_transcript_never_fails_peers_for_everyone,
   test_bounded_inputs.py::test_a_deep_transcript_never_kills_the_sessions_loop,
   test_bounded_inputs.py::test_a_deep_transcript_or_session_record_never_kills_the_chat_peers_pane,
   test_bounded_inputs.py::test_a_deep_transcript_never_fails_keepwarm,
   test_bounded_inputs.py::test_a_deep_transcript_never_fails_tune,
   test_mcp_stdio.py::test_a_deep_frame_as_the_first_frame_never_kills_the_server
6. a project overlay spins every loop; config takes ``nan`` and ``inf``:
   test_config.py::test_the_cleanup_interval_stays_on_the_loops_grid_or_off,
   test_config.py::test_a_project_file_may_not_make_its_loops_spend_more_than_the_defaults,
   test_config.py::test_a_timer_under_the_loops_grid_comes_only_from_a_file_the_user_wrote_or_approved,
   test_config.py::test_config_refuses_a_number_that_is_not_finite,
   test_config.py::test_a_script_sensor_refuses_a_non_finite_interval_or_timeout
7. after five quick wakes the waiter gives up and the mail has no conduit:
   test_waiter.py::test_past_the_ceiling_of_quick_wakes_the_wake_is_delayed_never_dropped
8. a human's mailbox is outside retention:
   test_cleanup.py::test_a_humans_read_mail_ages_out_and_its_unread_mail_never_does
9. chat marks read every loaded message:
   test_chat.py::test_chat_marks_read_only_the_mailbox_messages_that_were_in_view
10. a governor save that fails after the line shows the batch again:
    test_conduits.py::test_a_governor_save_that_fails_after_the_line_never_shows_the_message_again
11. MCP leaves a batch, a float id or a null id unanswered:
    test_mcp_stdio.py::test_every_frame_a_client_waits_on_gets_an_answer_and_the_server_goes_on,
    test_mcp_stdio.py::test_a_batch_gets_an_error_for_each_request_in_it
12. chat renders whole 64 KB bodies:
    test_chat.py::test_a_long_body_is_cut_to_a_few_lines_and_o_opens_it_whole
13. ``attend --version`` fails in an editable install:
    test_cli_manners.py::test_version_prints_the_package_version_from_an_editable_install
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from attend.domain.messages import retention
from attend.spool import Spool
from attend.testing.standin import StandIn
from tests.support import ATTEND, DEADLINE, Loop, World, enroll, has, maildir, name_at, payload, wait_until

HANG = 20.0  # a command still running after this long on a planted FIFO is hung on it
DAY = 86400.0
USER_BYTES = b"the user's own notes, not attend's\n"

# How a reader answers a planted FIFO (see judged).
QUIET = "succeeds without a word"
WARNS = "succeeds, with one line naming the file"
REFUSES = "exits 1, with one line naming the file"


# ---------------------------------------------------------------------- helpers


def snapshot(root: Path) -> dict[str, tuple[str, bytes | None]]:
    """Every path below ``root`` (never following a link, unlike support.tree), with its kind and a
    file's bytes."""
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


def named(path: Path) -> str:
    """How a message names ``path``: by its last two parts, whatever the spool root is spelt as."""
    return f"{path.parent.name}/{path.name}"


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
    """The loop's repair cursor for ``room``: the newest record its repair pass has looked at and
    passed (a pass passes only records older than the link bound, so this trails the newest by it)."""
    try:
        raw = json.loads((world.spool_root / "sessions" / sid / "repair.json").read_text())
    except (OSError, ValueError):
        return ""
    return str(raw.get(room, "")) if isinstance(raw, dict) else ""


def sent_id(world: World, body: str) -> str:
    out = world.attend("send", "--json", body)
    assert out.returncode == 0, out.stderr
    return str(json.loads(out.stdout)["id"])


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
    """The Stop-hook drain for ``s``, run by ``s`` as its hook is, bounded by HANG."""
    return as_session(s, "inbox", "--drain", "--format", "hook", stdin=payload(s.session_id))


# ---------------------------------------------------------------------- 1. retention never follows a link


def user_folder(where: Path, many: int = 40) -> Path:
    """A folder outside the spool holding a user's files, all 40 days old: plain files, and ``new/``
    and ``tmp/`` subfolders whose names look like the spool's own (old record names in new/)."""
    where.mkdir(parents=True)
    for i in range(many):
        (where / f"note-{i:02d}.txt").write_bytes(USER_BYTES + f"note {i}\n".encode())
    (where / "new").mkdir()
    for i in range(many):
        (where / "new" / name_at(time.time() - 40 * DAY - i)).write_bytes(USER_BYTES + f"record {i}\n".encode())
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
        enroll(world, other)
        link = root / "sessions" / other.session_id / "tmp"
    plant_link(link, target)
    return link


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("site", SITES)
def test_retention_never_deletes_through_a_symlink_planted_in_the_spool(
    world: World, loops: Callable[..., Loop], site: str, runner: str
) -> None:
    target = user_folder(world.tmp / "users-folder")
    link = plant_retention_link(world, site, target)
    control = stale_control(world)
    before = snapshot(target)
    if runner == "attend cleanup":
        out = world.attend("cleanup", timeout=HANG * 3)
        no_traceback(out.stdout, out.stderr)
        assert out.returncode == 0, out.stderr  # it leaves the link alone and cleans the rest
        said = out.stderr.strip().splitlines()
    elif runner in ("retention.run", "retention.sweep"):
        spool = Spool.open(world.spool_root)
        if runner == "retention.run":
            report = retention.run(spool, retention.Policy.default(), is_live=lambda sid: True)
        else:
            report = retention.sweep(spool, is_live=lambda sid: True)
        said = report.refused
    else:
        s = world.session("proj")
        loop = loops(s)  # its first housekeeping runs the bounded sweep

        def swept() -> bool:
            return (not control.exists() and named(link) in loop.stderr()) or not loop.running()

        wait_until(swept, lambda: f"the loop's sweep to clean up and report the link; {loop.said()}")
        assert loop.running(), f"the loop exited on a symlink at {site}; {loop.said()}"
        assert loop.stop() == 0
        no_traceback(loop.stderr())
        said = loop.stderr().strip().splitlines()
    assert snapshot(target) == before, f"retention changed the target of the symlink at {site}"
    assert not control.exists(), "the positive control: a retention that ran removes a stale tmp file"
    assert said, f"retention said nothing of the symlink at {site}"
    for line in said:  # every line it said is the refusal, naming the link
        assert "refusing to follow a symlink" in line and named(link) in line, said
    assert len(said) == len(set(said)), f"one planted link, one line: {said}"


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


def test_a_loop_going_to_sleep_survives_new_swapped_for_a_symlink(world: World) -> None:
    # The loop lists new/ to decide how long to sleep, outside the steps that report a failure and go
    # on: a swap landing just before that listing (no delivery failure had put the retry off) ended
    # the loop with the refusal. In process, so the moment is exact.
    from attend.conduits import loop

    s = world.session("proj")
    ctx = world.context(s)
    who = ctx.who()
    lock = loop.RunLock.take(ctx.spool, who.id)
    assert lock is not None
    sensor = loop.Sensor(ctx, lambda _line: None, lambda _line: None, who, lock)
    try:
        sensor._watch_own()
        swap_for_link(world, who.id, "new")
        sensor.due = {"repair": time.monotonic()}  # due now: sleep no longer than a look
        assert sensor._sleep() == set()
    finally:
        sensor.watcher.close()
        lock.release()


@pytest.mark.parametrize("sub", ["new", "claimed", "cur"])
def test_a_running_loop_never_touches_the_target_of_a_maildir_folder_swapped_for_a_symlink(
    world: World, loops: Callable[..., Loop], sub: str
) -> None:
    s = world.session("proj")
    loop = loops(s)
    world.attend("send", "before the swap")
    loop.wait_for(has("before the swap"), "the first message")  # every folder is in use (and cached)
    # Counted before the swap: the loop reports each refusal once, and on a loaded machine it can
    # report it before the send below returns.
    err_before = len(loop.stderr())
    outside = swap_for_link(world, s.session_id, sub)
    before = snapshot(outside)
    err_before = len(loop.stderr())  # before the send: the loop may refuse before the sender has exited
    name = sent_id(world, "after the swap")
    folder = world.spool_root / "sessions" / s.session_id / sub
    touched: list[object] = []

    def said(*words: str) -> bool:
        return any(w in loop.stderr()[err_before:] for w in words)

    def acted() -> bool:
        now = snapshot(outside)
        if now != before:
            touched.append(now)  # even for a moment: a delivery renamed through the link, then out
        if touched or not loop.running():
            return True  # judged below
        # A repair pass looked at the message (and the recovery of claimed/ that follows it in the
        # same housekeeping runs before SIGTERM takes effect) ...
        repaired = repair_cursor(world, s.session_id) >= name or said("repair", "recover")
        # ... and, if its sender could link it, the loop tried to show it ...
        pending = name in maildir(world, s.session_id, "new")
        shown = not pending or has("after the swap")(loop.lines()) or said("deliver")
        # ... and it said it refused the link.
        return repaired and shown and said("refusing to follow a symlink")

    # The repair cursor passes the message only once it is older than the link bound (10 s), on a
    # housekeeping pass: a loaded machine needs more than the usual deadline for both.
    wait_until(acted, lambda: f"the loop to act on {sub}/ swapped for a symlink; {loop.said()}", 2 * DEADLINE)
    assert not touched, f"the loop changed the target of {sub}/ for a moment: {touched[0]!r}"
    assert loop.running(), f"the loop exited on {sub}/ swapped for a symlink; {loop.said()}"
    assert loop.stop() == 0
    no_traceback(loop.stderr())
    for line in loop.stderr()[err_before:].strip().splitlines():  # each line the refusal, naming sub/
        assert "refusing to follow a symlink" in line and named(folder) in line, loop.stderr()
    assert snapshot(outside) == before, f"the loop changed the target of the symlink at {sub}/"
    assert quarantined_user_files(world) == [], "the user's file was moved into quarantine/"
    assert name not in "".join(os.listdir(outside))
    # Nothing is claimed that could not be marked seen: a message is never shown again and again.
    assert sum("after the swap" in line for line in loop.lines()) <= 1, loop.lines()


@pytest.mark.parametrize("sub", ["new", "claimed", "cur"])
def test_a_drain_never_touches_the_target_of_a_maildir_folder_swapped_for_a_symlink(world: World, sub: str) -> None:
    s = world.session("proj")
    enroll(world, s)
    world.attend("send", "before the swap")
    first = drain_hook(world, s)
    assert "before the swap" in first.stdout, first.stderr  # every folder is in use
    outside = swap_for_link(world, s.session_id, sub)
    before = snapshot(outside)
    name = sent_id(world, "after the swap")
    out = drain_hook(world, s)
    no_traceback(out.stdout, out.stderr)
    assert out.rc == 0, out.stderr
    assert len(out.stderr.strip().splitlines()) <= 1, out.stderr
    assert snapshot(outside) == before, f"the drain changed the target of the symlink at {sub}/"
    assert quarantined_user_files(world) == [], "the user's file was moved into quarantine/"
    assert name not in "".join(os.listdir(outside))


# ---------------------------------------------------------------------- 3. a FIFO never hangs a reader


def plant_fifo(path: Path) -> None:
    """Replace ``path`` (if it is a file) with a FIFO."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    os.mkfifo(path, 0o600)


def judged(out: Outcome, fifo: Path, expect: str) -> None:
    """Finished (the caller bounded it), without a traceback, as ``expect`` says: QUIET (exit 0,
    nothing on stderr), WARNS (exit 0) or REFUSES (exit 1), each of the last two with one line on
    stderr naming the planted file by its path (``…/rooms/open/new/<id>``)."""
    print(f"outcome: rc={out.rc} stdout={out.stdout!r} stderr={out.stderr!r}")
    no_traceback(out.stdout, out.stderr)
    assert out.rc == (1 if expect == REFUSES else 0), f"want it to {expect}: rc={out.rc} {out.stderr!r}"
    if expect == QUIET:
        assert out.stderr == "", f"want it to {expect}: {out.stderr!r}"
    else:
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and named(fifo) in lines[0], f"want it to {expect} ({fifo}): {out.stderr!r}"


def readers(table: dict[str, str | None]) -> pytest.MarkDecorator:
    """Parametrize a test over a table of readers and how each answers, with the reader as the id."""
    return pytest.mark.parametrize(("reader", "expect"), list(table.items()), ids=list(table))


ROOM_RECORD_READERS: dict[str, str | None] = {
    "inbox": WARNS,  # it lists the rest of the room, skipping the FIFO
    "inbox --all": WARNS,
    "inbox <id>": REFUSES,
    "reply --re <id>": REFUSES,
    "join (its cold start reads #open)": QUIET,
    "tail --count 1": QUIET,  # besides its "tailing …" line
    "the loop's repair pass": None,  # judged by its repair cursor
}


@readers(ROOM_RECORD_READERS)
def test_a_fifo_as_a_room_record_never_hangs_a_reader(
    world: World, loops: Callable[..., Loop], reader: str, expect: str | None
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
            # "tailing …" comes once its watches are set: a FIFO planted before that is below its floor.
            wait_until(
                lambda: b"tailing" in err_path.read_bytes() or proc.poll() is not None,
                lambda: f"`attend tail` to say it is tailing; it printed {err_path.read_bytes()!r}",
            )
            fifo = new / name_at(time.time())
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
        said = [line for line in err_path.read_text().splitlines(keepends=True) if "tailing" not in line]
        out = Outcome(rc, out_path.read_text(), "".join(said))
        judged(out, fifo, QUIET)
        assert "after the fifo" in out.stdout, out
        return
    if reader == "the loop's repair pass":
        s = world.session("proj")
        loop = loops(s)
        fifo = new / name_at(time.time())
        plant_fifo(fifo)
        name = sent_id(world, "after the fifo")
        loop.wait_for(has("after the fifo"), "the message (linked by its sender)")
        wait_until(
            lambda: repair_cursor(world, s.session_id) >= name or not loop.running(),
            lambda: f"the loop's repair pass to get past the FIFO at {fifo}; {loop.said()}",
        )
        assert loop.running(), f"the loop exited on the FIFO at {fifo}; {loop.said()}"
        world.attend("send", "the loop still listens")
        loop.wait_for(has("the loop still listens"), "the loop to go on after the FIFO")
        assert loop.stop() == 0
        no_traceback(loop.stderr())
        return
    assert expect is not None
    fifo = new / name_at(time.time())
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
    judged(out, fifo, expect)
    if reader in ("inbox", "inbox --all"):
        assert "an ordinary record first" in out.stdout  # the rest of the room is still listed


LOG_READERS = ["attend log", "the drain hook (reporting a bad delivery)"]


@pytest.mark.parametrize("reader", LOG_READERS)
def test_a_fifo_as_the_log_never_hangs_a_reader_or_writer(world: World, reader: str) -> None:
    s = world.session("proj")
    enroll(world, s)
    fifo = world.spool_root / "log" / "attend.log"
    plant_fifo(fifo)
    if reader == "attend log":
        judged(human(world, "log"), fifo, REFUSES)
        return
    world.attend("send", "pending")
    junk = world.spool_root / "sessions" / s.session_id / "new" / name_at(time.time() - 60)
    junk.write_bytes(b"not a signal")  # the drain sets it aside and reports that, into the log
    out = drain_hook(world, s)
    # It fails open: one line on stderr reports the delivery set aside, and the message is shown.
    print(f"outcome: rc={out.rc} stdout={out.stdout!r} stderr={out.stderr!r}")
    no_traceback(out.stdout, out.stderr)
    assert out.rc == 0, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "set aside" in lines[0] and junk.name in lines[0], out.stderr
    assert "pending" in out.stdout, out.stderr


MARKER_READERS: dict[str, str | None] = {
    "the drain hook": QUIET,
    "peers": QUIET,
    "status (in the session)": QUIET,
    "the loop's banner": None,  # the loop starts, and says nothing on stderr
}


@readers(MARKER_READERS)
def test_a_fifo_as_an_mcp_marker_never_hangs_a_reader(
    world: World, loops: Callable[..., Loop], reader: str, expect: str | None
) -> None:
    s = world.session("proj")
    enroll(world, s)
    fifo = world.spool_root / "sessions" / s.session_id / "mcp" / f"{os.getpid()}.json"
    plant_fifo(fifo)
    if reader == "the drain hook":
        world.attend("send", "pending")
        out = drain_hook(world, s)
        judged(out, fifo, QUIET)
        assert "pending" in out.stdout, out.stderr
    elif reader == "peers":
        judged(human(world, "peers"), fifo, QUIET)
    elif reader == "status (in the session)":
        judged(as_session(s, "status"), fifo, QUIET)
    else:
        loop = loops(s, wait=False)
        loop.wait_for(
            lambda lines: lines or not loop.running(), f"`attend run` to print its banner past the FIFO at {fifo}"
        )
        assert loop.running(), f"`attend run` exited on the FIFO at {fifo}; {loop.said()}"
        assert "watching" in loop.lines()[0], loop.said()
        assert loop.stop() == 0
        no_traceback(loop.stderr())
        assert loop.stderr() == "", loop.said()


ENROLLMENT_READERS: dict[str, str | None] = {
    "the drain hook": QUIET,  # it shows the pending message
    "the drain hook after a /clear": WARNS,  # the move fails; the messages stay pending
    "send (in the session)": QUIET,
    "peers": QUIET,
    "status (in the session)": REFUSES,
    "inbox (in the session)": REFUSES,
    "join (in the session)": REFUSES,
    "the loop's start": REFUSES,  # before its banner
}


@readers(ENROLLMENT_READERS)
def test_a_fifo_as_an_enrollment_never_hangs_a_reader(
    world: World, loops: Callable[..., Loop], reader: str, expect: str
) -> None:
    s = world.session("proj")
    enroll(world, s)
    world.attend("send", "pending")
    fifo = world.spool_root / "sessions" / s.session_id / "enrolled"
    plant_fifo(fifo)
    if reader == "the drain hook":
        out = drain_hook(world, s)
        judged(out, fifo, expect)
        assert "pending" in out.stdout, out.stderr
    elif reader == "the drain hook after a /clear":
        new = str(uuid.uuid4())
        s.write_record(session_id=new)  # the same Claude process under a new id: the drain moves the old one
        judged(as_session(s, "inbox", "--drain", "--format", "hook", stdin=payload(new)), fifo, expect)
    elif reader == "send (in the session)":
        judged(as_session(s, "send", "from a session whose enrollment is a FIFO"), fifo, expect)
    elif reader == "peers":
        judged(human(world, "peers"), fifo, expect)
    elif reader == "status (in the session)":
        judged(as_session(s, "status"), fifo, expect)
    elif reader == "inbox (in the session)":
        judged(as_session(s, "inbox"), fifo, expect)
    elif reader == "join (in the session)":
        judged(as_session(s, "join", "another"), fifo, expect)
    else:
        loop = loops(s, wait=False)
        wait_until(lambda: not loop.running(), lambda: f"`attend run` to exit on the FIFO at {fifo}; {loop.said()}")
        rc = loop.stop()
        assert loop.lines() == [], loop.said()
        judged(Outcome(rc, "", loop.stderr()), fifo, expect)


REGISTRY_READERS: dict[str, str | None] = {
    "peers": REFUSES,
    "send --channel x": REFUSES,
    "send (in the session)": REFUSES,
    "join (in the session)": REFUSES,
    "send --to <name>": REFUSES,  # the registry it would look the name up in, not "no such name"
}


@readers(REGISTRY_READERS)
def test_a_fifo_as_a_registry_entry_never_hangs_a_reader(world: World, reader: str, expect: str) -> None:
    s = world.session("proj")
    enroll(world, s)
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
    judged(out, fifo, expect)


def test_the_index_of_hostile_findings_names_tests_that_exist() -> None:
    """Each ``file::test`` of the module's index is a test function of that file, and all 13 findings
    are listed: a renamed or removed test leaves the index pointing at nothing."""
    import ast
    import re

    assert __doc__ is not None
    here = Path(__file__).parent
    index = __doc__.split("(issue 24)", 1)[1]
    findings = re.findall(r"^\s*(\d+)\. ", index, re.M)
    assert findings == [str(n) for n in range(1, 14)], findings
    named = re.findall(r"(test_\w+\.py)::(test_\w+)", index)
    assert len(named) >= 13
    missing = []
    for file, test in named:
        tree = ast.parse((here / file).read_text())
        found = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        if test not in found:
            missing.append(f"{file}::{test}")
    assert missing == []
