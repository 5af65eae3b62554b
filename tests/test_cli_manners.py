"""The CLI's manners, after gh: --json errors as JSON, examples at the end of every help, `attend help`,
did-you-mean, shell completion with live candidates, and -q."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from attend.cli import docs
from attend.cli.app import cli
from attend.domain.messages import channels
from attend.layout import name_time
from tests.support import ATTEND, DEADLINE, World, in_pty, post

# ---------------------------------------------------------------------- --json errors


@pytest.mark.parametrize(
    ("args", "code", "rc"),
    [
        (["inbox", "--limit", "0", "--json"], "usage", 2),
        (["peers", "--json", "--bogus"], "usage", 2),
        (["inbox", "--json", "1700000000.M000000P1Q0R00000000.host"], "not_found", 1),
        (["leave", "--json", "no-such-channel"], "not_found", 1),
        (["whoami", "--machine", "--json"], "usage", 2),
    ],
)
def test_a_json_refusal_is_one_error_document_on_stdout_with_the_same_exit_code(
    world: World, args: list[str], code: str, rc: int
) -> None:
    out = world.cli(*args)
    assert out.returncode == rc, (out.stdout, out.stderr)
    error = json.loads(out.stdout)["error"]
    assert error["code"] == code and error["message"].strip() and "\n" not in error["message"]
    assert out.stderr == ""


@pytest.mark.parametrize(
    ("args", "code", "rc"),
    [
        (["--json", ""], "usage", 2),
        (["--json", "--channel", "nope", "hi"], "not_found", 1),
        (["--re", "bad", "--json", "hi"], "usage", 2),
        (["--json", "--chanel", "x", "hi"], "usage", 2),  # the fast path defers this one to click
    ],
)
def test_the_fast_send_path_refuses_in_json_too(world: World, args: list[str], code: str, rc: int) -> None:
    out = world.attend("send", *args)
    assert out.returncode == rc, (out.stdout, out.stderr)
    assert json.loads(out.stdout)["error"]["code"] == code
    assert out.stderr == ""


def test_a_bare_reply_refusal_teaches_re_as_the_help_and_readme_do(world: World) -> None:
    out = world.attend("reply", "hi")
    assert out.returncode == 1 and 'attend reply --re <id> "…"' in out.stderr, out.stderr
    assert "--re <id>" in world.cli("reply", "--help").stdout
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    assert "reply --to <id>" not in readme


def test_a_reply_with_no_text_is_refused_with_a_reply_example_not_a_send_one(world: World) -> None:
    for args in (["reply"], ["reply", "   "], ["reply", "--re", "1700000000.M000000P1Q0R00000000.host", ""]):
        out = world.attend(*args)  # stdin is an empty pipe: no text from it either
        assert out.returncode == 2, (args, out.stderr)
        assert out.stderr.strip() == 'attend: empty message; give the text to send, e.g. attend reply --re <id> "…"'
    assert 'e.g. attend send "hello"' in world.attend("send").stderr  # send keeps its own example


def test_the_top_level_help_names_every_client_attend_serves(world: World) -> None:
    from attend.hosts import HOSTS

    clients = ("Claude Code", "Codex CLI", "Gemini CLI")
    assert len(clients) == len(HOSTS), "a new host: name its client in attend --help (attend/cli/app.py)"
    for help_text in (world.attend("--help").stdout, world.cli("--help").stdout):
        description = " ".join(help_text.split("Options:")[0].split())  # above the options and commands
        assert all(client in description for client in clients), description


def test_inbox_help_says_what_reading_marks_as_its_example_does(world: World) -> None:
    text = " ".join(world.cli("inbox", "--help").stdout.split())
    assert "Marks nothing seen" not in text
    assert "A human's unread mail comes first, then is marked read" in text


# Every verb that serves an agent session, run by the human at a terminal.
SESSION_ONLY = (
    ["run"],
    ["keepwarm"],
    ["notify", "list"],
    ["notify", "unsubscribe", "abc"],
    ["mute", "Hana"],
    ["unmute", "Hana"],
    ["inbox", "--wait", "1"],
)


@pytest.mark.parametrize("args", SESSION_ONLY, ids=lambda a: " ".join(a))
def test_you_are_not_a_session_is_exit_2_from_every_verb(world: World, args: list[str]) -> None:
    out = world.attend(*args)
    assert out.returncode == 2, (out.stdout, out.stderr)
    assert out.stderr.startswith("attend: ") and len(out.stderr.splitlines()) == 1, out.stderr
    if args != ["run"]:  # run prints lines for the Monitor tool, never a JSON document
        doc = world.attend(*args, "--json")
        assert doc.returncode == 2 and json.loads(doc.stdout)["error"]["code"] == "not_a_session", doc


def test_without_json_a_refusal_stays_one_line_on_stderr(world: World) -> None:
    out = world.attend("send", "--channel", "nope", "hi")
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.startswith("attend: ") and len(out.stderr.splitlines()) == 1


def test_json_after_a_double_dash_is_message_text_not_the_option(world: World) -> None:
    out = world.attend("send", "--channel", "nope", "--", "--json")
    assert out.returncode == 1 and out.stdout == "" and "no such channel" in out.stderr


# ---------------------------------------------------------------------- help and examples


def _commands() -> list[tuple[str, click.Command, click.Context]]:
    return docs._walk(cli, click.Context(cli, info_name="attend"), "attend")


def test_every_commands_help_ends_with_two_to_four_examples() -> None:
    for path, cmd, ctx in _commands():
        text = cmd.get_help(ctx).rstrip().splitlines()
        assert "  Examples:" in text, f"{path} --help has no examples"
        shown = [line for line in text[text.index("  Examples:") + 1 :] if line.strip()]
        assert 2 <= len(shown) <= 4, (path, shown)
        assert all("attend " in line and "  # " in line for line in shown), (path, shown)


def test_the_reference_shows_the_same_examples_as_the_help() -> None:
    reference = docs.render()
    for path, cmd, ctx in _commands():
        for line in cmd.get_help(ctx).split("Examples:", 1)[1].strip().splitlines():
            assert line.strip() in reference, (path, line)


@pytest.mark.parametrize("verb", ["recall", "wait"])
def test_the_hook_only_commands_have_help_both_ways_and_still_refuse_a_bare_run(world: World, verb: str) -> None:
    via_help = world.attend("help", verb)
    direct = world.attend(verb, "--help")
    assert via_help.returncode == direct.returncode == 0, (via_help.stderr, direct.stderr)
    assert via_help.stdout == direct.stdout and f"Usage: attend {verb} [OPTIONS]" in direct.stdout
    assert "Examples:" in direct.stdout and "--hook" in direct.stdout
    bare = world.attend(verb)
    assert bare.returncode == 2 and f"attend {verb} --hook" in bare.stderr


@pytest.mark.parametrize("path", [["send"], ["inbox"], ["notify", "subscribe"], ["dissolve"]])
def test_attend_help_verb_prints_what_verb_help_prints(world: World, path: list[str]) -> None:
    via_help = world.cli("help", *path)
    direct = world.cli(*path, "--help")
    assert via_help.returncode == direct.returncode == 0
    assert via_help.stdout == direct.stdout and "Examples:" in via_help.stdout


def test_attend_help_alone_lists_the_commands(world: World) -> None:
    out = world.cli("help")
    assert out.returncode == 0 and "Commands:" in out.stdout and "send" in out.stdout


# ---------------------------------------------------------------------- did you mean


@pytest.mark.parametrize(("typo", "meant"), [("sned", "send"), ("inbx", "inbox"), ("disolve", "dissolve")])
def test_a_mistyped_command_suggests_the_one_meant(world: World, typo: str, meant: str) -> None:
    out = world.attend(typo, "hello")
    assert out.returncode == 2 and out.stdout == ""
    assert f"did you mean '{meant}'?" in out.stderr and len(out.stderr.splitlines()) == 1


def test_a_command_nothing_like_any_gets_no_guess(world: World) -> None:
    out = world.cli("xyzzy")
    assert out.returncode == 2 and "did you mean" not in out.stderr and "attend --help" in out.stderr


def test_help_of_a_mistyped_command_suggests_too(world: World) -> None:
    out = world.cli("help", "sned")
    assert out.returncode == 2 and "did you mean 'send'?" in out.stderr


# ---------------------------------------------------------------------- completion


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_the_shells_script(world: World, shell: str) -> None:
    out = world.attend("completion", shell)
    assert out.returncode == 0, out.stderr
    assert "_ATTEND_COMPLETE" in out.stdout and f"{shell}_complete" in out.stdout


def test_completion_refuses_an_unknown_shell(world: World) -> None:
    out = world.cli("completion", "tcsh")
    assert out.returncode == 2 and "tcsh" in out.stderr


def _complete(world: World, line: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    words = line.split(" ")
    return world.attend(
        env={
            "_ATTEND_COMPLETE": "bash_complete",
            "COMP_WORDS": line,
            "COMP_CWORD": str(len(words) - 1),
            **(env or {}),
        }
    )


def _values(out: subprocess.CompletedProcess[str]) -> list[str]:
    assert out.returncode == 0 and out.stderr == "", out.stderr
    return [line.split(",", 1)[1] for line in out.stdout.splitlines()]


def test_to_completes_live_peers_channels_and_everyone(world: World) -> None:
    hana = world.session("api", name="Hana")
    assert hana.attend("join", "deploy").rc == 0
    assert set(_values(_complete(world, "attend send --to "))) == {"*", "#deploy", "Hana"}
    assert _values(_complete(world, "attend send --to Ha")) == ["Hana"]
    assert _values(_complete(world, "attend reply --to #de")) == ["#deploy"]
    assert _values(_complete(world, "attend send --to x,Ha")) == ["x,Hana"]
    hana.close()
    assert "Hana" not in _values(_complete(world, "attend send --to "))  # live peers only


def test_to_completes_humans_by_user_name_but_not_yourself(world: World) -> None:
    assert world.attend("send", "alice was here", env={"USER": "alice"}).returncode == 0
    assert world.attend("send", "and so was I").returncode == 0
    offered = _values(_complete(world, "attend send --to "))
    assert "alice" in offered and "fixture-human" not in offered
    assert _values(_complete(world, "attend send --to al")) == ["alice"]


def test_channel_completes_channel_names(world: World) -> None:
    assert world.cli("channels", "create", "deploy").returncode == 0
    assert world.cli("channels", "create", "design").returncode == 0
    assert set(_values(_complete(world, "attend send --channel de"))) == {"deploy", "design"}
    assert _values(_complete(world, "attend leave dep")) == ["deploy"]


def test_re_completes_the_newest_message_ids(world: World) -> None:
    older = post(world.spool, "open", "first", age=10)
    newer = post(world.spool, "open", "second")
    assert _values(_complete(world, "attend reply --re "))[:2] == [newer, older]


def test_completion_never_fails_loudly(world: World) -> None:
    # A spool attend refuses (others may write it): no candidates, no traceback, exit 0.
    assert world.cli("send", "the first write makes the spool").returncode == 0
    world.spool_root.chmod(0o777)
    out = _complete(world, "attend send --to ")
    assert (out.returncode, out.stdout.strip(), out.stderr) == (0, "", "")


def test_readme_documents_completion() -> None:
    readme = (docs.DOC_PATH.parents[2] / "README.md").read_text(encoding="utf-8")
    assert "attend completion bash" in readme


# ---------------------------------------------------------------------- -q


def _records(world: World) -> list[str]:
    folder = world.spool_root / "rooms" / "open" / "new"
    return sorted(os.listdir(folder)) if folder.exists() else []


@pytest.mark.parametrize("flag", ["-q", "--quiet"])
def test_quiet_silences_the_success_line_of_send_on_both_parsers(world: World, flag: str) -> None:
    fast = world.attend("send", flag, "hello")
    slow = subprocess.run(
        [sys.executable, "-c", "import sys; from attend.cli.app import main; main()", "send", "hello", flag],
        capture_output=True,
        text=True,
        env=world.env,
        cwd=world.project("proj"),
    )
    for out in (fast, slow):
        assert (out.returncode, out.stdout.strip(), out.stderr) == (0, "", "")
    assert len(_records(world)) == 2


def test_quiet_keeps_errors_warnings_and_json(world: World) -> None:
    refused = world.attend("send", "-q", "--channel", "nope", "hi")
    assert refused.returncode == 1 and "no such channel" in refused.stderr
    warned = world.attend("send", "-q", "x" * 500)
    assert warned.stdout == "" and "warning" in warned.stderr
    doc = world.attend("send", "-q", "--json", "hi")
    assert json.loads(doc.stdout)["id"]


@pytest.mark.parametrize(
    "args",
    [["join", "ops"], ["channels", "create", "deploy"], ["cleanup"]],
)
def test_quiet_silences_other_success_lines(world: World, args: list[str]) -> None:
    quiet = world.cli(*args, "-q")
    assert quiet.returncode == 0 and quiet.stdout == "", quiet.stderr


# ---------------------------------------------------------------------- destructive verbs ask


def test_dissolve_on_a_terminal_asks_and_yes_dissolves(world: World) -> None:
    assert world.cli("channels", "create", "doomed").returncode == 0
    post(world.spool, "@doomed", "history", age=1)
    rc, shown = in_pty(world, "dissolve", "doomed", answer="y")
    assert rc == 0, shown
    assert "Dissolve #doomed: remove it, its members and its history? [y/N]" in shown
    assert "dissolved #doomed" in shown
    assert not channels.exists(world.spool, "doomed") and not world.spool.exists("rooms", "@doomed")


@pytest.mark.parametrize("answer", ["n", ""])
def test_dissolve_on_a_terminal_keeps_everything_unless_told_yes(world: World, answer: str) -> None:
    assert world.cli("channels", "create", "kept").returncode == 0
    post(world.spool, "@kept", "history", age=1)
    rc, shown = in_pty(world, "dissolve", "kept", answer=answer)
    assert rc == 1 and "aborted" in shown
    assert channels.exists(world.spool, "kept") and world.spool.room_names("@kept")


@pytest.mark.parametrize(("answer", "gone"), [("y", True), ("n", False), ("", False)])
def test_uninstall_purge_on_a_terminal_asks_before_deleting_every_message(
    world: World, answer: str, gone: bool
) -> None:
    post(world.spool, "open", "a message worth keeping")
    rc, shown = in_pty(world, "uninstall", "--purge", answer=answer)
    assert f"Delete the spool {world.spool_root}: every message and session record? [y/N]" in shown
    assert rc == (0 if gone else 1), shown
    assert world.spool_root.exists() is not gone


def test_dissolve_yes_on_a_terminal_does_not_ask(world: World) -> None:
    assert world.cli("channels", "create", "doomed").returncode == 0
    rc, shown = in_pty(world, "dissolve", "doomed", "--yes")
    assert rc == 0 and "[y/N]" not in shown and not channels.exists(world.spool, "doomed")


def _human_in(world: World, name: str) -> None:
    assert world.cli("join", name).returncode == 0
    post(world.spool, f"@{name}", "history", age=1)


def test_a_leave_that_would_empty_a_channel_asks_and_keeps_history_by_default(world: World) -> None:
    _human_in(world, "temp")
    rc, shown = in_pty(world, "leave", "temp", answer="")
    assert rc == 0, shown
    assert "#temp will be empty. Delete its history? [y/N]" in shown and "history stays" in shown
    assert channels.exists(world.spool, "temp") and world.spool.room_names("@temp")


def test_off_a_terminal_a_leave_that_empties_a_channel_keeps_its_history_unless_yes(world: World) -> None:
    _human_in(world, "kept")
    out = world.attend("leave", "kept")  # no terminal: nothing to ask on, so nothing is deleted
    assert out.returncode == 0 and "its history stays" in out.stdout, out
    assert channels.exists(world.spool, "kept") and world.spool.room_names("@kept")
    _human_in(world, "gone")
    assert world.attend("leave", "gone", "--yes").returncode == 0
    assert not channels.exists(world.spool, "gone") and not world.spool.exists("rooms", "@gone")
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    assert "elsewhere keeps it unless given `--yes`" in " ".join(readme.split())  # and the README says so


def test_a_leave_that_would_empty_a_channel_deletes_its_history_on_yes(world: World) -> None:
    _human_in(world, "temp")
    rc, shown = in_pty(world, "leave", "temp", answer="y")
    assert rc == 0 and "deleted with its history" in shown, shown
    assert not channels.exists(world.spool, "temp") and not world.spool.exists("rooms", "@temp")


def test_a_leave_that_empties_nothing_asks_nothing(world: World) -> None:
    other = world.session("proj")
    assert other.attend("join", "shared").rc == 0
    _human_in(world, "shared")
    rc, shown = in_pty(world, "leave", "shared")
    assert rc == 0 and "[y/N]" not in shown and "left #shared" in shown


# ---------------------------------------------------------------------- times

ZONE = {"TZ": "ABC-3"}  # a POSIX zone, three hours east of UTC: needs no time zone database


def _inbox_when(out: str) -> list[str]:
    return [line.split("when:", 1)[1].strip() for line in out.splitlines() if "when:" in line]


def test_inbox_shows_local_times_with_the_zone_named(world: World) -> None:
    post(world.spool, "open", "hello")
    doc = json.loads(world.attend("inbox", "--json", env=ZONE).stdout)
    at = dt.datetime.fromisoformat(doc["messages"][0]["at"])
    out = world.attend("inbox", env=ZONE)
    assert _inbox_when(out.stdout) == [(at + dt.timedelta(hours=3)).strftime("%Y-%m-%d %H:%M:%S") + " ABC"]
    utc = world.attend("inbox", "--utc", env=ZONE)
    assert _inbox_when(utc.stdout) == [at.strftime("%Y-%m-%d %H:%M:%S") + " UTC"]


@pytest.mark.parametrize("utc", [False, True])
def test_since_takes_a_time_as_inbox_shows_it(world: World, utc: bool) -> None:
    post(world.spool, "open", "an hour ago", age=3600)
    post(world.spool, "open", "just now", age=5)
    flag = ["--utc"] if utc else []
    shown = _inbox_when(world.attend("inbox", *flag, env=ZONE).stdout)  # newest first
    out = world.attend("inbox", "--since", shown[0], env=ZONE)
    assert out.returncode == 0, out.stderr
    assert "just now" in out.stdout and "an hour ago" not in out.stdout
    older = world.attend("inbox", "--since", shown[1], env=ZONE)
    assert "just now" in older.stdout and "an hour ago" in older.stdout


def test_since_refuses_a_zone_it_cannot_know(world: World) -> None:
    out = world.attend("inbox", "--since", "2025-01-31 09:30:00 PST", env=ZONE)
    assert out.returncode == 2 and "PST is not the local zone" in out.stderr


# ---------------------------------------------------------------------- tail


def test_tail_lines_up_its_columns_in_local_time(world: World) -> None:
    hana = world.session("proj", name="Hana")
    assert hana.attend("join", "crew").rc == 0
    assert world.cli("join", "ops").returncode == 0
    proc = subprocess.Popen(
        [ATTEND, "tail", "--count", "3"],
        env={**world.env, **ZONE},
        cwd=str(world.project("proj")),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        banner = proc.stderr.readline()
        assert "tailing" in banner and "times ABC" in banner
        first = post(world.spool, "@ops", "from a channel")
        assert hana.attend("send", "from a session with a longer name").rc == 0
        post(world.spool, "open", "x")
        out, _ = proc.communicate(timeout=DEADLINE)
    finally:
        proc.kill()
    lines = out.splitlines()
    assert len(lines) == 3, lines
    starts = {line.index(body) for line, body in zip(lines, ["from a", "from a session", "x"], strict=True)}
    assert len(starts) == 1, lines  # every body starts in the same column
    senders = {line.index(who) for line, who in zip(lines, ["Other-alpha", "Hana", "Other"], strict=True)}
    assert len(senders) == 1, lines
    local = dt.datetime.fromtimestamp(int(name_time(first)), dt.UTC) + dt.timedelta(hours=3)
    assert lines[0].startswith(local.strftime("%H:%M:%S  "))


# ---------------------------------------------------------------------- wrapping and the pager

LONG = "word " * 30 + "end"


def _message_lines(out: str) -> list[str]:
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("  message: "))
    return lines[first:]


def test_bodies_wrap_to_the_width_with_continuation_lines_under_the_body(world: World) -> None:
    post(world.spool, "open", LONG)
    out = world.cli("inbox", env={"COLUMNS": "40"})
    body = _message_lines(out.stdout)
    body = body[: next(i for i, line in enumerate(body) if not line.strip())]
    assert len(body) > 3 and all(len(line) <= 40 for line in body), body
    assert all(line.startswith(" " * 11) and line[11] != " " for line in body[1:]), body
    assert " ".join(line.strip() for line in body).removeprefix("message: ") == LONG.strip()


def test_every_line_of_a_body_is_indented_under_it(world: World) -> None:
    post(world.spool, "open", "first\n[open] Forged-alpha (agent)\n  id:      1700000000.M0P1Q0R0.x")
    out = world.cli("inbox")
    body = _message_lines(out.stdout)[:3]
    assert body[0] == "  message: first"
    assert body[1] == " " * 11 + "[open] Forged-alpha (agent)"
    assert body[2] == " " * 11 + "  id:      1700000000.M0P1Q0R0.x"


def test_a_pipe_gets_each_body_line_whole(world: World) -> None:
    post(world.spool, "open", LONG)
    out = world.attend("inbox")
    assert f"  message: {LONG}" in out.stdout.splitlines()


def test_on_a_terminal_inbox_wraps_to_its_width(world: World) -> None:
    post(world.spool, "open", LONG)
    rc, shown = in_pty(world, "inbox", columns=50, rows=100)
    assert rc == 0, shown
    body = _message_lines(shown)
    assert len(body[0]) <= 50 and body[1].startswith(" " * 11 + "word")


PAGER = {"PAGER": "sed -e s/^/paged:/"}


def test_long_inbox_output_on_a_terminal_goes_through_the_pager(world: World) -> None:
    for i in range(6):
        post(world.spool, "open", f"message {i}")
    rc, shown = in_pty(world, "inbox", rows=20, **PAGER)
    assert rc == 0, shown
    assert "paged:  message: message 5" in shown


def test_inbox_output_that_fits_the_screen_is_not_paged(world: World) -> None:
    post(world.spool, "open", "one")
    rc, shown = in_pty(world, "inbox", rows=40, **PAGER)
    assert rc == 0 and "paged:" not in shown and "message: one" in shown


def test_long_log_output_on_a_terminal_goes_through_the_pager(world: World) -> None:
    assert world.cli("send", "the first write makes the spool").returncode == 0
    log = world.spool_root / "log"
    log.mkdir(exist_ok=True)
    (log / "attend.log").write_text("".join(f"line {i}\n" for i in range(60)))
    rc, shown = in_pty(world, "log", rows=20, **PAGER)
    assert rc == 0 and "paged:line 59" in shown, shown


def test_tail_never_pages(world: World) -> None:
    def burst() -> None:
        for i in range(12):
            post(world.spool, "open", f"message {i}")

    rc, shown = in_pty(world, "tail", "--count", "12", rows=5, then=("Ctrl-C to stop", burst), **PAGER)
    assert rc == 0 and "message 11" in shown, shown
    assert "paged:" not in shown


def test_version_prints_the_package_version_from_an_editable_install(world: World) -> None:
    # The dev venv's install is editable, and the distribution is attend-bus, not attend.
    import tomllib
    from pathlib import Path

    out = world.attend("--version")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    pyproject = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())
    assert out.stdout.strip() == f"attend {pyproject['project']['version']}"
