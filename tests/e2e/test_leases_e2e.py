"""Leases with the real clients (docs/architecture/leases.md).

Claude Code: after `attend install`, session A leases src/api and stays running; session B's Write
of a file under it shows B's model the holder's line and goes through; under `leases.enforce:
refuse` the Write is refused and no file is made; once A's client ends, B's next Write passes with
nothing said. Gemini CLI: the same three writes in one run (the line reaches the model after the
write, from its AfterTool hook; the refusal comes from BeforeTool). Codex CLI: the same three with
apply_patch (its PreToolUse hook, trusted by `attend install`), the paths read from the patch."""

from __future__ import annotations

import json
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.fake_api import Entry, Reply, Request, bash, call, done
from tests.e2e.fake_codex import FakeResponses, patch
from tests.e2e.fake_codex import latest_output as codex_output
from tests.e2e.fake_gemini import FakeGemini, latest_output
from tests.e2e.harness import E2EWorld, latest_tool_result, latest_user_texts, wait_for
from tests.e2e.hosts import HostWorld, codex_bin, gemini_bin, install

pytestmark = pytest.mark.e2e


def project(e2e: E2EWorld) -> Path:
    path = e2e.project("proj")
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "src" / "api").mkdir(parents=True)
    (path / "src" / "api" / "routes.py").write_text("routes = []\n")
    return path


def said(req: Request) -> str:
    """Everything new to the model in this request (tool results and the hook's context), as one text."""
    return json.dumps(latest_user_texts(req)) + json.dumps(
        [m for m in req.messages if m.get("role") == "user"][-1:], ensure_ascii=False
    )


def holder_a(e2e: E2EWorld, release: threading.Event) -> list[Entry]:
    def leased_then_hold(req: Request) -> Reply:
        result = latest_tool_result(req)
        assert result is not None and "src/api" in result.text, result
        # A stays in this model call until the test is done with B: its client, and so its lease, live.
        assert release.wait(150), "the test never let A end"
        return done("Done with the routes.")

    return [bash("attend lease src/api --reason 'reshaping the routes'"), leased_then_hold]


def writer_b(path: Path, check: object) -> list[Entry]:
    def judged(req: Request) -> Reply:
        check(req)  # type: ignore[operator]
        return done("Noted.")

    return [call("Write", {"file_path": str(path), "content": "x = 1\n"}), judged]


def test_an_edit_under_another_sessions_lease_is_told_refused_under_enforce_and_free_once_it_ends(
    e2e: E2EWorld,
) -> None:
    root = project(e2e)
    out = e2e.attend("install", "--target", str(e2e.claude_dir))
    assert out.returncode == 0, out.stdout + out.stderr
    release = threading.Event()
    a = e2e.start(holder_a(e2e, release), allowed_tools=["Bash(attend:*)"])
    try:
        wait_for(lambda: json.loads(e2e.attend("leases", "--json").stdout)["leases"], 90, "A's lease on src/api")

        # B writes under A's lease: it goes through, and B's model is told who holds it.
        warned = root / "src" / "api" / f"warned_{uuid.uuid4().hex[:6]}.py"

        def told(req: Request) -> None:
            text = said(req)
            assert "is leased by" in text and "reshaping the routes" in text and "attend send --to" in text, text

        run = e2e.claude(writer_b(warned, told), allowed_tools=["Write"])
        assert run.rc == 0 and not run.api.errors, run.explain()
        assert warned.exists()

        # Under refuse, the Write is refused with the same line, and no file is made.
        config = e2e.home / ".config" / "attend" / "config.yaml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text("leases:\n  enforce: refuse\n")
        refused = root / "src" / "api" / f"refused_{uuid.uuid4().hex[:6]}.py"

        def refused_with_the_line(req: Request) -> None:
            result = latest_tool_result(req)
            assert result is not None and result.is_error, said(req)
            assert "is leased by" in result.text, result.text

        run = e2e.claude(writer_b(refused, refused_with_the_line), allowed_tools=["Write"])
        assert run.rc == 0 and not run.api.errors, run.explain()
        assert not refused.exists()
    finally:
        release.set()
    run_a = a.wait()
    assert run_a.rc == 0 and not run_a.api.errors, run_a.explain()

    # A's client has ended: its lease is gone, and B's next Write passes with nothing said.
    assert json.loads(e2e.attend("leases", "--json").stdout)["leases"] == []
    free = root / "src" / "api" / f"free_{uuid.uuid4().hex[:6]}.py"

    def nothing_said(req: Request) -> None:
        result = latest_tool_result(req)
        assert result is not None and not result.is_error, said(req)
        assert "leased by" not in said(req)

    run = e2e.claude(writer_b(free, nothing_said), allowed_tools=["Write"])
    assert run.rc == 0 and not run.api.errors, run.explain()
    assert free.exists()


# ---------------------------------------------------------------------- Gemini CLI


@pytest.fixture
def hw(tmp_path: Path) -> Iterator[HostWorld]:
    gemini_bin()
    w = HostWorld(tmp_path)
    yield w
    w.close()


def test_gemini_is_told_after_a_write_under_a_lease_refused_before_one_under_enforce_and_free_once_it_ends(
    hw: HostWorld,
) -> None:
    root = project(hw)
    api = FakeGemini([])
    hw.gemini_setup(api)
    install(hw, "gemini")
    holder = hw.session("proj", name="Ada")  # a live session of another client holds src/api
    leased = holder.attend("lease", "src/api", "--reason", "reshaping the routes")
    assert leased.rc == 0, leased.stderr
    config = hw.home / ".config" / "attend" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    warned, refused, free = (root / "src" / "api" / f"{w}_{uuid.uuid4().hex[:6]}.py" for w in ("w", "r", "f"))

    def write(path: Path) -> Reply:
        return call("write_file", {"file_path": str(path), "content": "x = 1\n"})

    def told_then_refuse(req: Request) -> Reply:
        out = json.dumps(req.body)
        assert "is leased by Ada" in out and "reshaping the routes" in out, latest_output(req)
        config.write_text("leases:\n  enforce: refuse\n")
        return write(refused)

    def refused_then_end_holder(req: Request) -> Reply:
        out = latest_output(req)
        assert "is leased by Ada" in out, out
        assert not refused.exists()
        config.write_text("leases:\n  enforce: warn\n")
        holder.close()  # its client ends: the lease with it
        return write(free)

    def free_then_done(req: Request) -> Reply:
        assert "leased by" not in latest_output(req), latest_output(req)
        return done("Written.")

    api.script = [write(warned), told_then_refuse, refused_then_end_holder, free_then_done]
    run = hw.gemini([], api=api)
    assert run.rc == 0 and not api.errors, run.explain()
    assert warned.exists() and not refused.exists() and free.exists()


# ---------------------------------------------------------------------- Codex CLI


@pytest.fixture
def cw(tmp_path: Path) -> Iterator[HostWorld]:
    codex_bin()
    w = HostWorld(tmp_path)
    yield w
    w.close()


def add_file(path: Path) -> str:
    return f"*** Begin Patch\n*** Add File: {path}\n+x = 1\n*** End Patch\n"


def test_codex_is_told_before_a_patch_under_a_lease_refused_under_enforce_and_free_once_it_ends(
    cw: HostWorld,
) -> None:
    root = project(cw)
    api = FakeResponses([])
    cw.codex_setup(api)
    said = install(cw, "codex")
    assert "trusted attend's Codex hook" in said, said
    holder = cw.session("proj", name="Ada")
    leased = holder.attend("lease", "src/api", "--reason", "reshaping the routes")
    assert leased.rc == 0, leased.stderr
    config = cw.home / ".config" / "attend" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    warned, refused, free = (root / "src" / "api" / f"{w}_{uuid.uuid4().hex[:6]}.py" for w in ("w", "r", "f"))

    def told_then_refuse(req: Request) -> Reply:
        body = json.dumps(req.body)
        assert "is leased by Ada" in body and "reshaping the routes" in body, codex_output(req)
        config.write_text("leases:\n  enforce: refuse\n")
        return patch(add_file(refused))

    def refused_then_end_holder(req: Request) -> Reply:
        out = codex_output(req)
        assert "is leased by Ada" in out, json.dumps(req.body["input"][-3:])[:3000]
        assert not refused.exists()
        config.write_text("leases:\n  enforce: warn\n")
        holder.close()
        return patch(add_file(free))

    def free_then_done(req: Request) -> Reply:
        assert "leased by" not in codex_output(req), codex_output(req)
        return done("Patched.")

    api.script = [patch(add_file(warned)), told_then_refuse, refused_then_end_holder, free_then_done]
    run = cw.codex([], api=api)
    assert run.rc == 0 and not api.errors, run.explain()
    assert warned.exists() and not refused.exists() and free.exists()
