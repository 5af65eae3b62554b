"""Channels: membership is one file per member, joins never erase each other, a late joiner is not
handed history, leaving the last channel withdraws the join enrollment, and a listing changes nothing."""

from __future__ import annotations

import json
import subprocess

import pytest

from attend.domain.messages import channels
from attend.domain.sessions import sessions
from attend.testing.standin import Result
from tests.support import ATTEND, World, post, tree


def human(world: World, *args: str) -> Result:
    """Run attend as the human at a terminal, with the stand-in's result shape."""
    p = world.attend(*args)
    return Result(p.returncode, p.stdout, p.stderr)


def members_of(world: World, name: str) -> list[str]:
    return channels.members(world.spool, name)


def test_joining_a_channel_enrolls_the_session_and_writes_one_member_file(world: World) -> None:
    s = world.session("proj")
    out = s.attend("join", "#deploy")
    assert out.rc == 0, out.stderr
    assert out.stdout.strip() == "[attend] joined #deploy"
    assert members_of(world, "deploy") == [s.session_id]
    assert sessions.read_enrollment(world.spool, s.session_id).ways == ("join",)  # type: ignore[union-attr]
    assert sessions.registration(world.spool, s.session_id, str(s.cwd)) is not None


@pytest.mark.slow  # a stress run: the full suite (CI) has it, the developer loop leaves it out
def test_fifty_concurrent_joins_leave_fifty_members(world: World) -> None:
    procs = [
        subprocess.Popen(
            [ATTEND, "join", "crowd"],
            env={**world.env, "USER": f"user{i}"},
            cwd=str(world.project("proj")),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(50)
    ]
    codes = [p.wait(timeout=120) for p in procs]
    for p in procs:
        assert p.stdout and p.stderr
        p.stdout.close()
        p.stderr.close()
    assert codes == [0] * 50
    assert members_of(world, "crowd") == sorted(f"user{i}" for i in range(50))


def test_a_late_joiner_is_not_handed_history_older_than_two_minutes(world: World) -> None:
    early = world.session("proj")
    assert early.attend("join", "deploy").rc == 0
    post(world.spool, "@deploy", "old one", age=600)
    post(world.spool, "@deploy", "old two", age=300)
    fresh = post(world.spool, "@deploy", "fresh", age=5)
    late = world.session("proj")
    out = late.attend("join", "deploy")
    assert out.rc == 0, out.stderr
    assert "(2 earlier messages not shown; attend inbox)" in out.stdout
    assert world.spool.listing(late.session_id, "new") == [fresh]


def test_joining_a_second_channel_counts_only_that_channels_history(world: World) -> None:
    s = world.session("proj")
    post(world.spool, "open", "old open", age=900)
    out = s.attend("join", "first")
    assert "1 earlier message not shown" in out.stdout  # the first join enrolls: #open is covered once
    post(world.spool, "@second", "old second", age=900)
    post(world.spool, "@second", "older second", age=1900)
    out = s.attend("join", "second")
    assert out.rc == 0, out.stderr
    assert "(2 earlier messages not shown; attend inbox)" in out.stdout


def test_rejoining_keeps_what_is_still_owed(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "deploy").rc == 0
    assert s.attend("join", "keep").rc == 0  # stays enrolled through the leave below
    owed = post(world.spool, "@deploy", "unread", age=1)
    assert world.spool.listing(s.session_id, "new") == [owed]
    assert s.attend("leave", "deploy").rc == 0
    out = s.attend("join", "deploy")
    assert out.rc == 0 and "not shown" not in out.stdout
    assert world.spool.listing(s.session_id, "new") == [owed]
    again = s.attend("join", "deploy")
    assert again.stdout.strip() == "[attend] already in #deploy"


def test_leaving_the_last_channel_withdraws_the_join_enrollment(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "a").rc == 0
    assert s.attend("join", "b").rc == 0
    assert s.attend("leave", "a").rc == 0
    assert sessions.is_enrolled(world.spool, s.session_id)  # still in #b
    out = s.attend("leave", "#b")
    assert out.stdout.strip().startswith("[attend] left #b")
    assert not sessions.is_enrolled(world.spool, s.session_id)


def test_leaving_the_last_channel_keeps_an_enrollment_made_by_run(world: World) -> None:
    s = world.session("proj")
    sessions.enroll(world.spool, world.context(s).who(), "run")
    assert s.attend("join", "a").rc == 0
    assert s.attend("leave", "a").rc == 0
    enrollment = sessions.read_enrollment(world.spool, s.session_id)
    assert enrollment is not None and enrollment.ways == ("run",)


def test_a_channel_left_empty_keeps_its_history(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "temp").rc == 0
    post(world.spool, "@temp", "history", age=1)
    out = s.attend("leave", "temp")
    assert out.rc == 0 and "its history stays until retention takes it" in out.stdout
    assert channels.exists(world.spool, "temp") and members_of(world, "temp") == []
    assert world.spool.room_names("@temp")


def test_leave_yes_deletes_the_history_of_the_channel_it_empties(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "temp").rc == 0
    post(world.spool, "@temp", "history", age=1)
    out = s.attend("leave", "temp", "--yes")
    assert "deleted with its history" in out.stdout
    assert not world.spool.exists("channels", "temp")
    assert not world.spool.exists("rooms", "@temp")


def test_leave_yes_never_deletes_a_channel_others_are_still_in(world: World) -> None:
    a, b = world.session("proj"), world.session("proj")
    assert a.attend("join", "shared").rc == 0 and b.attend("join", "shared").rc == 0
    assert a.attend("leave", "shared", "--yes").rc == 0
    assert members_of(world, "shared") == [b.session_id]


def test_a_pinned_channel_left_empty_stays(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "lasting", "--pin").rc == 0
    post(world.spool, "@lasting", "history", age=1)
    assert s.attend("leave", "lasting").rc == 0
    assert channels.exists(world.spool, "lasting")
    assert world.spool.room_names("@lasting")


def test_open_cannot_be_joined_left_or_dissolved(world: World) -> None:
    for verb in ("join", "leave", "dissolve"):
        out = human(world, verb, "#open")
        assert out.rc == 2, (verb, out.stderr)
        assert "#open is the base channel" in out.stderr
        assert out.stdout == ""
    assert not world.spool.exists("channels", "open")


def test_invalid_names_and_unknown_channels_are_clear_errors_that_write_nothing(world: World) -> None:
    before = tree(world.spool.root)
    bad = human(world, "join", "no/slashes")
    assert bad.rc == 2 and "invalid channel name" in bad.stderr
    for args in (("leave", "ghost"), ("channels", "describe", "ghost", "x"), ("channels", "pin", "ghost")):
        out = human(world, *args)
        assert out.rc == 1, args
        assert "#ghost: no such channel" in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
    assert tree(world.spool.root) == before


def test_leaving_a_channel_one_is_not_in_says_so_and_succeeds(world: World) -> None:
    human(world, "channels", "create", "here")
    out = human(world, "leave", "here")
    assert out.rc == 0
    assert "not in #here" in out.stdout


def test_channels_joined_changes_nothing_on_disk(world: World) -> None:
    alive = world.session("proj")
    gone = world.session("proj")
    assert alive.attend("join", "deploy").rc == 0
    assert gone.attend("join", "deploy").rc == 0
    gone.close()  # its record is gone: a plain listing would prune it
    before = tree(world.spool.root)
    out = alive.attend("channels", "--joined", "--json")
    assert out.rc == 0, out.stderr
    assert [c["name"] for c in json.loads(out.stdout)["channels"]] == ["deploy"]
    assert tree(world.spool.root) == before
    plain = alive.attend("channels", "--json")  # the plain listing reads only, too
    assert plain.rc == 0 and tree(world.spool.root) == before


def test_a_channels_listing_changes_nothing_and_shows_only_who_is_here(world: World) -> None:
    a = world.session("proj")
    b = world.session("proj")
    assert a.attend("join", "solo").rc == 0
    assert b.attend("join", "shared").rc == 0
    assert a.attend("join", "shared").rc == 0
    assert human(world, "channels", "create", "ops", "operations", "room").rc == 0
    a.close()
    before = tree(world.spool.root)
    shown = human(world, "channels")
    out = json.loads(human(world, "channels", "--json").stdout)
    assert tree(world.spool.root) == before  # a listing is a listing: nothing pruned, nothing removed
    assert "pruned" not in shown.stdout and "removed" not in shown.stdout, shown.stdout
    listed = {c["name"]: c for c in out["channels"]}
    assert set(listed) == {"ops", "shared", "solo"}
    assert listed["shared"]["members"] == [b.session_id]  # the ended session is not shown as here
    assert listed["solo"]["members"] == []
    assert listed["ops"]["pinned"] is True and listed["ops"]["description"] == "operations room"


def test_create_describe_pin_and_unpin(world: World) -> None:
    assert human(world, "channels", "create", "ops", "first").stdout.strip() == "[attend] created #ops — first"
    dup = human(world, "channels", "create", "ops")
    assert dup.rc == 1 and "#ops already exists" in dup.stderr
    assert human(world, "channels", "describe", "ops", "second").stdout.strip() == "[attend] #ops — second"
    assert channels.info(world.spool, "ops").description == "second"
    assert human(world, "channels", "describe", "ops").stdout.strip() == "[attend] cleared #ops description"
    bad = human(world, "channels", "describe", "ops", "tab\there")
    assert bad.rc == 2 and "single line" in bad.stderr
    assert human(world, "channels", "unpin", "ops").stdout.strip().endswith("it was empty, so it is gone")
    assert not channels.exists(world.spool, "ops")
    assert human(world, "join", "ops").rc == 0
    assert human(world, "channels", "pin", "ops").stdout.strip() == "[attend] pinned #ops"
    assert human(world, "channels", "unpin", "ops").stdout.strip() == "[attend] unpinned #ops"
    assert channels.exists(world.spool, "ops")  # a member is still in it


def test_dissolve_removes_a_channel_its_members_and_its_history(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "gone").rc == 0
    post(world.spool, "@gone", "history", age=1)
    out = human(world, "dissolve", "#gone", "--yes")
    assert out.stdout.strip() == "[attend] dissolved #gone (1 member released)"
    assert not world.spool.exists("channels", "gone")
    assert not world.spool.exists("rooms", "@gone")
    assert human(world, "dissolve", "gone", "--yes").rc == 1


def test_dissolve_without_a_terminal_needs_yes_and_changes_nothing(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "kept").rc == 0
    post(world.spool, "@kept", "history", age=1)
    before = tree(world.spool_root / "channels"), tree(world.spool_root / "rooms")
    out = human(world, "dissolve", "kept")
    assert out.rc == 2 and "add --yes" in out.stderr and len(out.stderr.splitlines()) == 1
    assert (tree(world.spool_root / "channels"), tree(world.spool_root / "rooms")) == before
    missing = human(world, "dissolve", "never-was")
    assert missing.rc == 1 and "no such channel" in missing.stderr  # refused as such, not asked about


def test_membership_files_edited_into_nonsense_are_skipped_with_a_warning(world: World) -> None:
    s = world.session("proj")
    assert s.attend("join", "mess").rc == 0
    folder = world.spool.root / "channels" / "mess"
    (folder / "members" / "not a member!").write_text("junk")
    (folder / "members" / "subdir").mkdir()
    (folder / "members" / s.session_id).write_text("{{{ not json")
    (folder / "meta.json").write_text("[broken")
    out = human(world, "channels", "--json")
    assert out.rc == 0, out.stderr
    listed = {c["name"]: c for c in json.loads(out.stdout)["channels"]}
    assert listed["mess"]["members"] == [s.session_id]
    assert listed["mess"]["pinned"] is True  # an unreadable meta.json never lets the channel be deleted
    warnings = json.loads(out.stdout)["warnings"]
    assert any("not a member!" in w for w in warnings)
    assert any("meta.json is not valid JSON" in w for w in warnings)
    assert s.attend("leave", "mess").rc == 0
    assert channels.exists(world.spool, "mess")


def test_a_human_may_join_a_channel_and_reads_it_in_inbox_without_being_enrolled(world: World) -> None:
    s = world.session("proj")
    other = world.session("proj")
    assert s.attend("join", "ops").rc == 0
    assert other.attend("join", "ops").rc == 0
    out = human(world, "join", "ops")
    assert out.rc == 0, out.stderr
    assert "fixture-human" in members_of(world, "ops")
    assert not world.spool.exists("sessions", "fixture-human", "enrolled")
    assert s.attend("send", "--channel", "ops", "for the channel").rc == 0
    inbox = json.loads(human(world, "inbox", "--json").stdout)
    assert [m["body"] for m in inbox["messages"]] == ["for the channel"]
    status = json.loads(human(world, "status", "--json").stdout)
    assert status["channels"] == ["#ops"]


def test_sending_to_a_channel_with_no_other_live_member_lists_live_channels(world: World) -> None:
    a = world.session("proj")
    b = world.session("proj")
    assert a.attend("join", "lonely").rc == 0
    assert a.attend("join", "busy").rc == 0
    assert b.attend("join", "busy").rc == 0
    out = a.attend("send", "--channel", "lonely", "anyone?")
    assert out.rc == 1
    assert "no member but you" in out.stderr and "channels with members to hear it: #busy" in out.stderr


def test_a_channel_whose_only_other_member_is_a_human_can_be_sent_to(world: World) -> None:
    a = world.session("proj")
    assert a.attend("join", "ops").rc == 0
    assert world.attend("join", "ops").returncode == 0  # the operator reads #ops with inbox or tail
    out = a.attend("send", "--channel", "ops", "deploy done")
    assert out.rc == 0, out.stderr
    listed = world.attend("inbox", "--json")
    assert [m["body"] for m in json.loads(listed.stdout)["messages"]] == ["deploy done"]


def test_channel_names_are_case_insensitive(world: World) -> None:
    a = world.session("proj")
    assert a.attend("join", "Deploy").rc == 0
    assert a.attend("leave", "#deploy", "--yes").rc == 0
    assert not channels.exists(world.spool, "Deploy") and not channels.exists(world.spool, "deploy")
