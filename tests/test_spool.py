"""The spool's invariants: atomic delivery, no overwrite, no second delivery, private modes,
refusal of foreign or open roots and planted symlinks, and the stale-tmp sweep."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from attend import layout
from attend import spool as spool_mod
from attend.domain.messages import retention
from attend.errors import SpoolError
from attend.layout import NAME_RE, SEEN, unique_name
from attend.spool import Spool, default_root
from tests.support import name_at


@pytest.fixture
def sp(tmp_path: Path) -> Spool:
    return Spool.open(tmp_path / "spool")


def test_root_resolution_prefers_attend_home_then_absolute_xdg_then_home() -> None:
    assert default_root({"ATTEND_HOME": "/a", "XDG_CACHE_HOME": "/x", "HOME": "/h"}) == Path("/a")
    assert default_root({"XDG_CACHE_HOME": "/x", "HOME": "/h"}) == Path("/x/attend")
    assert default_root({"XDG_CACHE_HOME": "relative", "HOME": "/h"}) == Path("/h/.cache/attend")
    assert default_root({"HOME": "/h"}) == Path("/h/.cache/attend")


def test_folders_are_0700_and_files_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o000)
    try:
        sp = Spool.open(tmp_path / "spool")
        name = sp.publish(["open"], b"x")
        sp.write_state(b"s", "sessions", "abc", "state")
    finally:
        os.umask(old)
    for path in [sp.root, sp.root / "rooms" / "open" / "new", sp.root / "sessions" / "abc"]:
        assert path.stat().st_mode & 0o777 == 0o700, path
    assert (sp.root / "rooms" / "open" / "new" / name).stat().st_mode & 0o777 == 0o600
    assert (sp.root / "sessions" / "abc" / "state").stat().st_mode & 0o777 == 0o600


def test_a_root_writable_by_others_is_refused_and_left_alone(tmp_path: Path) -> None:
    root = tmp_path / "spool"
    root.mkdir()
    root.chmod(0o777)
    with pytest.raises(SpoolError, match="writable by group or others"):
        Spool.open(root)
    assert list(root.iterdir()) == []


def test_a_root_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to chown a folder to another user")
    root = tmp_path / "spool"
    root.mkdir(mode=0o700)
    os.chown(root, 12345, 12345)
    with pytest.raises(SpoolError, match="owned by uid 12345"):
        Spool.open(root)
    assert list(root.iterdir()) == []


def test_a_planted_symlink_folder_is_never_followed(sp: Spool, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, sp.root / "rooms" / "evil")
    with pytest.raises(SpoolError, match="symlink"):
        sp.publish(["evil"], b"x")
    assert list(elsewhere.iterdir()) == []


def test_a_planted_symlink_file_is_never_read(sp: Spool, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("do not read")
    sp.make_dir("rooms", "open", "new")
    os.symlink(secret, sp.root / "rooms" / "open" / "new" / "1700000000.M000000P1Q0R00000000.host")
    with pytest.raises(OSError, match="symlink"):
        sp.read_record("open", "1700000000.M000000P1Q0R00000000.host")


def test_state_rewritten_in_place_keeps_its_file_and_never_writes_through_a_planted_entry(
    sp: Spool, tmp_path: Path
) -> None:
    sp.rewrite_state(b'{"lines": {"a": [1, 2, 3]}}', "sessions", "abc", "governor")
    state = sp.root / "sessions" / "abc" / "governor"
    inode = state.stat().st_ino
    sp.rewrite_state(b"{}", "sessions", "abc", "governor")  # shorter: no tail of the old left
    assert state.read_bytes() == b"{}" and state.stat().st_ino == inode
    assert state.stat().st_mode & 0o777 == 0o600
    user = tmp_path / "users-file"
    for plant in ("symlink", "hard link"):
        user.write_bytes(b"the user's own")
        state.unlink()
        os.symlink(user, state) if plant == "symlink" else os.link(user, state)
        sp.rewrite_state(b"{}", "sessions", "abc", "governor")
        assert user.read_bytes() == b"the user's own", plant
        assert not state.is_symlink() and state.stat().st_nlink == 1 and state.read_bytes() == b"{}"


def test_appended_state_is_read_by_its_last_line_and_starts_over_past_its_limit(sp: Spool) -> None:
    from attend.domain.sessions import sessions

    path = sp.root / "sessions" / "abc" / "last-inbound"
    sp.write_state(b"1700000000.M000001P1Q0R00000000.host", "sessions", "abc", "last-inbound")
    assert sessions.last_inbound(sp, "abc") == "1700000000.M000001P1Q0R00000000.host"  # as written before
    names = [f"17000000{n:02d}.M000001P1Q0R00000000.host" for n in range(10, 60)]
    sessions.set_last_inbound(sp, "abc", names[0])  # a bare name is replaced, not appended to
    assert path.read_text() == names[0] + "\n"
    inode = path.stat().st_ino
    for name in names[1:20]:
        sessions.set_last_inbound(sp, "abc", name)
        assert sessions.last_inbound(sp, "abc") == name
    assert path.stat().st_ino == inode  # appended, no new file
    sessions.set_last_inbound(sp, "abc", names[5])  # an older name never moves it back
    assert sessions.last_inbound(sp, "abc") == names[19]
    for name in names[20:]:
        sp.append_state(name.encode() + b"\n", "sessions", "abc", "last-inbound", limit=200)
    assert len(path.read_bytes()) <= 200 and sessions.last_inbound(sp, "abc") == names[-1]


def test_unique_names_sort_in_send_order_and_follow_the_maildir_rule() -> None:
    names = [unique_name() for _ in range(2000)]
    assert names == sorted(names)
    assert len(set(names)) == len(names)
    for n in names[:50]:
        assert NAME_RE.fullmatch(n) and ":" not in n and "/" not in n and not n.startswith(".")


def test_names_from_an_injected_clock_sort_by_that_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    # The process's names stay increasing after this one from 2027: put the clock's mark back after
    # the test, or every later name this worker makes is 2027's (a page's resume window then left out
    # a message another process named at the real time).
    monkeypatch.setattr(layout, "_last_us", layout._last_us)
    early = unique_name(now_ns=1_700_000_000_000_000_000)
    late = unique_name(now_ns=1_800_000_000_000_000_000)
    assert late > early
    assert layout.name_time(late) == pytest.approx(1_800_000_000.0, abs=1)


def test_publish_links_one_record_into_every_room_and_leaves_tmp_empty(sp: Spool) -> None:
    name = sp.publish(["d-a", "d-b"], b"hello")
    for room in ("d-a", "d-b"):
        assert (sp.root / "rooms" / room / "new" / name).read_bytes() == b"hello"
    assert (
        os.stat(sp.root / "rooms" / "d-a" / "new" / name).st_ino
        == os.stat(sp.root / "rooms" / "d-b" / "new" / name).st_ino
    )
    assert list((sp.root / "rooms" / "d-a" / "tmp").iterdir()) == []


def test_a_send_publish_past_the_link_bound_is_refused_and_leaves_nothing(sp: Spool) -> None:
    stale = name_at(time.time() - layout.LINK_BOUND - 1)
    with pytest.raises(spool_mod.LateName):
        sp.publish(["d-a", "d-b"], b"late", stale, bounded=True)
    for room in ("d-a", "d-b"):
        assert list((sp.root / "rooms" / room / "new").iterdir()) == []
    assert list((sp.root / "rooms" / "d-a" / "tmp").iterdir()) == []
    assert sp.publish(["d-a"], b"planted", stale) == stale  # unbounded: records planted with old names


def test_a_name_clash_never_overwrites(sp: Spool) -> None:
    name = sp.publish(["open"], b"first")
    with pytest.raises(FileExistsError):
        sp.publish(["open"], b"second", name=name)
    assert (sp.root / "rooms" / "open" / "new" / name).read_bytes() == b"first"
    assert list((sp.root / "rooms" / "open" / "tmp").iterdir()) == []


def test_a_claimed_name_is_never_delivered_again(sp: Spool) -> None:
    sp.make_maildir("s1")
    name = sp.publish(["open"], b"x")
    assert sp.link_delivery("s1", "open", name)
    assert not sp.link_delivery("s1", "open", name)  # already in new/
    assert sp.claim_all("s1", [name])
    assert not sp.link_delivery("s1", "open", name)  # in claimed/
    sp.mark_seen("s1", [name])
    assert (sp.root / "sessions" / "s1" / "cur" / (name + SEEN)).exists()
    assert not sp.link_delivery("s1", "open", name)  # in cur/
    assert sp.listing("s1", "new") == [] and sp.listing("s1", "claimed") == []


def test_exactly_one_claimer_wins(sp: Spool) -> None:
    sp.make_maildir("s1")
    name = sp.publish(["open"], b"x")
    sp.link_delivery("s1", "open", name)
    assert [sp.claim_all("s1", [name]), sp.claim_all("s1", [name])] == [[name], []]


def test_rooms_and_sessions_on_different_filesystems_are_refused(tmp_path: Path) -> None:
    # Another filesystem than the test's own: memory, when the test runs on disk, or the disk when
    # the developer loop keeps its temporary files in memory (README: --basetemp=/dev/shm/…).
    here = os.stat(tmp_path).st_dev
    elsewhere = [p for p in (Path("/dev/shm"), Path("/var/tmp"), Path(__file__).parent) if p.is_dir()]
    second = next((p for p in elsewhere if os.stat(p).st_dev != here), None)
    if second is None:
        pytest.skip("needs a second filesystem")
    with tempfile.TemporaryDirectory(dir=second) as other, pytest.raises(SpoolError, match="different filesystems"):
        spool_mod.check_same_device(os.stat(tmp_path).st_dev, os.stat(other).st_dev, str(tmp_path), other)
    spool_mod.check_same_device(os.stat(tmp_path).st_dev, os.stat(tmp_path).st_dev, "a", "b")  # positive control


_WRITER = """
import sys
from pathlib import Path
from attend.spool import Spool
sp = Spool.open(Path(sys.argv[1]))
sp.publish(["open"], b"x" * 65536)
"""


def test_a_writer_killed_mid_write_leaves_nothing_partial_in_new(sp: Spool) -> None:
    """Stop the writer after tmp is written (pause point), kill it: new/ never shows a partial file."""
    env = {**os.environ, "ATTEND_PAUSE_AT": "tmp-written"}
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(sp.root)], env=env)
    _wait_stopped(proc.pid)
    assert sp.room_names("open") == []
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert sp.room_names("open") == []
    # positive control: the same writer without the pause point publishes
    subprocess.run([sys.executable, "-c", _WRITER, str(sp.root)], check=True)
    assert len(sp.room_names("open")) == 1


def _wait_stopped(pid: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "T":
                return
        time.sleep(0.01)
    raise AssertionError("process never reached its pause point")


def test_random_stress_no_reader_ever_sees_a_partial_signal(sp: Spool) -> None:
    """Writers publish random sizes while a reader keeps reading new/: every file read is whole."""
    code = """
import random, sys
from pathlib import Path
from attend.spool import Spool
sp = Spool.open(Path(sys.argv[1]))
for i in range(150):
    n = random.randint(1, 200_000)
    sp.publish(["open"], (str(n).encode() + b":").ljust(n, b"z"))
"""
    procs = [subprocess.Popen([sys.executable, "-c", code, str(sp.root)]) for _ in range(3)]
    seen = 0
    new = sp.root / "rooms" / "open" / "new"
    while any(p.poll() is None for p in procs) or seen == 0:
        names = os.listdir(new) if new.exists() else []
        for name in random.sample(names, min(20, len(names))):
            data = (new / name).read_bytes()
            size = int(data.split(b":", 1)[0])
            assert len(data) == size
            seen += 1
    assert all(p.wait() == 0 for p in procs)
    assert len(os.listdir(new)) == 450


def test_removing_a_folder_planted_as_a_symlink_leaves_its_target_alone(sp: Spool, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious").write_text("keep me")
    os.symlink(elsewhere, sp.root / "sessions" / "planted")
    sp.remove_tree("sessions", "planted")
    assert (elsewhere / "precious").read_text() == "keep me"
    assert not os.path.lexists(sp.root / "sessions" / "planted")  # the link itself is gone
    sp.write_state(b"x", "sessions", "real", "state")  # positive control: a real folder goes
    sp.remove_tree("sessions", "real")
    assert not (sp.root / "sessions" / "real").exists()


def test_remove_tree_refuses_a_path_that_climbs_out(sp: Spool) -> None:
    sp.write_state(b"x", "sessions", "a", "state")
    with pytest.raises(SpoolError, match="refusing"):
        sp.remove_tree("sessions", "..")
    assert (sp.root / "sessions" / "a" / "state").exists()


def test_the_tmp_sweep_never_follows_a_room_planted_as_a_symlink(sp: Spool, tmp_path: Path) -> None:
    elsewhere = tmp_path / "project"
    (elsewhere / "tmp").mkdir(parents=True)
    (elsewhere / "tmp" / "old-build-output").write_text("keep me")
    os.symlink(elsewhere, sp.root / "rooms" / "planted")
    sp.make_dir("rooms", "open", "tmp")
    stale = sp.root / "rooms" / "open" / "tmp" / "stale"
    stale.write_bytes(b"x")
    long_ago = time.time() - 2 * layout.STALE_TMP_SECONDS
    for path in (elsewhere / "tmp" / "old-build-output", stale):
        os.utime(path, (long_ago, long_ago))
    report = retention.run(sp, retention.Policy.default(), is_live=lambda _sid: True)
    assert report.by_reason["tmp"].files == 1  # positive control: the real stale tmp file goes
    assert (elsewhere / "tmp" / "old-build-output").read_text() == "keep me"


def test_removing_a_file_never_unlinks_through_a_folder_planted_as_a_symlink(sp: Spool, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "notice").write_text("keep me")
    os.symlink(elsewhere, sp.root / "sessions" / "planted")
    with pytest.raises(SpoolError, match="symlink"):
        sp.remove("sessions", "planted", "notice")
    assert (elsewhere / "notice").read_text() == "keep me"
    sp.write_state(b"1", "sessions", "real", "notice")  # positive control
    assert sp.remove("sessions", "real", "notice") and not (sp.root / "sessions" / "real" / "notice").exists()


def test_reading_never_goes_through_a_folder_planted_as_a_symlink(sp: Spool, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "new"
    outside.mkdir(parents=True)
    (outside / "1700000000.M000000P1Q0R00000000.host").write_text("secret")
    os.symlink(outside.parent, sp.root / "rooms" / "planted")
    with pytest.raises(SpoolError, match="symlink"):
        sp.read(sp.room_path("planted", "1700000000.M000000P1Q0R00000000.host"))
    with pytest.raises(SpoolError, match="symlink"):
        sp.room_entries("planted")
    name = sp.publish(["open"], b"fine")  # positive control: a real room reads
    assert sp.read(sp.room_path("open", name)) == b"fine" and sp.room_entries("open") == [name]


def test_threads_listing_one_top_folder_at_once_each_see_every_entry(tmp_path: Path) -> None:
    """The spool keeps one handle per top folder; a listing through a dup of it would share its read
    offset, and two threads listing at once (the relay's inbound batches fanning out to #open) would
    each read from the other's position: an empty survey, a recipient missed."""
    import threading

    spool = Spool(tmp_path / "spool")
    spool.make_dir("sessions", "s1")
    spool.write_state(b"", "sessions", "s1", "enrolled")
    short: list[object] = []

    def look() -> None:
        for _ in range(3000):
            got = (spool.survey("sessions", ("enrolled",)), spool.names("sessions"), spool.names())
            if got[0] != {"s1": (True,)} or got[1] != ["s1"] or "sessions" not in got[2]:
                short.append(got)

    threads = [threading.Thread(target=look) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert short == []
