"""Every refusal: a clear one-line error, exit 2 (usage) or 1 (failure), and nothing written."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import ATTEND, World


def _tree(root: Path) -> dict[str, bytes]:
    out = {}
    for path in sorted(root.rglob("*")) if root.exists() else []:
        if path.is_file() and "log" not in path.parts:
            out[str(path.relative_to(root))] = path.read_bytes()
    return out


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["send", ""], 2, "empty message"),
        (["send"], 2, "empty message"),
        (["send", "x" * (64 * 1024 + 1)], 2, "64 KiB"),
        (["send", "--chanel", "x", "hi"], 2, "No such option"),
        (["send", "--channel", ".", "hi"], 2, "invalid channel name"),
        (["send", "--channel", "..", "hi"], 2, "invalid channel name"),
        (["send", "--channel", ".x", "hi"], 2, "invalid channel name"),
        (["send", "--channel", "_x", "hi"], 2, "invalid channel name"),
        (["send", "--channel", "a/b", "hi"], 2, "invalid channel name"),
        (["send", "--channel", "a b", "hi"], 2, "invalid channel name"),
        (["send", "--channel", "a" * 65, "hi"], 2, "invalid channel name"),
        (["send", "--channel", "broadcast", "hi"], 2, "reserved"),
        (["send", "--to", "#open", "--channel", "x", "hi"], 2, "choose one scope"),
        (["send", "--re", "not-an-id", "hi"], 2, "not a message id"),
        (["send", "--to", "/nowhere/at/all", "hi"], 1, "no live session"),
        (["send", "--to", "Nobody-zeta", "hi"], 1, "no session or human named"),
        (["reply", "--to", "1700000000.M000000P1Q0R00000000.host", "hi"], 1, "no message with id"),
        (["reply", "hi"], 1, "nothing to reply to"),
        (["inbox", "--limit", "0"], 2, "limit"),
        (["inbox", "garbage-id"], 2, "not a message id"),
    ],
)
def test_bad_input_is_refused_with_one_line_and_changes_nothing(
    world: World, args: list[str], code: int, needle: str
) -> None:
    world.attend("status")  # create the spool so the tree comparison is meaningful
    before = _tree(world.spool_root)
    out = world.attend(*args)
    assert out.returncode == code, (out.stdout, out.stderr)
    assert needle in out.stderr
    assert out.stderr.strip().splitlines()[-1].strip()  # says something
    assert _tree(world.spool_root) == before


def test_invalid_utf8_from_argv_is_refused(world: World) -> None:
    world.attend("status")
    before = _tree(world.spool_root)
    out = subprocess.run(
        [os.fsencode(ATTEND), b"send", b"caf\xe9"], capture_output=True, env=world.env, cwd=world.project("proj")
    )
    assert out.returncode == 2 and b"UTF-8" in out.stderr
    assert _tree(world.spool_root) == before


def test_an_over_budget_message_is_a_warning_not_a_refusal(world: World) -> None:
    out = world.attend("send", "y" * 500)
    assert out.returncode == 0 and "warning" in out.stderr and "500 characters" in out.stderr


def test_double_dash_sends_flag_shaped_text(world: World) -> None:
    out = world.attend("send", "--json", "--", "--broadcast was removed")
    assert out.returncode == 0, out.stderr
    names = os.listdir(world.spool_root / "rooms" / "open" / "new")
    assert len(names) == 1
    assert (
        (world.spool_root / "rooms" / "open" / "new" / names[0]).read_bytes().endswith(b"\n\n--broadcast was removed")
    )


def test_an_option_after_the_first_word_is_an_option_and_only_a_double_dash_makes_it_text(world: World) -> None:
    out = world.attend("send", "hello", "--channel", "x")
    assert out.returncode == 1 and "no such channel" in out.stderr, out  # the option took effect
    assert not (world.spool_root / "rooms" / "open" / "new").exists() or not os.listdir(
        world.spool_root / "rooms" / "open" / "new"
    )  # nothing went to everyone
    out = world.attend("send", "hello", "--", "--channel", "x")
    assert out.returncode == 0, out.stderr
    (name,) = os.listdir(world.spool_root / "rooms" / "open" / "new")
    assert (world.spool_root / "rooms" / "open" / "new" / name).read_bytes().endswith(b"hello --channel x")


def test_a_group_writable_spool_is_refused_by_every_verb(world: World) -> None:
    shutil.rmtree(world.spool_root)  # a spool of its own making, not the fixture's
    world.spool_root.mkdir(parents=True)
    world.spool_root.chmod(0o770)
    for verb in (["send", "hi"], ["inbox"], ["status"]):
        out = world.attend(*verb)
        assert out.returncode == 1 and "writable by group or others" in out.stderr
    assert list(world.spool_root.iterdir()) == []


def test_a_foreign_owned_spool_is_refused(world: World) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to chown")
    shutil.rmtree(world.spool_root)  # a spool of its own making, not the fixture's
    world.spool_root.mkdir(parents=True, mode=0o700)
    os.chown(world.spool_root, 4242, 4242)
    out = world.attend("send", "hi")
    assert out.returncode == 1 and "owned by uid 4242" in out.stderr
    assert list(world.spool_root.iterdir()) == []


def test_a_symlink_planted_in_the_spool_is_not_followed(world: World, tmp_path: Path) -> None:
    world.spool.make_dir("rooms")  # a spool in use (a read-only command like status no longer makes one)
    target = tmp_path / "outside"
    target.mkdir()
    os.symlink(target, world.spool_root / "rooms" / "open")
    out = world.attend("send", "hi")
    assert out.returncode == 1 and "symlink" in out.stderr
    assert list(target.iterdir()) == []
