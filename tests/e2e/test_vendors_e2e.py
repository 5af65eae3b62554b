"""One conversation across vendors: the human, a Claude Code session, a Codex session and a Gemini
session in one channel, each answering the one before with `attend reply`, every client the real
one (pinned) against its scripted model, all wired by one `attend install` with no flag.

Every message reaches each model once; the thread is one chain (each reply's parent the message
before it) and it is the same tree in `attend inbox` and in mutt, which opens the channel's folder
read-only and threads it by its own reading of the headers."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.fake_api import Reply, Request, bash, done
from tests.e2e.fake_codex import FakeResponses
from tests.e2e.fake_codex import shell as codex_shell
from tests.e2e.fake_gemini import FakeGemini
from tests.e2e.fake_gemini import shell as gemini_shell
from tests.e2e.harness import ATTEND_BIN, claude_bin
from tests.e2e.hosts import E2E_BIN, HostWorld, codex_bin, gemini_bin
from tests.mailreader import MuttScreen, index_lines, row
from tests.support import maildir, require_tools

Q0, A1, A2, A3, H4 = (
    "Q0 from the human: which port does the api use?",
    "A1 from claude: 8080, says the compose file",
    "A2 from codex: and 8081 for the admin side",
    "A3 from gemini: both open on loopback only",
    "H4 from the human: thanks, all three",
)


@pytest.fixture
def hw(tmp_path: Path) -> Iterator[HostWorld]:
    claude_bin(), codex_bin(), gemini_bin()
    require_tools("mutt", "tmux")
    w = HostWorld(tmp_path)
    yield w
    w.close()


def seen_once(texts: list[str], bodies: tuple[str, ...]) -> None:
    for body in bodies:
        n = sum(t.count(body) for t in texts)
        assert n == 1, f"{body!r} reached the model {n} times: {texts}"


def test_human_claude_codex_and_gemini_answer_each_other_in_one_thread(hw: HostWorld) -> None:
    codex_api, gemini_api = FakeResponses([]), FakeGemini([])
    hw.codex_setup(codex_api)
    hw.gemini_setup(gemini_api)
    out = hw.attend("install", env={"PATH": f"{E2E_BIN}:{hw.env['PATH']}"})  # no flag: every client found
    assert out.returncode == 0 and out.stdout.startswith("hosts: claude, codex, gemini"), out.stdout + out.stderr
    assert hw.attend("join", "talk").returncode == 0  # the human is a member too

    # Claude: joins; the human asks while it is live; the turn end brings the question; it answers.
    def ask(req: Request) -> Reply:
        hw.human_send("--to", "#talk", Q0)
        return done("Joined.")

    def answer_claude(req: Request) -> Reply:
        return bash(f'attend reply "{A1}"')

    claude = hw.claude([bash("attend join talk"), ask, answer_claude, done("Answered.")])
    assert claude.rc == 0 and not claude.api.errors, claude.explain()
    # Claude Code shows a turn end's block twice (a reminder and the block line), and its waiter may
    # show it instead: the model saw it, and the session's maildir holds one delivery, seen.
    assert any(Q0 in t for t in claude.user_texts()), claude.explain()
    assert len(maildir(hw, str(claude.session_id), "cur")) == 1 and not maildir(hw, str(claude.session_id), "new")

    # Codex: joins after both; the cold start links the fresh channel messages; it answers the newest.
    codex_api.script = [
        codex_shell(f"{ATTEND_BIN} join talk"),
        done("Joined."),
        codex_shell(f'{ATTEND_BIN} reply "{A2}"'),
        done("Answered."),
    ]
    codex = hw.codex([], api=codex_api)
    assert codex.rc == 0 and not codex_api.errors, codex.explain()
    seen_once(codex_api.hook_prompts(), (Q0, A1))

    gemini_api.script = [
        gemini_shell(f"{ATTEND_BIN} join talk"),
        done("Joined."),
        gemini_shell(f'{ATTEND_BIN} reply "{A3}"'),
        done("Answered."),
    ]
    gemini = hw.gemini([], api=gemini_api)
    assert gemini.rc == 0 and not gemini_api.errors, gemini.explain()
    seen_once(gemini_api.user_texts(), (Q0, A1, A2))

    by_body = {s.body: s for s in hw.signals()}
    hw.human_send("--re", by_body[A3].id, H4, verb="reply")  # the human answers the last one
    by_body = {s.body: s for s in hw.signals()}
    chain = [by_body[b] for b in (Q0, A1, A2, A3, H4)]
    assert [s.client for s in chain] == [None, "claude", "codex", "gemini", None]
    assert [s.re for s in chain] == [None, *(s.id for s in chain[:-1])], [(s.body, s.re) for s in chain]
    assert len(hw.signals()) == 5, [s.body for s in hw.signals()]

    # The same tree in `attend inbox` (each message listed once) and in mutt.
    listed: list[tuple[str, str | None]] = []
    for mine in ((), ("--sent",)):  # the human's inbox lists the others' messages, --sent its own
        inbox = json.loads(hw.attend("inbox", "--json", "--all", *mine).stdout)
        listed += [(m["id"], m["re"]) for m in inbox["messages"] + inbox.get("unread", []) if m["body"] in by_body]
    assert sorted(listed) == sorted((s.id, s.re) for s in chain), listed

    (room,) = [r for r in hw.spool.rooms() if "talk" in r]  # the channel's folder (not the human's h-<user>)
    mutt = MuttScreen(hw.home / "mutt")
    try:
        lines = index_lines(mutt.open(hw.spool_root / "rooms" / room, messages=len(chain)))
    finally:
        mutt.close()
    assert len(lines) == len(chain), lines
    depths = [row(lines, body[:12])[1] for body in (Q0, A1, A2, A3, H4)]
    # mutt draws each reply one step deeper than its parent (-1: the thread's first message).
    assert depths[0] == -1 and all(a < b for a, b in itertools.pairwise(depths)), lines
