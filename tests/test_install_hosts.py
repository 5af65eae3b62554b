"""`attend install` for Codex CLI and Gemini CLI, with the guarantees it gives Claude Code: the user's
entries and (in Codex's config.toml) comments and order kept, a dry run that shows the diff and writes
nothing, a second run that changes nothing, an uninstall that gives the files back byte for byte; and
the Codex waiter's conduit (``codex queue``) holding exactly once and mute. Codex's hook trust, which
needs the real client, is in tests/e2e/test_codex_e2e.py."""

from __future__ import annotations

import io
import json
import shlex
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from attend.conduits import waiter
from attend.domain.attention import attention
from attend.domain.core import rooms
from attend.domain.core.ids import sent_form as short
from attend.domain.sessions import sessions
from attend.identity import Identity
from attend.setup import safetoml
from tests.support import ATTEND, CODEX, T1, World, as_codex, maildir, post, wait_until

CONFIG = """# my codex settings: attend must keep this comment
model = "gpt-5.5"   # and this one
approval_policy = "never"

[mcp_servers.mine]
command = "my-server"

[features]
plugins = false
"""
USER_HOOKS = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}
GEMINI_SETTINGS = {
    "theme": "dark",
    "mcpServers": {"mine": {"command": "my-server"}},
    "hooks": {"AfterAgent": [{"hooks": [{"name": "mine", "type": "command", "command": "echo mine"}]}]},
}


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path)
    yield w
    w.close()


def attend(world: World, *args: str) -> str:
    # PATH without any codex: install cannot ask Codex to trust the hook, and says so.
    out = world.attend(*args, env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"})
    assert out.returncode == 0, out.stdout + out.stderr
    return out.stdout


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_codex_install_keeps_the_users_config_and_comments_and_uninstall_gives_it_back(world: World) -> None:
    home = world.home / ".codex"
    home.mkdir()
    (home / "config.toml").write_text(CONFIG)
    (home / "hooks.json").write_text(json.dumps(USER_HOOKS, indent=2) + "\n")
    before = files(home)

    dry = attend(world, "install", "--host", "codex", "--dry-run")
    assert "+[mcp_servers.attend]" in dry and "attend-codex-stop.sh" in dry, dry
    assert files(home) == before, "the dry run wrote nothing"

    said = attend(world, "install", "--host", "codex")
    assert "Codex hooks not trusted yet" in said, said  # no codex on PATH: said, with the way to trust them
    config = (home / "config.toml").read_text()
    lines = iter(config.splitlines())
    assert all(line in lines for line in CONFIG.splitlines()), config  # comments, order, values as they were
    assert '[mcp_servers.attend]\ncommand = "' in config and 'default_tools_approval_mode = "approve"' in config
    hooks = json.loads((home / "hooks.json").read_text())["hooks"]["Stop"]
    assert hooks[0] == USER_HOOKS["hooks"]["Stop"][0] and hooks[-1]["hooks"][0]["command"].endswith(
        "attend-codex-stop.sh"
    ), hooks
    script = home / "hooks" / "ways" / "attend-codex-stop.sh"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755 and (home / "skills" / "attend" / "SKILL.md").is_file()

    wired = files(home)
    assert "nothing changed" in attend(world, "install", "--host", "codex")
    assert files(home) == wired, "a second install changes nothing"

    attend(world, "uninstall", "--host", "codex")
    assert files(home) == before, "uninstall gives every file back byte for byte"


def test_codex_uninstall_after_the_user_edited_keeps_their_edit_and_drops_attends_entries(world: World) -> None:
    home = world.home / ".codex"
    home.mkdir()
    (home / "config.toml").write_text(CONFIG)
    attend(world, "install", "--host", "codex")
    with (home / "config.toml").open("a") as f:
        f.write('\n[profiles.fast]\nmodel = "gpt-5.5-mini"  # added after install\n')
    attend(world, "uninstall", "--host", "codex")
    config = (home / "config.toml").read_text()
    assert "[mcp_servers.attend]" not in config and "added after install" in config and "[mcp_servers.mine]" in config


def test_gemini_install_merges_three_way_and_uninstall_gives_the_file_back(world: World) -> None:
    home = world.home / ".gemini"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps(GEMINI_SETTINGS, indent=2) + "\n")
    before = files(home)
    attend(world, "install", "--host", "gemini")
    doc = json.loads((home / "settings.json").read_text())
    assert doc["theme"] == "dark" and doc["mcpServers"]["mine"] == {"command": "my-server"}
    assert doc["mcpServers"]["attend"]["args"] == ["mcp"] and doc["mcpServers"]["attend"]["trust"] is True
    after_agent = doc["hooks"]["AfterAgent"]
    assert after_agent[0]["hooks"][0]["name"] == "mine" and after_agent[-1]["hooks"][0]["name"] == "attend-drain"
    assert doc["hooks"]["SessionStart"][0]["hooks"][0]["command"].endswith("attend-gemini-start.sh")
    wired = files(home)
    assert "nothing changed" in attend(world, "install", "--host", "gemini")
    assert files(home) == wired
    attend(world, "uninstall", "--host", "gemini")
    assert files(home) == before


def test_gemini_install_dry_run_prints_the_diff_and_writes_nothing(world: World) -> None:
    home = world.home / ".gemini"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps(GEMINI_SETTINGS, indent=2) + "\n")
    before = files(home)
    dry = attend(world, "install", "--host", "gemini", "--dry-run")
    added = [line for line in dry.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert any('"attend": {' in line for line in added), dry  # the MCP server, as a diff's added line
    assert any("attend-gemini-start.sh" in line for line in added), dry  # the SessionStart hook
    assert any('"name": "attend-drain"' in line for line in added), dry  # the AfterAgent drain
    assert not any(line.startswith("-") and "my-server" in line for line in dry.splitlines()), dry
    assert "would create" in dry and "skills/attend/SKILL.md" in dry, dry  # the copies, named, not made
    assert files(home) == before, "the dry run wrote nothing"


def test_install_with_no_flag_wires_the_clients_it_finds_and_says_which(world: World) -> None:
    (world.home / ".gemini").mkdir()
    said = attend(world, "install")
    assert said.startswith("hosts: claude, gemini"), said
    assert (world.home / ".gemini" / "settings.json").is_file() and not (world.home / ".codex").exists()


def test_an_unknown_host_is_refused_and_nothing_changes(world: World) -> None:
    before = files(world.home)
    out = world.attend("install", "--host", "cursor")
    assert out.returncode == 2 and "unknown host 'cursor'" in out.stderr, out
    assert files(world.home) == before


# ---------------------------------------------------------------------- the Codex queue conduit

FAKE_CODEX = """#!/bin/sh
# Stands in for `codex queue`: records its arguments, fails when told to.
printf '%s\\n' "$@" >> "$QUEUE_LOG"
[ -z "$QUEUE_FAIL" ] || { echo "no such thread" >&2; exit 1; }
"""


def codex_thread(world: World, tmp: Path) -> tuple[str, Path]:
    sid = "01a23400-0000-7000-8000-00000000cafe"
    who = Identity("agent", sid, str(world.project("proj")), "ancestry", True, host="codex")
    sessions.enroll(world.spool, who, "join")
    exe = tmp / "codex"
    exe.write_text(FAKE_CODEX)
    exe.chmod(0o755)
    return sid, exe


def queue_command(exe: Path, sid: str) -> list[str]:
    """Codex's ``wake_command`` for the thread, with ``exe`` as the binary its host process runs."""
    return [str(exe), "queue", "--thread", sid, "--message"]


def wake_once(world: World, sid: str, exe: Path, env: dict[str, str]) -> int:
    writer = waiter.QueueWriter(queue_command(exe, sid), {**world.env, **env})
    return waiter.QueueWaiter(world.spool, sid, None, writer).run()  # type: ignore[arg-type]


def test_the_codex_waiter_queues_pending_mail_once_and_marks_it_seen(world: World, tmp_path: Path) -> None:
    sid, exe = codex_thread(world, tmp_path)
    log = tmp_path / "queue.log"
    world.attend("send", "--to", sid, "for the codex thread")
    assert wake_once(world, sid, exe, {"QUEUE_LOG": str(log)}) == waiter.WAKE
    args = log.read_text()
    assert args.startswith(
        f"queue\n--thread\n{sid}\n--message\n[attend] 1 message(s) from humans, not typed at your prompt:"
    ), args
    assert args.count("for the codex thread") == 1
    assert (
        maildir(world, sid, "new") == []
        and maildir(world, sid, "claimed") == []
        and len(maildir(world, sid, "cur")) == 1
    )


def test_a_failed_queue_leaves_the_mail_for_the_next_conduit(world: World, tmp_path: Path) -> None:
    sid, exe = codex_thread(world, tmp_path)
    world.attend("send", "--to", sid, "must not be lost")
    env = {"QUEUE_LOG": str(tmp_path / "queue.log"), "QUEUE_FAIL": "1"}
    with pytest.raises(OSError, match="codex queue failed: no such thread"):  # queue_main logs it, exits 0
        wake_once(world, sid, exe, env)
    assert maildir(world, sid, "cur") == [] and len(maildir(world, sid, "claimed")) == 1
    out = io.StringIO()
    from attend.conduits import drain
    from attend.domain.sessions.context import Context

    # The next conduit (here the turn-end drain, resolved as the thread) shows it.
    batch_ctx = Context(spool=world.spool, env=world.env)
    with drain.claimed(batch_ctx.spool, sid) as batch:
        out.write(drain.render_reason(batch))
    assert "must not be lost" in out.getvalue() and len(maildir(world, sid, "cur")) == 1


def test_a_muted_sender_never_wakes_a_codex_thread(world: World, tmp_path: Path) -> None:
    sid, exe = codex_thread(world, tmp_path)
    attention.save_mutes(world.spool, sid, [attention.Mute("peer:fixture-human", None, "fixture-human")])
    log = tmp_path / "queue.log"
    world.attend("send", "--to", sid, "muted chatter")
    writer = waiter.QueueWriter(queue_command(exe, sid), {**world.env, "QUEUE_LOG": str(log)})
    w = waiter.QueueWaiter(world.spool, sid, None, writer)  # type: ignore[arg-type]
    assert w.deliver() is None  # nothing to wake for: the waiter would wait on
    assert not log.exists(), log.read_text()
    assert maildir(world, sid, "new") == []  # marked seen, never shown


# The Codex stand-in (tests/support.py) is the Python interpreter under codex's name, so the waiter's
# `codex queue --thread <id> --message <text>` runs `<python> queue …`: this script, named `queue` in
# the waiter's working folder, stands in for that subcommand and records each message it is handed.
QUEUE = """
import os, sys
with open(os.environ["QUEUE_LOG"], "a") as f:
    f.write(sys.argv[sys.argv.index("--message") + 1] + "\\0")
"""


def thread_joins(world: World, channel: str = "crew") -> None:
    """Thread T1 joins a channel from its shell tool (codex sets CODEX_THREAD_ID there)."""
    out = as_codex(world, [T1], [ATTEND, "join", channel], {"CODEX_THREAD_ID": T1})
    assert out.returncode == 0, out.stderr


def codex_wait(folder: Path) -> list[str]:
    """`attend wait --codex T1` as the thread's Stop hook starts it (run from ``folder``, where the
    stand-in's `queue` is), for the codex process above it."""
    (folder / "queue").write_text(QUEUE)
    return [
        "bash",
        "-c",
        f"cd {shlex.quote(str(folder))} && exec {shlex.quote(sys.executable)} -m attend wait --codex {T1}",
    ]


def queued(log: Path) -> list[str]:
    return log.read_text().split("\0")[:-1] if log.exists() else []


def logged(world: World) -> str:
    """The spool's diagnostic log, where a waiter's notes go (never to the model)."""
    path = world.spool_root / "log" / "attend.log"
    return path.read_text() if path.exists() else ""


def test_quick_wakes_of_a_codex_thread_stop_at_the_ceiling_and_the_held_mail_waits_for_the_next_conduit(
    world: World, tmp_path: Path
) -> None:
    """A queued turn is a new turn to Codex (stop_hook_active false at its end), so two threads that
    answer each other would wake each other forever: the waiter counts its quick wakes itself."""
    thread_joins(world)
    log = tmp_path / "queue.log"
    env = {"QUEUE_LOG": str(log)}
    for n in range(1, waiter.MAX_WAKES + 1):  # each wake is a new waiter, started at the woken turn's end
        world.attend("send", "--to", T1, f"wake {n}")
        out = as_codex(world, [T1], codex_wait(tmp_path), env)
        assert (out.returncode, out.stdout) == (0, "ready\n"), out
        assert len(queued(log)) == n and f"wake {n}" in queued(log)[-1], queued(log)
    rounds = world.spool_root / "sessions" / T1 / waiter.WAKE_ROUNDS
    assert rounds.read_text() == str(waiter.MAX_WAKES)
    world.attend("send", "--to", T1, "wake 6")
    home = world.home / ".codex"
    stand_in = subprocess.Popen(
        [sys.executable, "-c", CODEX, str(home), T1, "--", *codex_wait(tmp_path)],
        env={**world.env, **env},
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_until(
            lambda: "wake round 6 > 5" in logged(world) or stand_in.poll() is not None,
            "the sixth wake held, or the waiter gone",
        )
        assert len(queued(log)) == waiter.MAX_WAKES, queued(log)  # held: no sixth queued turn
        assert "wake round 6 > 5" in logged(world)
        assert len(maildir(world, T1, "new")) == 1  # not shown, not dropped
    finally:
        stand_in.kill()
        stand_in.wait(timeout=60)
    wait_until(lambda: not waiter.waiter_live(world.spool, T1), "the waiter to end with its codex process")
    assert len(maildir(world, T1, "new")) == 1 and len(queued(log)) == waiter.MAX_WAKES
    # The next conduit shows it: here the thread's next turn end (a turn its user starts).
    stop = json.dumps({"session_id": T1, "hook_event_name": "Stop", "stop_hook_active": False})
    drained = as_codex(world, [T1], [ATTEND, "inbox", "--drain", "--format", "hook"], {}, stdin=stop)
    assert "wake 6" in json.loads(drained.stdout)["reason"], drained


def test_a_burst_from_one_sender_wakes_an_idle_codex_thread_once_folded_into_one_line(
    world: World, tmp_path: Path
) -> None:
    thread_joins(world)
    flood = [post(world.spool, rooms.channel_room("crew"), f"status {i}", sender="loud-peer") for i in range(8)]
    log = tmp_path / "queue.log"
    out = as_codex(world, [T1], codex_wait(tmp_path), {"QUEUE_LOG": str(log)})
    assert out.returncode == 0, out
    [text] = queued(log)
    lines = text.splitlines()
    assert lines[0] == "[attend] 8 message(s) from peers, not your user:", lines
    folded = [line for line in lines if line.startswith("[folded] ")]
    assert (
        len(folded) == 1
        and f"sent 8 fast (ids {short(flood[0])} … {short(flood[-1])}; attend inbox --from " in folded[0]
    ), lines
    assert not any(line == "  status 3" for line in lines)
    assert maildir(world, T1, "new") == [] and len(maildir(world, T1, "cur")) == 8  # folded, not lost


# ---------------------------------------------------------------------- bounded input: Codex's config.toml


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("a = " + "[" * 100_000 + "]" * 100_000 + "\n", "nests deeper than 64 levels"),
        ("a = " + "{b = " * 100_000 + "1" + "}" * 100_000 + "\n", "nests deeper than 64 levels"),
        ("[" + ".".join(["t"] * 100_000) + "]\nx = 1\n", "nests deeper than 64 levels"),
        (".".join(["k"] * 100_000) + " = 1\n", "nests deeper than 64 levels"),
        ("# a comment\n" * 100_000, "is larger than 1 MiB"),
    ],
    ids=["arrays", "inline-tables", "table-header", "dotted-key", "size"],
)
def test_a_codex_config_too_deep_or_too_large_is_refused_in_one_line_and_nothing_changes(
    world: World, text: str, why: str
) -> None:
    home = world.home / ".codex"
    home.mkdir()
    (home / "config.toml").write_text(text)
    assert world.cli("install", "--host", "claude").returncode == 0
    before = files(world.home)
    for verb in (
        ("install", "--host", "codex"),
        ("install", "--host", "codex", "--dry-run"),
        ("uninstall", "--host", "codex"),
    ):
        out = world.attend(*verb)
        assert out.returncode == 1 and out.stderr.count("\n") == 1, out.stderr[-2000:]
        assert f"{home / 'config.toml'} {why}, which attend does not read; nothing was changed" in out.stderr
    assert files(world.home) == before
    doctor = world.cli("doctor")
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr, doctor.stderr[-2000:]
    assert f"FAIL codex wiring: cannot read {home / 'config.toml'}: {home / 'config.toml'} {why}" in doctor.stdout


def test_a_real_codex_config_measures_a_handful_of_levels() -> None:
    """The depth counted is the structure's, not the text's: strings, comments and a float's dot count nothing."""
    assert safetoml.depth(CONFIG, 64) == 3
    text = '[projects."/a.b.c"]\ntrust = "[[[{{{"  # [[[\nx = """a.b\n[[["""\nf = [1.5, 2.5]\n'
    assert safetoml.depth(text, 64) == 4  # the header's two parts, the key, the array's items
    assert safetoml.depth("a = {b.c = [1, {d = 2}]}\n[[e.f]]\ng = 1\n", 64) == 5
