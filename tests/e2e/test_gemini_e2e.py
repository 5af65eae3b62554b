"""The real Gemini CLI (``gemini -p``, pinned) against the scripted Gemini API: ``attend install``
alone wires the session (the SessionStart record, the MCP server, the AfterAgent drain); the shell
tool and ``attend mcp`` act as the session (MCP send and inbox); a message the human sends reaches
the model at its turn end exactly once, as a deny's reason; and a shell tool that claims another
session is refused."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.fake_api import Reply, Request, done
from tests.e2e.fake_gemini import FakeGemini, latest_output, mcp, shell
from tests.e2e.harness import ATTEND_BIN
from tests.e2e.hosts import HostWorld, gemini_bin, install
from tests.support import enroll, maildir


@pytest.fixture
def hw(tmp_path: Path) -> Iterator[HostWorld]:
    gemini_bin()
    w = HostWorld(tmp_path)
    yield w
    w.close()


def test_gemini_install_alone_wires_identity_mcp_and_turn_end_delivery_exactly_once(hw: HostWorld) -> None:
    """One run covers the whole path (a Gemini run costs ~4 s): whoami and join from the shell tool,
    a borrowing attempt refused, an MCP send, and the human's message at the turn end, once."""
    api = FakeGemini([])
    hw.gemini_setup(api)
    install(hw, "gemini")
    victim = hw.session("victim")
    enroll(hw, victim)
    seen: dict[str, str] = {}

    def joined(req: Request) -> Reply:
        who = json.loads(latest_output(req).split("Output: ", 1)[1].split("\nProcess Group", 1)[0].splitlines()[0])
        assert who["host"] == "gemini" and who["resolved_by"] == "ancestry", who
        seen["sid"] = who["session_id"]
        claim = json.dumps({"session_id": victim.session_id, "cwd": "/"})
        return shell(
            f"{ATTEND_BIN} join e2e 2>&1; echo '{claim}' | {ATTEND_BIN} hook gemini-start 2>&1; "
            f"CLAUDE_CODE_SESSION_ID={victim.session_id} {ATTEND_BIN} whoami --json 2>/dev/null"
        )

    def borrowed(req: Request) -> Reply:
        out = latest_output(req)
        assert "joined #e2e" in out, out
        assert "not a Gemini CLI process" in out, out  # a shell tool cannot rewrite the session's record
        doc = json.loads(out[out.index("{") : out.rindex("}") + 1])
        assert doc["session_id"] == seen["sid"], doc  # the variable is ignored: the ancestry decides
        hw.human_send("--to", seen["sid"], "hello gemini, from the human")
        return mcp("attend", "send", {"message": "hi human, from gemini", "to": "fixture-human"})

    def sent(req: Request) -> Reply:
        out = latest_output(req)
        assert '"id"' in out and "error" not in out.lower(), out
        return done("First answer: done.")

    def delivered(req: Request) -> Reply:
        texts = [t for t in api.user_texts() if "hello gemini, from the human" in t]
        assert len(texts) == 1 and texts[0].startswith(
            "[attend] 1 message(s) from humans, not typed at your prompt:"
        ), api.user_texts()
        return mcp("attend", "inbox", {})

    def listed(req: Request) -> Reply:
        out = latest_output(req)
        result = json.loads(out[out.index("{") : out.rindex("}") + 1])
        got = [m for m in result["messages"] if m["body"] == "hello gemini, from the human"]
        assert [(m["from_kind"], m["from_id"], m["client"]) for m in got] == [("human", "fixture-human", None)], result
        seen["inbox"] = out
        return done("Second answer.")

    api.script = [shell(f"{ATTEND_BIN} whoami --json"), joined, borrowed, sent, delivered, listed]
    run = hw.gemini([], api=api)
    assert run.rc == 0 and not api.errors, run.explain()
    assert len([t for t in api.user_texts() if "hello gemini" in t]) == 1, api.user_texts()
    assert "inbox" in seen, "the MCP inbox result was read"
    sent_by = [s for s in hw.signals() if s.body == "hi human, from gemini"]
    assert [s.from_id for s in sent_by] == [seen["sid"]], [(s.from_id, s.body) for s in hw.signals()]
    assert [s.client for s in sent_by] == ["gemini"]
    assert maildir(hw, victim.session_id, "new") == [], "nothing was sent to the victim"
