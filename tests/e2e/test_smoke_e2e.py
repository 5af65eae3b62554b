"""The harness drives the real client: a scripted model runs `attend` through the Bash tool, and attend
resolves the session from the client's own session record, with no identity set by the test."""

from __future__ import annotations

import json
import shlex

import pytest

from tests.e2e.fake_api import bash, done
from tests.e2e.harness import E2EWorld

pytestmark = pytest.mark.e2e


def test_attend_in_the_bash_tool_resolves_as_the_real_session(e2e: E2EWorld) -> None:
    payloads = e2e.tmp / "stop-payload.json"
    e2e.settings(
        {
            "permissions": {"allow": ["Bash(attend:*)"]},
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": f"cat > {shlex.quote(str(payloads))}"}]}]},
        }
    )
    run = e2e.claude([bash("attend whoami --machine"), done()])

    assert run.rc == 0, run.explain()
    [result] = run.tool_results("Bash")
    assert not result.is_error, run.explain()
    fields = dict(line.split("=", 1) for line in result.text.splitlines() if "=" in line)
    assert fields["resolved"] == "true", run.explain()

    stop = json.loads(payloads.read_text())
    [(pid, record)] = run.records.items()
    assert pid == run.pid
    assert fields["session_id"] == stop["session_id"] == record["sessionId"] == run.session_id
    assert fields["origin_path"] == str(e2e.project("proj")) == record["cwd"]


def test_a_session_id_in_the_environment_that_disagrees_with_the_record_loses_to_the_record(e2e: E2EWorld) -> None:
    e2e.settings({"permissions": {"allow": ["Bash(attend:*)", "Bash(env:*)"]}})
    bogus = "00000000-0000-4000-8000-000000000000"
    run = e2e.claude([bash(f"env CLAUDE_CODE_SESSION_ID={bogus} attend whoami --json"), done()])

    assert run.rc == 0, run.explain()
    [result] = run.tool_results("Bash")
    assert not result.is_error, run.explain()
    # The Bash tool shows stdout and stderr together: the JSON document, and the one stderr line
    # saying the environment's id was ignored.
    lines = result.text.splitlines()
    who = json.loads(next(line for line in lines if line.startswith("{")))
    assert who["session_id"] == run.session_id != bogus
    assert who["resolved"] is True
    assert any(bogus in w for w in who["warnings"]), run.explain()
    assert [line for line in lines if line.startswith("attend: warning:") and bogus in line], run.explain()
