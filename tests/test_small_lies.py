"""What attend says is what it did: the small lies a newcomer found, each pinned."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

from attend.domain.sessions import sessions
from attend.verbs import send
from tests.support import ATTEND, World, human_mailbox


def attend(world: World, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ATTEND, *args],
        env={**world.env, **env},
        cwd=world.project("proj"),
        capture_output=True,
        text=True,
        timeout=60,
    )


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_settings_folders_attend_makes_are_0700_as_files_md_promises(world: World) -> None:
    assert not (world.home / ".config").exists()
    assert attend(world, "install").returncode == 0
    assert attend(world, "config", "init").returncode == 0
    root = world.home / ".config" / "attend"
    made = [world.home / ".config", root, root / "targets", *(root / "targets").iterdir()]
    assert {str(p): mode(p) for p in made} == {str(p): 0o700 for p in made}


def test_the_inbox_footer_counts_every_message_it_printed(world: World) -> None:
    human_mailbox(world, world.env["USER"])
    a = world.session("api")
    sessions.enroll(world.spool, world.context(a).who(), "run")
    send.run(world.context(a), send.SendRequest("to the human", to=world.env["USER"]))
    send.run(world.context(a), send.SendRequest("to everyone"))
    out = attend(world, "inbox")
    assert out.returncode == 0, out.stderr
    printed = out.stdout.count("  message: ")
    assert printed == 2, out.stdout
    assert out.stdout.rstrip().splitlines()[-1].startswith("page 1 · 2 shown (1 unread, to you)"), out.stdout


def test_tab_completion_after_an_unknown_command_prints_nothing_onto_the_prompt(world: World) -> None:
    for words, cword in (("attend foo ", "2"), ("attend foo --", "2"), ("attend sned x", "2")):
        out = attend(world, _ATTEND_COMPLETE="bash_complete", COMP_WORDS=words, COMP_CWORD=cword)
        assert (out.returncode, out.stdout.strip(), out.stderr) == (0, "", ""), (words, out)
    # A known command still completes, and a typed unknown command is still refused, with a suggestion.
    known = attend(world, _ATTEND_COMPLETE="bash_complete", COMP_WORDS="attend sen", COMP_CWORD="1")  # send, sensors
    assert known.stdout.split() == ["plain,send", "plain,sensors"]
    typo = attend(world, "sned")
    assert typo.returncode == 2 and "did you mean 'send'?" in typo.stderr


def test_a_read_only_spool_lets_reading_commands_through_and_a_write_says_what_is_wrong(world: World) -> None:
    """A spool mounted read-only (unshare: a mount namespace of the test's own, no privilege needed):
    peers and log read it; send says the spool is read-only to the user, in one line."""
    assert attend(world, "send", "hello").returncode == 0
    spool = world.spool_root
    script = (
        f"mount --bind {spool} {spool} && mount -o remount,bind,ro {spool} && "
        f"{ATTEND} peers; echo peers=$?; {ATTEND} log; echo log=$?; {ATTEND} send again; echo send=$?"
    )
    out = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script],
        env=world.env,
        cwd=world.project("proj"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "peers=0" in out.stdout and "log=0" in out.stdout, out.stdout + out.stderr
    assert "send=1" in out.stdout, out.stdout
    (said,) = out.stderr.strip().splitlines()
    assert said == (
        f"attend: spool {spool} is read-only to you and this command writes to it (commands that only read, "
        f"such as peers, log and tail, work); to let attend write, run: chmod 700 {spool}"
    )


def test_a_session_that_just_ended_is_parked_for_send_as_it_is_gone_from_peers(world: World) -> None:
    """One liveness policy: its heartbeat is fresh (its loop ran a moment ago), its client has ended."""
    a = world.session("api")
    sessions.enroll(world.spool, world.context(a).who(), "run")
    sessions.touch_heartbeat(world.spool, a.session_id)
    live = json.loads(attend(world, "send", "--json", "while it runs").stdout)
    assert (live["live"], live["parked"]) == (1, 0), live
    a.close()  # the client's process ends; the heartbeat it left is seconds old
    assert a.session_id not in attend(world, "peers", "--json").stdout
    after = json.loads(attend(world, "send", "--json", "after it ended").stdout)
    assert (after["live"], after["parked"]) == (0, 1), after
    assert "(1 recipient: 1 parked (" in attend(world, "send", "and in words").stdout


def _mirror(world: World, *entries: dict[str, object]) -> None:
    """What a relay would have written: this spool served by a relay, and another host's presence."""
    import time

    from attend.domain.messages import remote

    spool = world.spool
    spool.make_dir("relay")
    spool.write_state(b"{}", "relay", "enabled")
    remote.write(spool, "vm", False, 45.0, [{**e, "seen": time.time()} for e in entries])


def test_a_send_to_another_hosts_session_names_it_and_says_it_is_queued_for_the_relay(world: World) -> None:
    sid = "0b5c1d2e-3f40-4a5b-8c6d-7e8f9a0b1c2d"
    session = {"host": "beta", "kind": "agent", "id": sid, "name": "Tao-alpha", "project": "/src/api"}
    _mirror(world, {**session, "status": "waiting", "channels": []})
    for to in ("Tao-alpha@beta", f"{sid}@beta", "Tao-alpha"):
        out = attend(world, "send", "--to", to, "hello over there")
        assert out.returncode == 0, out.stderr
        line = out.stdout.strip()
        assert line.endswith(" to Tao-alpha@beta (queued for the relay)"), line
        assert sid not in line and "0 recipients" not in line
    sent = json.loads(attend(world, "send", "--json", "--to", "Tao-alpha@beta", "and in JSON").stdout)
    assert (sent["to_name"], sent["to"], sent["delivered"]) == ("Tao-alpha@beta", f"{sid}@beta", 0), sent


def test_a_human_on_another_host_shows_their_own_last_activity_not_the_relays_heartbeat(world: World) -> None:
    import time

    from attend.relay import daemon

    hour_ago = time.time() - 3600
    bob = {"host": "beta", "kind": "human", "id": "bob", "name": "bob", "project": "", "status": "active"}
    _mirror(world, {**bob, "channels": [], "active_at": hour_ago})  # heard just now, active an hour ago
    found = json.loads(attend(world, "peers", "--json").stdout)["humans"]
    (remote,) = [h for h in found if h.get("host") == "beta"]
    assert remote["active_at"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(hour_ago)), remote
    # This host's relay publishes its human's own activity in the entry it puts (no server needed).
    from attend.relay.settings import RelaySettings

    assert attend(world, "send", "a human's send here").returncode == 0
    relay = daemon.Relay(world.spool, RelaySettings(["nats://127.0.0.1:1"], "alpha"), str(world.home), print)
    (entry,) = [e for e in relay._snapshot().values() if e["kind"] == "human"]
    from attend.domain.sessions import humans

    (me,) = [h for h in humans.recent(world.spool) if h.user == entry["id"]]
    assert entry["active_at"] == me.active_at, entry  # the human's own activity, as this host keeps it


def test_the_glossarys_cold_start_says_what_a_newly_enrolled_session_is_handed() -> None:
    """It said a new session is handed no earlier messages; #open up to 120 s old is handed over."""
    glossary = Path(__file__).resolve().parent.parent / "docs" / "guide" / "glossary.md"
    entry = " ".join(glossary.read_text(encoding="utf-8").split("**cold start**:", 1)[1].split("\n\n", 1)[0].split())
    assert f"up to {sessions.FRESH_WINDOW:g} s old" in entry, entry
    assert f"the newest {sessions.ADDRESSED_MAX}" in entry, entry
    assert "is not handed the room's earlier history" not in entry
