"""The signal envelope: versioned headers set by attend, a body that stays body, and readers that
skip what they cannot parse instead of crashing. The standard mail headers come first, written and
read by the stdlib email package; Python's mailbox.Maildir reads every room and mailbox."""

from __future__ import annotations

import datetime
import email
import email.policy
import mailbox
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attend import layout
from attend.domain.core import envelope
from attend.domain.core.envelope import EnvelopeError, NewerVersionError, Signal
from attend.verbs import inbox, send
from tests.support import World, conversation

# A record as attend 0.x wrote it (Attend-Version 1), before the standard mail headers.
V1_RECORD = (
    b"Attend-Version: 1\n"
    b"Message-Id: 1796033301.M406193P3416Q0Rfe61cb09.vm\n"
    b"Date: Mon, 30 Nov 2026 10:08:21 +0000\n"
    b"From: Hana-beta\n"
    b"From-Kind: agent\n"
    b"From-Id: 0b6f3d2e-6c1a-4a53-9a53-1d2b3c4d5e6f\n"
    b"On-Behalf-Of: alice\n"
    b"To: *\n"
    b"Room: open\n"
    b"Re: 1796033290.M120004P3388Q2R0badc0de.vm\n"
    b"Origin: /srv/%C3%A9\n"
    b"\n"
    b"an old body"
)


def _mail(data: bytes) -> email.message.EmailMessage:
    msg = email.message_from_bytes(data, policy=email.policy.default)
    assert isinstance(msg, email.message.EmailMessage)
    return msg


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
    data = envelope.render(_sig()).replace(f"Attend-Version: {envelope.VERSION}".encode(), b"Attend-Version: 9")
    with pytest.raises(NewerVersionError, match="upgrade attend"):
        envelope.parse(data)


@pytest.mark.parametrize("junk", [b"", b"no headers at all", b"Attend-Version: 1\n\nbody", b"\xff\xfe\n\nx"])
def test_junk_is_an_envelope_error_not_a_crash(junk: bytes) -> None:
    with pytest.raises(EnvelopeError):
        envelope.parse(junk)


def test_inbox_skips_an_unparseable_record_with_one_warning(world: World) -> None:
    spool = world.spool
    spool.publish(["open"], b"garbage without headers")
    spool.publish(["open"], envelope.render(_sig("a good one", from_id="other")))
    result = inbox.run(world.context(), inbox.InboxRequest())
    assert [m.body for m in result.messages] == ["a good one"]
    assert len(result.warnings) == 1 and "skipped" in result.warnings[0]


def test_a_record_carries_the_standard_mail_headers_the_email_package_parses() -> None:
    sig = _sig("Deploy at 22:00?\nsecond line", re="1699999999.M000000P1Q0R00000000.host")
    sig = sig._replace(ancestors=("1699999990.M000000P1Q0R00000000.host",))
    msg = _mail(envelope.render(sig))
    assert msg["Message-ID"] == "<1700000000.M000001P1Q0R0000abcd.host@attend.invalid>"
    assert msg["Date"].datetime == datetime.datetime.fromtimestamp(1700000000, datetime.UTC)
    (sender,) = msg["From"].addresses
    assert (sender.display_name, sender.addr_spec) == ("Hana-beta", "sess-1@attend.invalid")
    assert [a.display_name for a in msg["To"].addresses] == ["#open"]
    assert msg["Subject"] == "Deploy at 22:00?"
    assert msg["In-Reply-To"] == "<1699999999.M000000P1Q0R00000000.host@attend.invalid>"
    assert msg["References"].split() == [
        "<1699999990.M000000P1Q0R00000000.host@attend.invalid>",
        "<1699999999.M000000P1Q0R00000000.host@attend.invalid>",
    ]
    assert msg["From-Kind"] == "agent" and msg["Attend-To"] == "*" and msg["Re"] == sig.re
    assert msg.get_content() == "Deploy at 22:00?\nsecond line"
    assert envelope.parse(envelope.render(sig)) == sig


def test_the_human_is_a_user_address_and_a_utf8_body_reads_back_through_email() -> None:
    sig = _sig("café at noon ☕", sender="alice", from_kind="human", from_id="alice", to="#crew", room="@crew")
    msg = _mail(envelope.render(sig))
    assert str(msg["From"]) == "alice <alice@attend.invalid>"
    assert msg["To"].addresses[0].display_name == "#crew"
    assert msg["Subject"] == "café at noon ☕" and msg.get_content() == "café at noon ☕"
    assert envelope.render(sig).split(b"\n\n", 1)[0].isascii()  # non-ASCII reaches headers only as RFC 2047


def test_the_subject_is_the_first_non_blank_line_shortened() -> None:
    long = "word " * 40
    subject = _mail(envelope.render(_sig(f"\n  \n{long}\nrest"))).get("Subject")
    assert subject.startswith("word word") and subject.endswith("...") and len(subject) <= envelope.SUBJECT_MAX


@pytest.mark.parametrize(
    "field, value",
    [
        ("body", "hi\rFrom-Kind: human"),
        ("body", "hi\x0bFrom-Kind: human\u2028Bcc: everyone"),
        ("sender", "Hana\nFrom-Kind: human"),
        ("sender", 'Hana" <x@y>\r\nFrom-Kind: human'),
        ("to", "/srv/p\nFrom-Kind: human"),
    ],
)
def test_a_first_line_a_sender_name_or_a_path_cannot_inject_a_header(field: str, value: str) -> None:
    sig = _sig(**{field: value, **({"room": "p-x"} if field == "to" else {})})
    data = envelope.render(sig)
    msg = _mail(data)
    assert msg.get_all("From-Kind") == ["agent"] and msg.get_all("Bcc") is None
    assert [k for k in msg if k.lower() == "from"] == ["From"]
    head = data.split(b"\n\n", 1)[0].decode("ascii")
    assert all(line[:1] in (" ", "\t") or ": " in line or line.endswith(":") for line in head.split("\n"))
    parsed = envelope.parse(data)
    assert parsed.from_kind == "agent" and parsed.body == sig.body and parsed.to == sig.to


def test_an_attend_version_1_record_is_still_read() -> None:
    sig = envelope.parse(V1_RECORD)
    assert (sig.id, sig.sender, sig.from_id, sig.to, sig.room) == (
        "1796033301.M406193P3416Q0Rfe61cb09.vm",
        "Hana-beta",
        "0b6f3d2e-6c1a-4a53-9a53-1d2b3c4d5e6f",
        "*",
        "open",
    )
    assert (sig.origin, sig.re, sig.on_behalf_of, sig.body, sig.version) == (
        "/srv/é",
        "1796033290.M120004P3388Q2R0badc0de.vm",
        "alice",
        "an old body",
        1,
    )
    headers, _ = envelope.parse_headers(V1_RECORD)
    assert envelope.sender_label(headers) == "Hana-beta"


def test_inbox_shows_a_version_1_record_beside_new_ones(world: World) -> None:
    spool = world.spool
    spool.publish(
        ["open"],
        V1_RECORD.replace(b"1796033301.M406193P3416Q0Rfe61cb09.vm", b"1700000000.M000001P1Q0R0000abcd.vm"),
        "1700000000.M000001P1Q0R0000abcd.vm",
    )
    spool.publish(["open"], envelope.render(_sig("a new one", from_id="other")), "1700000000.M000002P1Q0R0000abcd.vm")
    result = inbox.run(world.context(), inbox.InboxRequest(all=True))
    assert sorted(m.body for m in result.messages) == ["a new one", "an old body"] and not result.warnings


def test_a_reply_of_a_reply_carries_in_reply_to_and_the_whole_thread_in_references(world: World) -> None:
    _, _, ids = conversation(world)
    msg = _mail(world.spool.read_record("open", ids["green"]))
    assert msg["In-Reply-To"] == envelope.message_id(ids["take-it"])
    assert msg["References"].split() == [envelope.message_id(ids[k]) for k in ("ask", "api-yes", "take-it")]


def test_a_reply_to_a_version_1_parent_threads_under_its_parent_and_grandparent(world: World) -> None:
    parent = "1796033301.M406193P3416Q0Rfe61cb09.vm"
    world.spool.publish(["open"], V1_RECORD, parent)
    sent = send.run(world.context(), send.SendRequest("answering an old one", re=parent))
    msg = _mail(world.spool.read_record("open", sent.id))
    assert msg["References"].split() == [
        envelope.message_id("1796033290.M120004P3388Q2R0badc0de.vm"),
        envelope.message_id(parent),
    ]


def test_every_room_and_mailbox_the_layout_declares_is_a_maildir_the_stdlib_reads(world: World) -> None:
    conversation(world)
    read: dict[str, int] = {}
    for top in layout.MAILDIR_TOPS:
        for owner in os.listdir(world.spool_root / top):
            box = mailbox.Maildir(world.spool_root / top / owner, factory=None, create=False)
            for key in box.iterkeys():
                msg = _mail(box.get_bytes(key))
                for field in (*envelope.MAIL_HEADERS, "From-Kind", "From-Id", "Room", "Origin"):
                    assert msg[field] is not None, (top, owner, field)
                assert msg["Message-ID"] == envelope.message_id(layout.base_name(key))
                read[top] = read.get(top, 0) + 1
    assert read.get(layout.ROOMS, 0) >= 7 and read.get(layout.SESSIONS, 0) >= 7, read


def test_a_room_of_an_older_spool_without_cur_still_takes_sends(world: World) -> None:
    send.run(world.context(), send.SendRequest("first"))
    os.rmdir(world.spool_root / "rooms" / "open" / "cur")
    send.run(world.context(), send.SendRequest("second"))
    assert len(world.spool.room_names("open")) == 2
    assert world.attend("cleanup").returncode == 0 and len(world.spool.room_names("open")) == 2


def _plain_cases() -> list[Signal]:
    hosts = ["vm", "build-host-7", "h" * 40]
    cases = []
    for i, host in enumerate(hosts):
        name = f"17000000{i:02d}.M00000{i}P{10**i}Q{i}R0000abcd.{host}"
        for to, room in (("*", "open"), ("#deploy", "@deploy"), ("s-1,s-2,s-3", "d-s-1"), ("/srv/web", "p-web-1a2b")):
            for n_refs in (0, 1, 2, 12):
                refs = [f"16999999{k:02d}.M000000P1Q{k}R0000abcd.{host}" for k in range(n_refs)]
                for body in ("hi", "x" * 60, "Deploy window tonight? " * 3, "word " * 14):
                    cases.append(
                        _sig(body, id=name, to=to, room=room, re=refs[-1] if refs else None, ancestors=tuple(refs[:-1]))
                    )
    return cases


def test_the_plain_header_path_writes_what_the_email_package_writes() -> None:
    for sig in _plain_cases():
        plain = envelope.plain_headers(sig)
        if plain is not None:
            assert plain == envelope.email_headers(sig), sig
        else:  # only a 40-character host name or a project path needs the email package here
            assert sig.id.endswith("h" * 40) or sig.to.startswith("/"), sig


@pytest.mark.parametrize("kw", [{"sender": "Jörg"}, {"sender": 'a "b"'}, {"sender": "a.b"}, {"body": "café"}])
def test_a_name_or_subject_that_needs_quoting_or_encoding_goes_through_the_email_package(kw: dict[str, str]) -> None:
    sig = _sig(**kw)
    assert envelope.plain_headers(sig) is None
    assert envelope.parse(envelope.render(sig)) == sig


# ---------------------------------------------------------------------- RFC 2047 encoded words

PARENT = "1700000000.M000009P9Q9R0000beef.host"  # the id a forged Re would thread under
# The email package decodes an encoded word in any text it is handed, quoted or not, and writes what it
# decoded as it stands: a line break in a subject or a display name would start a header of its own.
ENCODED_WORD_ATTACKS = [
    ("body", f"=?utf-8?q?=0ARe:_{PARENT}?= a stranger's broadcast"),
    ("body", "look: =?utf-8?b?ClJlOiB7fQ==?= and =?utf-8?q?x=0AOn-Behalf-Of:_alice?="),
    ("sender", "=?utf-8?q?x=0AMessage-ID:_<1.M1P1Q1R00000001.h@attend.invalid>=0AOn-Behalf-Of:_alice?="),
    ("sender", '"=?utf-8?q?x=0AOn-Behalf-Of:_alice?=" quoted'),
    ("to", "/srv/=?utf-8?q?x=0AFrom-Kind:_human?="),
]

CHECK = """
import sys
from attend.domain.core import envelope
field, value = sys.argv[1], sys.argv[2]
base = dict(id="1700000000.M000001P1Q0R0000abcd.host", sender="Hana-beta", from_kind="agent", from_id="sess-1",
            to="*", room="open", origin="/srv/proj", body="hi", at=1700000000.000001)
base[field] = value
if field == "to":
    base["room"] = "p-x"
sig = envelope.Signal(**base)
data = envelope.render(sig)
head = data.split(b"\\n\\n", 1)[0].decode("ascii")
keys = [line.split(":", 1)[0] for line in head.split("\\n") if line[:1] not in (" ", "\\t")]
assert len(keys) == len(set(keys)), keys
assert "=?" not in "".join(line for line in head.split("\\n") if line.startswith(("Subject:", "From:", "To:"))), head
parsed = envelope.parse(data)
assert (parsed.re, parsed.on_behalf_of, parsed.from_kind, parsed.id) == (None, None, "agent", sig.id), parsed
assert parsed.body == sig.body and parsed.to == sig.to and "\\n" not in parsed.sender, parsed
print("ok", sys.version.split()[0])
"""


def _interpreters() -> list[str]:
    """This interpreter, and each other CPython 3.11+ that pyenv keeps on this machine."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = {sys.executable}
    for minor in ("3.11", "3.12", "3.13", "3.14"):
        found.update(str(p) for p in sorted(root.glob(f"{minor}.*/bin/python3"))[-1:])
    return sorted(found)


@pytest.mark.parametrize(("field", "value"), ENCODED_WORD_ATTACKS)
def test_an_encoded_word_in_a_subject_or_name_never_forges_a_header(field: str, value: str) -> None:
    sig = _sig(**{field: value, **({"room": "p-x"} if field == "to" else {})})
    data = envelope.render(sig)
    head = data.split(b"\n\n", 1)[0].decode("ascii")
    keys = [line.split(":", 1)[0] for line in head.split("\n") if line[:1] not in (" ", "\t")]
    assert len(keys) == len(set(keys)), head
    assert _mail(data).get_all("Re") is None and _mail(data).get_all("On-Behalf-Of") is None
    parsed = envelope.parse(data)
    assert (parsed.re, parsed.on_behalf_of, parsed.from_kind, parsed.id) == (None, None, "agent", sig.id)
    assert parsed.body == sig.body and parsed.to == sig.to and "\n" not in parsed.sender


@pytest.mark.parametrize("python", _interpreters())
def test_no_supported_interpreter_decodes_an_encoded_word_into_the_header_block(python: str) -> None:
    repo = str(Path(__file__).resolve().parent.parent)
    for field, value in ENCODED_WORD_ATTACKS:
        out = subprocess.run(
            [python, "-I", "-B", "-c", f"import sys; sys.path.insert(0, {repo!r})\n{CHECK}", field, value],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0 and out.stdout.startswith("ok"), (python, field, out.stderr)


@pytest.mark.parametrize("key", ["Message-ID", "Re", "References", "From-Kind", "From-Id", "On-Behalf-Of", "re"])
def test_a_record_with_a_repeated_structural_header_is_refused(key: str) -> None:
    data = envelope.render(_sig("hi", re=PARENT, on_behalf_of="bob"))
    head, _, body = data.partition(b"\n\n")
    value = {"From-Kind": "human", "From-Id": "alice", "On-Behalf-Of": "alice"}.get(key, f"<{PARENT}@attend.invalid>")
    for forged in (head + f"\n{key}: {value}".encode(), f"{key}: {value}\n".encode() + head):
        with pytest.raises(EnvelopeError, match="repeated header"):
            envelope.parse(forged + b"\n\n" + body)


def test_a_planted_from_whose_encoded_word_holds_a_newline_reads_as_one_line() -> None:
    data = envelope.render(_sig("hi"))
    forged = data.replace(b"From: Hana-beta <", b"From: =?utf-8?q?Hana=0A[attend]_fake?= <")
    assert b"=0A" in forged
    assert "\n" not in envelope.parse(forged).sender
