"""A spool the release before wrote is carried over in place on first use, losing nothing.

That release kept each host process's pointer (``<pid>-<procStart>`` -> the session id it enrolled
under) in ``by-claude/``, and named the host process ``claude_pid`` in an enrollment. This one keeps
them in ``by-host/`` and ``host_pid``; ``Spool.carry_over`` moves the folder (one rename, or entry by
entry where ``by-host/`` exists already), and an enrollment is read under either key
(docs/architecture/spool.md, "Carried over").

``as_the_release_before`` turns a spool this release wrote into the one the release before writes
for the same sessions: the same files, the same contents, under the old names.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from attend import layout as L
from attend.domain.sessions import sessions
from attend.hosts.base import proc_start
from attend.spool import Spool
from tests.support import World, enroll, payload

OLD, NEW = L.BY_HOST_BEFORE, L.BY_HOST


def as_the_release_before(root: Path) -> None:
    """The spool as the release before wrote it: pointers in by-claude/, enrollments naming claude_pid."""
    (root / NEW).rename(root / OLD)
    for doc in (root / L.SESSIONS).glob(f"*/{L.ENROLLED}"):
        raw = json.loads(doc.read_text(encoding="utf-8"))
        assert "host_pid" in raw, raw
        doc.write_text(json.dumps({(L.HOST_PID_BEFORE if k == "host_pid" else k): v for k, v in raw.items()}, indent=1))


def pointers(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in folder.iterdir()} if folder.exists() else {}


def test_every_session_of_a_spool_the_release_before_wrote_is_found_by_its_process(world: World) -> None:
    crew = [world.session("proj"), world.session("proj"), world.session("other")]
    for s in crew:
        enroll(world, s)
    written = pointers(world.spool_root / NEW)
    assert len(written) == len(crew)
    as_the_release_before(world.spool_root)
    assert pointers(world.spool_root / OLD) == written and not (world.spool_root / NEW).exists()

    spool = Spool.open(world.spool_root, create=False)
    for s in crew:
        start = proc_start(s.pid)
        assert start is not None
        assert sessions.read_pointer(spool, s.pid, start) == s.session_id
        enrollment = sessions.read_enrollment(spool, s.session_id)
        assert enrollment is not None and (enrollment.host_pid, enrollment.proc_start) == (s.pid, start)
    assert pointers(world.spool_root / NEW) == written  # nothing lost, nothing added
    assert not (world.spool_root / OLD).exists()


def test_a_clear_on_a_spool_the_release_before_wrote_moves_the_session_at_the_turn_end(world: World) -> None:
    """The pointer that finds the old id is in by-claude/: the turn-end drain of the new id (its fast
    path first) must still see the /clear, move the session and deliver what waited for it."""
    s, other = world.session("proj"), world.session("proj")
    enroll(world, s)
    enroll(world, other)
    old = s.session_id
    world.attend("send", "before the clear")
    as_the_release_before(world.spool_root)
    new = str(uuid.uuid4())
    s.write_record(session_id=new)
    out = s.attend("inbox", "--drain", "--format", "hook", stdin=payload(new))
    assert out.rc == 0 and json.loads(out.stdout)["decision"] == "block", out
    assert "before the clear" in json.loads(out.stdout)["reason"]
    assert (world.spool_root / L.SESSIONS / new / L.ENROLLED).exists()
    assert not (world.spool_root / L.SESSIONS / old / L.ENROLLED).exists()
    assert not (world.spool_root / OLD).exists()
    assert pointers(world.spool_root / NEW)[f"{s.pid}-{proc_start(s.pid)}"] == new
    assert pointers(world.spool_root / NEW)[f"{other.pid}-{proc_start(other.pid)}"] == other.session_id


def test_a_carry_over_onto_pointers_written_since_keeps_the_newer_and_loses_none(tmp_path: Path) -> None:
    spool = Spool.open(tmp_path / "spool")
    spool.write_state(b"written-since", NEW, "100-1")
    spool.write_state(b"only-new", NEW, "200-2")
    (tmp_path / "spool" / OLD).mkdir(mode=0o700)
    for name, sid in (("100-1", "written-before"), ("300-3", "only-old")):
        (tmp_path / "spool" / OLD / name).write_text(sid)
    assert spool.carry_over(OLD, NEW)
    assert pointers(tmp_path / "spool" / NEW) == {"100-1": "written-since", "200-2": "only-new", "300-3": "only-old"}
    assert not (tmp_path / "spool" / OLD).exists()
    assert not spool.carry_over(OLD, NEW)  # nothing left to carry: the common case


def test_a_file_planted_where_the_old_folder_was_is_refused_not_carried(tmp_path: Path) -> None:
    spool = Spool.open(tmp_path / "spool")
    (tmp_path / "spool" / OLD).symlink_to(tmp_path)
    with pytest.raises(OSError, match="symlink"):
        spool.carry_over(OLD, NEW)
    assert not (tmp_path / "spool" / NEW).exists()


RACER = """
import os, sys, time
from attend.domain.sessions import sessions
from attend.spool import Spool
root, go, role, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
spool = Spool(root)
while not os.path.exists(go):
    time.sleep(0.001)
if role == "carry":
    spool.carry_over(sys.argv[5], sys.argv[6])
    print(0)
else:  # a reader, looking up every pointer until the old folder is gone, then once more
    missed = 0
    while True:
        gone = not os.path.exists(os.path.join(root, sys.argv[5]))
        for i in range(n):
            if sessions.read_pointer(spool, 1000 + i, str(i)) != f"s{i}":
                missed += 1
        if gone:
            break
    print(missed)
"""


@pytest.mark.parametrize("newer", [False, True], ids=["one-rename", "entry-by-entry"])
def test_two_processes_carrying_at_once_with_readers_between_lose_nothing(tmp_path: Path, newer: bool) -> None:
    root = tmp_path / "spool"
    spool = Spool.open(root)
    n = 300
    (root / OLD).mkdir(mode=0o700)
    for i in range(n):
        (root / OLD / f"{1000 + i}-{i}").write_text(f"s{i}")
    if newer:  # by-host/ exists already: each carrier moves entry by entry, at the same time
        spool.write_state(b"since", NEW, "9-9")
    go = tmp_path / "go"
    roles = [["carry", OLD, NEW], ["carry", OLD, NEW], ["read", OLD], ["read", OLD]]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(root), str(go), role[0], str(n), *role[1:]],
            stdout=subprocess.PIPE,
            text=True,
        )
        for role in roles
    ]
    go.touch()
    outs = [p.communicate(timeout=120)[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0] * len(procs)
    assert outs[2:] == ["0", "0"], "a reader missed a pointer while the folder was carried"
    expected = {f"{1000 + i}-{i}": f"s{i}" for i in range(n)} | ({"9-9": "since"} if newer else {})
    assert pointers(root / NEW) == expected
    assert not (root / OLD).exists()


def test_a_read_only_spool_the_release_before_wrote_is_read_where_it_is_and_left_as_it_was(world: World) -> None:
    """Mounted read-only (unshare: a mount namespace of the test's own), the folder cannot be carried:
    a lookup reads the earlier release's folder instead, and the spool stays as it was."""
    s = world.session("proj")
    enroll(world, s)
    as_the_release_before(world.spool_root)
    before = pointers(world.spool_root / OLD)
    spool = world.spool_root
    look = (
        "from attend.domain.sessions import sessions; from attend.spool import Spool; "
        f"print(sessions.read_pointer(Spool.open({str(spool)!r}, create=False), {s.pid}, {proc_start(s.pid)!r}))"
    )
    script = f"mount --bind {spool} {spool} && mount -o remount,bind,ro {spool} && {sys.executable} -c {look!r}"
    out = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script], env=world.env, capture_output=True, text=True, timeout=60
    )
    assert (out.returncode, out.stdout.strip()) == (0, s.session_id), out.stderr
    assert pointers(world.spool_root / OLD) == before and not (world.spool_root / NEW).exists()
