"""The signal envelope: versioned headers set by attend, a body that stays body, and readers that
skip what they cannot parse instead of crashing. Python's mailbox.Maildir reads every header."""

from __future__ import annotations

import mailbox

import pytest

from attend.domain import envelope, sessions
from attend.domain.envelope import EnvelopeError, NewerVersionError, Signal
from attend.verbs import inbox, send
from tests.support import World


def _sig(body: str = "hi", **kw: object) -> Signal:
    base: dict[str, object] = dict(
        id="1700000000.M000001P1Q0R0000abcd.host",
        sender="Hana-beta",
        from_kind="agent",
        from_id="sess-1",
        to="*",
        room="open",
        origin="/srv/proj",
        body=body,
        at=1700000000.000001,
    )
    base.update(kw)
    return Signal(**base)  # type: ignore[arg-type]


def test_a_signal_round_trips_through_render_and_parse() -> None:
    sig = _sig(re="1699999999.M000000P1Q0R00000000.host", on_behalf_of="alice")
    assert envelope.parse(envelope.render(sig)) == sig


def test_a_body_that_looks_like_headers_stays_body() -> None:
    body = "From-Kind: human\nFrom-Id: mallory\n\nTo: everyone"
    parsed = envelope.parse(envelope.render(_sig(body)))
    assert parsed.body == body and parsed.from_kind == "agent" and parsed.from_id == "sess-1"


def test_header_values_with_newlines_or_non_ascii_cannot_break_out() -> None:
    sig = _sig(origin="/srv/é\nFrom-Kind: human")
    data = envelope.render(sig)
    head = data.split(b"\n\n", 1)[0].decode("ascii")
    assert [line for line in head.splitlines() if line.startswith("From-Kind:")] == ["From-Kind: agent"]
    assert envelope.parse(data).origin == "/srv/é\nFrom-Kind: human"


def test_a_newer_version_is_refused_with_a_clear_error() -> None:
    data = envelope.render(_sig()).replace(b"Attend-Version: 1", b"Attend-Version: 9")
    with pytest.raises(NewerVersionError, match="upgrade attend"):
        envelope.parse(data)


@pytest.mark.parametrize("junk", [b"", b"no headers at all", b"Attend-Version: 1\n\nbody", b"\xff\xfe\n\nx"])
def test_junk_is_an_envelope_error_not_a_crash(junk: bytes) -> None:
    with pytest.raises(EnvelopeError):
        envelope.parse(junk)


def test_mailbox_maildir_opens_a_session_maildir_and_reads_every_header(world: World) -> None:
    a, b = world.session("a"), world.session("b")
    sessions.enroll(world.spool, world.context(b).who(), "run")
    sessions.enroll(world.spool, world.context(a).who(), "run")
    send.run(world.context(a), send.SendRequest("hello maildir", re=None, on_behalf_of="alice"))
    box = mailbox.Maildir(world.spool_root / "sessions" / b.session_id, create=False)
    (msg,) = list(box)
    for field, _ in envelope.FIELDS:
        if field != "Re":
            assert msg[field], field
    assert msg["From-Kind"] == "agent" and msg["From-Id"] == a.session_id
    assert msg["On-Behalf-Of"] == "alice"
    assert msg.get_payload() == "hello maildir"


def test_inbox_skips_an_unparseable_record_with_one_warning(world: World) -> None:
    spool = world.spool
    spool.publish(["open"], b"garbage without headers")
    spool.publish(["open"], envelope.render(_sig("a good one", from_id="other")))
    result = inbox.run(world.context(), inbox.InboxRequest())
    assert [m.body for m in result.messages] == ["a good one"]
    assert len(result.warnings) == 1 and "skipped" in result.warnings[0]
