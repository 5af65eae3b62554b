"""Nothing lost without a word, and the relay's manners (issue 32, findings 6, 7 and 8), between two
hosts on one machine with a real nats-server (tests/test_relay.py's hosts).

- The host name belongs to the spool once a relay has run: a process whose ``ATTEND_HOST`` says
  otherwise sends under the spool's name, and the message crosses.
- A record the relay cannot publish is set aside where ``doctor`` and ``attend relay --check`` show
  it, and the sender's next send says so; ``doctor`` names a relay running under another name than
  the spool's.
- A reply on one host to a human's channel message on another reaches that human's mailbox.
- A bare name that fits a session here addresses it, whatever another host's presence says.
- ``attend relay`` without its extra says what to install in one line (exit 1), and a SIGTERM stops
  it without a traceback.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from attend import layout
from tests import test_relay
from tests.support import ATTEND, World, wait_until
from tests.test_relay import Host

server = test_relay.server  # the fixtures: a nats-server, and two hosts with their relays running
hosts = test_relay.hosts

pytestmark = pytest.mark.relay


def relay_check(h: Host) -> dict[str, str]:
    r = h.world.attend("doctor", "--json")
    return next(c for c in json.loads(r.stdout)["checks"] if c["name"] == "relay")


def test_a_send_whose_environment_names_another_host_goes_out_under_the_spools_host(
    hosts: tuple[Host, Host],
) -> None:
    a, b = hosts
    sb = b.session("Bea")
    r = a.world.attend("send", "--json", "from a shell without the relay's ATTEND_HOST", env={"ATTEND_HOST": "vm"})
    assert r.returncode == 0, r.stderr
    sent = json.loads(r.stdout)["id"]
    assert sent.endswith(".hosta"), sent  # the spool's host, not the environment's
    body = "from a shell without the relay's ATTEND_HOST"
    wait_until(lambda: body in b.bodies(sb.session_id), "the message on hostb")
    assert not a.outbox()
    assert not (a.world.spool_root / "relay" / "outbox" / "aside").exists()
    found = relay_check(a)
    assert found["status"] == "ok" and "running for host hosta" in found["detail"], found


def test_the_relay_started_under_another_name_relays_as_the_spools_host_and_says_so(
    hosts: tuple[Host, Host],
) -> None:
    a, b = hosts
    a.stop_relay()
    a.world.env["ATTEND_HOST"] = "vm"
    a.start_relay()
    assert "this spool's host is hosta" in a.said() and "not vm" in a.said(), a.said()
    sb = b.session("Bea")
    r = a.world.attend("send", "--json", "still hosta")
    assert r.returncode == 0 and json.loads(r.stdout)["id"].endswith(".hosta"), r.stdout + r.stderr
    wait_until(lambda: "still hosta" in b.bodies(sb.session_id), "the message on hostb")


def test_a_record_the_relay_sets_aside_shows_in_doctor_check_and_the_senders_next_send(
    hosts: tuple[Host, Host],
) -> None:
    a, _b = hosts
    s = a.session("Ada")
    a.stop_relay()
    # A record queued under another host's name (an attend before the spool kept its host name): the
    # relay cannot publish it as hosta.
    from attend.domain import delivery, envelope
    from attend.domain.envelope import Signal

    saved = layout._HOST
    layout._HOST = "vm"
    try:
        sig = Signal("", "Ada", "agent", s.session_id, "*", "open", "/p", "lost in silence before", 0.0)
        name = layout.unique_name()
        a.world.spool.publish(["open"], envelope.render(sig.with_id(name, layout.name_time(name))), name, outbox=True)
    finally:
        layout._HOST = saved
    assert delivery.crosses_hosts(a.world.spool, ["open"])
    a.start_relay()
    aside = a.world.spool_root / "relay" / "outbox" / "aside"
    wait_until(lambda: aside.is_dir() and [p.name for p in aside.iterdir()] == [name], "the record set aside")
    found = relay_check(a)
    assert found["status"] == "warn" and "1 record(s) set aside" in found["detail"] and name in found["detail"], found
    r = a.world.attend("relay", "--check")
    assert "1 record(s) set aside" in r.stdout and name in r.stdout, r.stdout + r.stderr
    r = s.attend("send", "next one")
    assert r.rc == 0, r.stderr
    assert f"your message {name} did not reach other hosts" in r.stderr and "host vm" in r.stderr, r.stderr
    r = s.attend("send", "and the one after")
    assert "did not reach other hosts" not in r.stderr  # said once


def test_doctor_fails_a_relay_that_runs_under_another_name_than_the_spools(hosts: tuple[Host, Host]) -> None:
    a, _b = hosts
    (a.world.spool_root / "relay" / "enabled").write_text(json.dumps({"host": "devbox"}))
    found = relay_check(a)
    assert found["status"] == "fail" and "runs as host hosta" in found["detail"] and "devbox" in found["detail"]


def test_a_reply_on_another_host_to_a_humans_channel_message_reaches_the_humans_mailbox(
    hosts: tuple[Host, Host],
) -> None:
    a, b = hosts
    a.session("Ada")  # hosta has a member of #crew too
    sb = b.session("Bea")
    r = a.world.attend("send", "--to", "#crew", "who is on call tonight?")
    assert r.returncode == 0, r.stderr
    wait_until(lambda: "who is on call tonight?" in b.bodies(sb.session_id), "the question on hostb")
    here = b.records(sb.session_id, "who is on call tonight?")[0].decode()
    local = next(line.split(": ", 1)[1] for line in here.splitlines() if line.startswith("Message-ID"))
    r = sb.attend("reply", "--re", local.strip("<>").split("@")[0], "I am")
    assert r.rc == 0, r.stderr
    wait_until(lambda: "I am" in a.human_bodies("fixture-human"), "the reply in the human's mailbox on hosta")
    time.sleep(1)
    assert a.human_bodies("fixture-human").count("I am") == 1
    mail = [
        f.read_text()
        for d in ("new", "cur")
        if (a.world.spool_root / "humans" / "fixture-human" / d).is_dir()
        for f in (a.world.spool_root / "humans" / "fixture-human" / d).iterdir()
    ]
    reply = next(m for m in mail if m.endswith("I am"))
    assert f"From-Id: {sb.session_id}@hostb" in reply and "Room: @crew" in reply


def test_a_bare_name_of_a_session_here_addresses_it_whatever_another_hosts_presence_says(world: World) -> None:
    s = world.session("proj", name="Sam")
    assert s.attend("join", "crew").rc == 0
    world.spool.make_dir("relay")
    world.spool.write_state(b"{}", "relay", "enabled")
    other = "1" * 8 + "-0000-4000-8000-" + "1" * 12
    entry = {"host": "devbox", "kind": "agent", "id": other, "name": "Sam", "project": "/p", "status": "", "seen": 0}
    entry["seen"] = time.time()
    doc = {"host": "vm", "same_humans": False, "ttl": 45.0, "peers": [entry]}
    world.spool.write_state(json.dumps(doc).encode(), "relay", "peers.json")
    r = world.attend("send", "--json", "--to", "Sam", "for the one here")
    assert r.returncode == 0, r.stderr
    sent = json.loads(r.stdout)
    assert sent["room"] == f"d-{s.session_id}"
    assert "'Sam' is a session here; Sam@devbox on another host shares the name (say Sam@devbox)" in sent["warnings"]
    r = world.attend("send", "--json", "--to", "Sam@devbox", "for the other")
    assert r.returncode == 0 and json.loads(r.stdout)["room"] == f"d-{other}@devbox", r.stdout + r.stderr


def test_the_relay_without_its_extra_says_what_to_install_in_one_line(world: World, tmp_path: Path) -> None:
    hidden = tmp_path / "no-nats"
    (hidden / "nats").mkdir(parents=True)
    (hidden / "nats" / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'nats'\")\n")
    (world.home / ".config" / "attend").mkdir(parents=True)
    (world.home / ".config" / "attend" / "config.yaml").write_text("relay:\n  servers: [nats://127.0.0.1:4222]\n")
    for args in (("relay",), ("relay", "--check")):
        r = world.attend(*args, env={"PYTHONPATH": str(hidden)})
        assert r.returncode == 1, r.stdout + r.stderr
        assert r.stderr == "attend relay needs the relay extra: pip install '.[relay]'\n", r.stderr
    assert ATTEND and sys.executable  # the installed entry point, as a user runs it


def test_a_clean_stop_of_the_relay_prints_no_traceback(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    sb = b.session("Bea")
    a.world.attend("send", "while the relays run")
    wait_until(lambda: "while the relays run" in b.bodies(sb.session_id), "the message on hostb")
    assert a.stop_relay(signal.SIGTERM) == 0  # connected, watching presence, fetching
    assert b.stop_relay(signal.SIGINT) == 0
    a.start_relay()
    a.world.attend("send", "queued while the server is gone")
    assert a.stop_relay(signal.SIGTERM) == 0
    for h in (a, b):
        said = h.said()
        assert "Traceback" not in said and "CancelledError" not in said and "never retrieved" not in said, said
    assert os.path.exists(a.log)
