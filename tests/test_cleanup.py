"""Retention: old records and seen entries go by age and count, ended sessions go after a grace
period, stale tmp files after 36 hours; an unseen delivery of a live session never goes, and freed
bytes count only files whose last link went."""

from __future__ import annotations

import json
import os
import time

from attend.domain.messages import channels, retention
from attend.domain.messages.retention import Policy
from attend.spool import REMOVE_RUN
from tests.support import World, name_at, post, tree

DAY = 86400.0


def policy(**kw: float) -> Policy:
    base = {"max_age": 14 * DAY, "max_per_room": 10000, "max_seen_per_session": 10000, "session_grace": DAY}
    base.update(kw)
    return Policy(base["max_age"], int(base["max_per_room"]), int(base["max_seen_per_session"]), base["session_grace"])


def never_live(_sid: str) -> bool:
    return False


def test_room_records_past_the_age_limit_go_and_newer_ones_stay(world: World) -> None:
    spool = world.spool
    old = post(spool, "open", "old", age=20 * DAY)
    new = post(spool, "open", "new", age=DAY)
    report = retention.run(spool, policy(), is_live=never_live)
    assert spool.room_names("open") == [new]
    assert report.by_reason["room-age"].files == 1
    assert report.bytes > 0
    assert old not in spool.room_names("open")


def test_each_room_keeps_only_its_newest_records(world: World) -> None:
    spool = world.spool
    names = [post(spool, "@busy", f"m{i}", age=100 - i) for i in range(8)]
    cfg = world.home / ".config" / "attend" / "config.yaml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text("retention:\n  max_per_room: 3\n")
    channels.create(spool, "busy")
    out = world.attend("cleanup", "--json")
    assert out.returncode == 0, out.stderr
    assert spool.room_names("@busy") == names[-3:]
    assert json.loads(out.stdout)["by_reason"]["room-count"]["files"] == 5


def test_an_unseen_delivery_of_a_live_session_is_never_removed(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "ops").rc == 0
    spool = world.spool
    unseen = post(spool, "@ops", "still unread", age=1)
    seen = post(spool, "@ops", "read long ago", age=2)
    assert spool.claim_all(s.session_id, [seen])
    spool.mark_seen(s.session_id, [seen])
    report = retention.run(spool, policy(max_age=0.5), is_live=lambda sid: sid == s.session_id)
    assert spool.room_names("@ops") == []  # both room records are past the (tiny) age limit
    assert spool.listing(s.session_id, "new") == [unseen]  # the delivery is intact
    assert spool.listing(s.session_id, "cur") == []  # positive control: a seen entry past the limit goes
    assert report.by_reason["seen-age"].files == 1
    # The unseen record's room link was not its last link, so only the seen record's bytes were freed.
    size = os.lstat(spool.delivery_path(s.session_id, "new", unseen)).st_size
    assert report.bytes < 2 * size + 1 and report.bytes > 0


def test_freed_bytes_count_only_files_whose_last_link_goes(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "ops").rc == 0
    spool = world.spool
    name = post(spool, "@ops", "shared inode", age=20 * DAY)
    assert spool.listing(s.session_id, "new") == [name]
    report = retention.run(spool, policy(), is_live=lambda sid: sid == s.session_id)
    assert report.files == 1 and report.bytes == 0
    assert spool.listing(s.session_id, "new") == [name]


def test_the_spool_of_an_ended_session_goes_after_the_grace_period(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "mine").rc == 0
    sid = s.session_id
    post(world.spool, "@mine", "for it", sender="x", age=1)
    s.close()
    spool = world.spool
    within = retention.run(spool, policy(), now=time.time() + 3600)
    assert within.sessions == [] and spool.exists("sessions", sid)
    report = retention.run(spool, policy(), now=time.time() + 2 * DAY)
    assert report.sessions == [sid]
    assert not spool.exists("sessions", sid)
    assert not channels.exists(spool, "mine")  # its last member went, and it was unpinned
    assert report.channels == ["mine"]


def test_old_peer_event_claims_go_with_the_age_limit_and_fresh_ones_stay(world: World) -> None:
    spool = world.spool
    assert spool.create_exclusive(b"1", "presence", "old-session.started")
    assert spool.create_exclusive(b"2", "presence", "new-session.started")
    old = time.time() - 15 * DAY
    os.utime(spool.root / "presence" / "old-session.started", (old, old))
    report = retention.run(spool, policy(), is_live=never_live)
    assert spool.names("presence") == ["new-session.started"]
    assert report.by_reason["presence"].files == 1


def test_stale_tmp_files_go_after_36_hours(world: World) -> None:
    spool = world.spool
    spool.make_dir("rooms", "open", "tmp")
    folder = spool.root / "rooms" / "open" / "tmp"
    (folder / "stale").write_bytes(b"x" * 10)
    (folder / "recent").write_bytes(b"y")
    old = time.time() - 37 * 3600
    os.utime(folder / "stale", (old, old))
    report = retention.run(spool, policy(), is_live=never_live)
    assert sorted(os.listdir(folder)) == ["recent"]
    assert report.by_reason["tmp"].files == 1 and report.by_reason["tmp"].bytes == 10


def test_a_dry_run_lists_what_would_go_with_sizes_and_removes_nothing(world: World) -> None:
    spool = world.spool
    old = post(spool, "open", "old", age=20 * DAY)
    post(spool, "open", "new", age=1)
    spool.make_dir("locks")
    world.attend("cleanup", "--dry-run")  # the first run makes its lock file
    before = tree(spool.root)
    out = world.attend("cleanup", "--dry-run")
    assert out.returncode == 0, out.stderr
    size = os.lstat(spool.room_path("open", old)).st_size
    assert f"would remove {spool.room_path('open', old)} ({size} bytes; room-age)" in out.stdout
    assert "dry run: would remove 1 file(s)" in out.stdout
    assert tree(spool.root) == before
    real = world.attend("cleanup")
    assert real.stdout.startswith("cleaned up 1 file(s), freed ")


def test_a_bounded_sweep_stops_at_its_budget_and_the_next_pass_goes_on(world: World) -> None:
    spool = world.spool
    for room in ("a-room", "b-room", "c-room"):
        for i in range(5):
            post(spool, room, f"{room} {i}", age=20 * DAY + i)
    first = retention.sweep(spool, budget=6, is_live=never_live)
    assert not first.complete and first.examined < 15
    passes = 1
    while any(spool.room_names(r) for r in ("a-room", "b-room", "c-room")):
        retention.sweep(spool, budget=6, is_live=never_live)
        passes += 1
        assert passes < 10
    assert passes >= 2


def test_loops_share_one_sweep_per_interval_unless_the_last_round_was_cut_short(world: World) -> None:
    spool = world.spool
    for i in range(5):
        post(spool, "a-room", f"old {i}", age=20 * DAY + i)
    assert not retention.sweep(spool, budget=100, is_live=never_live, pace=600).skipped  # a whole round
    post(spool, "a-room", "old again", age=20 * DAY)
    assert retention.sweep(spool, is_live=never_live, pace=600).skipped  # another loop, within the interval
    assert spool.room_names("a-room")
    for i in range(5):
        post(spool, "b-room", f"old {i}", age=20 * DAY + i)
    assert not retention.sweep(spool, is_live=never_live).skipped  # no pace: as before
    post(spool, "c-room", "old", age=20 * DAY)
    for i in range(5):
        post(spool, "d-room", f"old {i}", age=20 * DAY + i)
    assert not retention.sweep(spool, budget=1, is_live=never_live).complete  # a round cut short
    assert not retention.sweep(spool, budget=100, is_live=never_live, pace=600).skipped  # goes on at once


def test_a_sweep_skips_while_another_cleanup_holds_the_lock(world: World) -> None:
    spool = world.spool
    post(spool, "open", "old", age=20 * DAY)
    with spool.named_lock("cleanup"):
        report = retention.sweep(spool, is_live=never_live)
    assert report.skipped and spool.room_names("open")
    assert not retention.sweep(spool, is_live=never_live).skipped
    assert spool.room_names("open") == []


def test_a_channel_room_without_its_channel_is_removed_once_quiet(world: World) -> None:
    spool = world.spool
    post(spool, "@ghost", "orphaned", age=DAY)
    quiet = time.time() + 120
    retention.run(spool, policy(), is_live=never_live, now=quiet)
    assert not spool.exists("rooms", "@ghost")


def backdate(folder: object, seconds: float) -> None:
    """Set every file and folder below ``folder`` (and itself) back by ``seconds``."""
    when = time.time() - seconds
    for root, dirs, files in os.walk(str(folder)):
        for name in dirs + files:
            os.utime(os.path.join(root, name), (when, when), follow_symlinks=False)
    os.utime(str(folder), (when, when))


def test_an_ended_session_goes_even_while_others_keep_sending_to_it(world: World) -> None:
    # A session that ended still enrolled keeps receiving #open links; those are the senders'
    # doing, not its own activity, so they must not hold its spool past the grace period.
    gone, alive = world.session("proj"), world.session("other")
    assert gone.attend("join", "mine").rc == 0 and alive.attend("join", "theirs").rc == 0
    gone.close()
    backdate(world.spool_root / "sessions" / gone.session_id, 2 * DAY)
    sent = alive.attend("send", "still talking to everyone")
    assert sent.rc == 0, sent.err
    spool = world.spool
    assert len(spool.listing(gone.session_id, "new")) == 1  # the fresh link landed in its new/
    report = retention.run(spool, policy(), is_live=lambda sid: sid == alive.session_id)
    assert report.sessions == [gone.session_id]
    assert not spool.exists("sessions", gone.session_id)
    assert spool.exists("sessions", alive.session_id)  # positive control: the live sender stays


def test_reaping_a_large_ended_session_is_bounded_per_sweep_and_finishes_over_passes(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "mine").rc == 0
    spool = world.spool
    for i in range(30):
        post(spool, "open", f"backlog {i}", age=1)
    assert len(spool.listing(s.session_id, "new")) == 30
    s.close()
    backdate(world.spool_root / "sessions" / s.session_id, 2 * DAY)
    budget, passes = 10, 0
    while spool.exists("sessions", s.session_id):
        report = retention.sweep(spool, budget=budget, policy=policy(), is_live=never_live)
        assert report.examined <= budget
        passes += 1
        assert passes < 20
    assert passes >= 4  # 30 deliveries and the session's state cannot go in one pass of 10
    assert not channels.exists(spool, "mine")  # the reaping finished: its membership went too


def test_an_empty_channel_keeps_its_history_until_retention_takes_the_last_of_it(world: World) -> None:
    spool = world.spool
    s = world.session("proj")
    assert s.attend("join", "quiet").rc == 0 and s.attend("join", "recent").rc == 0
    post(spool, "@quiet", "old news", age=20 * DAY)
    young = post(spool, "@recent", "still fresh", age=DAY)
    assert s.attend("leave", "quiet").rc == 0 and s.attend("leave", "recent").rc == 0
    assert channels.exists(spool, "quiet") and channels.exists(spool, "recent")  # leaving deleted nothing
    dry = retention.run(spool, policy(), is_live=never_live, dry_run=True)
    assert dry.channels == ["quiet"] and channels.exists(spool, "quiet")
    report = retention.run(spool, policy(), is_live=never_live)
    assert report.channels == ["quiet"]
    assert not channels.exists(spool, "quiet") and not spool.exists("rooms", "@quiet")
    assert channels.exists(spool, "recent") and spool.room_names("@recent") == [young]


def listed_channels(world: World) -> list[str]:
    out = world.attend("channels", "--json")
    assert out.returncode == 0, out.stderr
    return [c["name"] for c in json.loads(out.stdout)["channels"]]


def test_a_channel_joined_and_left_without_a_message_goes_at_the_next_cleanup(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "y").rc == 0 and s.attend("leave", "y").rc == 0
    assert listed_channels(world) == ["y"]  # leaving deleted nothing
    dry = world.attend("cleanup", "--dry-run", "--json")
    assert dry.returncode == 0 and json.loads(dry.stdout)["channels"] == ["y"], dry.stdout
    assert listed_channels(world) == ["y"]  # a dry run removes nothing, and says so
    assert "would remove emptied channel(s): #y" in world.attend("cleanup", "--dry-run").stdout
    out = world.attend("cleanup")
    assert out.returncode == 0, out.stderr
    assert "removed emptied channel(s): #y" in out.stdout, out.stdout
    assert listed_channels(world) == []
    assert not world.spool.exists("channels", "y")


def test_cleanup_keeps_an_empty_pinned_channel_and_one_with_a_member(world: World) -> None:
    a, b = world.session("proj"), world.session("other")
    assert a.attend("join", "kept", "--pin").rc == 0 and a.attend("leave", "kept").rc == 0
    assert b.attend("join", "busy").rc == 0
    out = world.attend("cleanup", "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["channels"] == [], out.stdout
    assert listed_channels(world) == ["busy", "kept"]


def test_retention_keeps_an_empty_pinned_channel(world: World) -> None:
    spool = world.spool
    channels.create(spool, "kept", pinned=True)
    post(spool, "@kept", "old news", age=20 * DAY)
    retention.run(spool, policy(), is_live=never_live)
    assert channels.exists(spool, "kept")


def test_a_large_room_goes_whole_without_following_a_planted_link_and_counts_only_last_links(world: World) -> None:
    # Enough old records that the removals run in parallel (spool.REMOVE_RUN names a thread).
    spool = world.spool
    spool.make_room("open")
    old = [name_at(time.time() - 20 * DAY) for _ in range(4 * REMOVE_RUN)]
    for name in old:
        assert spool.create_exclusive(b"x" * 100, "rooms", "open", "new", name)
    new = [post(spool, "open", "stays", age=DAY)]
    records = world.spool_root / "rooms" / "open" / "new"
    target = world.home / "target"
    target.write_bytes(b"not the spool's")
    planted = name_at(time.time() - 20 * DAY)
    os.symlink(target, records / planted)
    shared = world.home / "shared"
    os.link(records / old[0], shared)  # a second link: removing the record frees nothing
    report = retention.run(spool, policy(), is_live=never_live)
    assert spool.room_names("open") == new
    assert target.read_bytes() == b"not the spool's"  # the link itself went, never its target
    assert shared.read_bytes() == b"x" * 100
    assert report.files == len(old) + 1
    assert report.bytes == 100 * (len(old) - 1) + len(os.fsencode(target))  # a symlink's size: its target's path


def test_a_humans_read_mail_ages_out_and_its_unread_mail_never_does(world: World) -> None:
    from attend.domain.sessions import humans

    spool = world.spool
    user = "fixture-human"
    humans.note_active(spool, user)
    old_read = post(spool, f"h-{user}", "read three weeks ago", age=20 * DAY)
    assert spool.link_to_human(f"h-{user}", old_read, user)
    shown, _ = humans.read_unread(spool, user)  # the human reads it: cur/
    assert [n for n, _ in shown] == [old_read]
    old_unread = post(spool, f"h-{user}", "never read", age=20 * DAY)
    assert spool.link_to_human(f"h-{user}", old_unread, user)
    fresh_read = post(spool, f"h-{user}", "read today", age=DAY)
    assert spool.link_to_human(f"h-{user}", fresh_read, user)
    spool.claim_all(user, [fresh_read], "humans")
    spool.mark_seen(user, [fresh_read], "humans")

    out = world.attend("cleanup", "--json")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert [n.split(":")[0] for n in spool.listing(user, "cur", "humans")] == [fresh_read]
    assert spool.listing(user, "new", "humans") == [old_unread]  # unseen: never removed
    assert report["by_reason"]["seen-age"]["files"] == 1 and report["bytes"] > 0  # its last link went
