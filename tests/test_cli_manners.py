"""The CLI's manners, after gh: --json errors as JSON, examples at the end of every help, `attend help`,
did-you-mean, shell completion with live candidates, and -q."""

from __future__ import annotations

import fcntl
import json
import os
import select
import struct
import subprocess
import sys
import termios
import time

import click
import pytest

from attend.cli import docs
from attend.cli.app import cli
from attend.domain import channels
from tests.support import ATTEND, DEADLINE, World, post


def in_pty(
    world: World, *args: str, answer: str | None = None, columns: int = 80, rows: int = 24, **env: str
) -> tuple[int, str]:
    """Run the installed `attend` on a terminal of its own (a pty the size given), as the human;
    type ``answer`` when it asks [y/N]. Returns the exit code and everything the terminal showed."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    proc = subprocess.Popen(
        [ATTEND, *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**world.env, "TERM": "xterm", **env},
        cwd=str(world.project("proj")),
        start_new_session=True,
    )
    os.close(slave)
    shown, asked = b"", False
    end = time.monotonic() + DEADLINE  # catches a hang; measures nothing
    try:
        while time.monotonic() < end:
            ready, _, _ = select.select([master], [], [], 0.05)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the last writer on the terminal is gone
                break
            if not chunk:
                break
            shown += chunk
            if answer is not None and not asked and b"[y/N]" in shown:
                os.write(master, answer.encode() + b"\r")
                asked = True
        else:
            proc.kill()
            raise AssertionError(f"attend {' '.join(args)} did not finish; showed {shown!r}")
    finally:
        os.close(master)
    return proc.wait(DEADLINE), shown.decode().replace("\r\n", "\n")


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
    assert set(_values(_complete(world, "attend send --to "))) == {"*", "#deploy", "Hana-alpha"}
    assert _values(_complete(world, "attend send --to Ha")) == ["Hana-alpha"]
    assert _values(_complete(world, "attend reply --to #de")) == ["#deploy"]
    assert _values(_complete(world, "attend send --to x,Ha")) == ["x,Hana-alpha"]
    hana.close()
    assert "Hana-alpha" not in _values(_complete(world, "attend send --to "))  # live peers only


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
    assert world.cli("status").returncode == 0
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
