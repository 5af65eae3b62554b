"""The three-way merge law (ADR-500): user entries stay, attend's are present once and last, what
attend wrote before and no longer ships goes, and stripping attend's part leaves the user's file."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from attend.setup import merge
from attend.setup.merge import MergeError

HOOKS = "/h/.claude/hooks/ways"
DRAIN = f"{HOOKS}/attend-drain-stop.sh"


def owns(command: str) -> bool:
    return command.startswith(HOOKS + "/attend-")


def group(*commands: str, **extra: Any) -> dict[str, Any]:
    return {**extra, "hooks": [{"type": "command", "command": c} for c in commands]}


OURS = {
    "permissions": {"allow": ["mcp__attend__send", "Bash(attend:*)"]},
    "hooks": {"Stop": [group(DRAIN)]},
}

# (name, theirs, ours, base, expected)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]] = [
    ("a fresh file gets the baseline", {}, OURS, {}, OURS),
    (
        "user entries interleaved with attend's keep their order and attend's go last, once",
        {"permissions": {"allow": ["Bash(ls:*)", "Bash(attend:*)", "Read(*)", "mcp__attend__send"]}},
        OURS,
        OURS,
        {
            "permissions": {"allow": ["Bash(ls:*)", "Read(*)", "mcp__attend__send", "Bash(attend:*)"]},
            "hooks": {"Stop": [group(DRAIN)]},
        },
    ),
    (
        "an entry attend dropped in a newer baseline is removed",
        {"permissions": {"allow": ["Bash(ls:*)", "mcp__attend__old", "mcp__attend__send", "Bash(attend:*)"]}},
        OURS,
        {"permissions": {"allow": ["mcp__attend__old", "mcp__attend__send", "Bash(attend:*)"]}},
        {
            "permissions": {"allow": ["Bash(ls:*)", "mcp__attend__send", "Bash(attend:*)"]},
            "hooks": {"Stop": [group(DRAIN)]},
        },
    ),
    (
        "a user who removed one of attend's entries by hand gets it back (the law asserts ours)",
        {"permissions": {"allow": ["Bash(attend:*)"]}, "hooks": {"Stop": [group(DRAIN)]}},
        OURS,
        OURS,
        OURS,
    ),
    (
        "attend's Stop hook goes after the user's own, and a user group with several commands stays",
        {"hooks": {"Stop": [group(DRAIN), group("check.sh", "notify.sh", matcher="")]}},
        OURS,
        OURS,
        {
            "hooks": {"Stop": [group("check.sh", "notify.sh", matcher=""), group(DRAIN)]},
            "permissions": {"allow": ["mcp__attend__send", "Bash(attend:*)"]},
        },
    ),
    (
        "a group mixing a user command with attend's is the user's",
        {"hooks": {"Stop": [group("mine.sh", DRAIN)]}},
        OURS,
        {},
        {
            "hooks": {"Stop": [group("mine.sh", DRAIN), group(DRAIN)]},
            "permissions": {"allow": ["mcp__attend__send", "Bash(attend:*)"]},
        },
    ),
    (
        "a stale attend hook group under another event goes, even without a base",
        {"hooks": {"PreToolUse": [group(f"{HOOKS}/attend-old.sh", matcher="*"), group("guard.py", matcher="Bash")]}},
        OURS,
        {},
        {
            "hooks": {"PreToolUse": [group("guard.py", matcher="Bash")], "Stop": [group(DRAIN)]},
            "permissions": {"allow": ["mcp__attend__send", "Bash(attend:*)"]},
        },
    ),
    (
        "the owned mcpServers entry is replaced whole and other servers stay",
        {"mcpServers": {"attend": {"command": "old"}, "other": {"command": "x"}}, "numStartups": 3},
        {"mcpServers": {"attend": {"type": "stdio", "command": "/bin/attend", "args": ["mcp"]}}},
        {},
        {
            "mcpServers": {
                "attend": {"type": "stdio", "command": "/bin/attend", "args": ["mcp"]},
                "other": {"command": "x"},
            },
            "numStartups": 3,
        },
    ),
]


@pytest.mark.parametrize(("name", "theirs", "ours", "base", "expected"), CASES, ids=[c[0] for c in CASES])
def test_the_merge_law(
    name: str, theirs: dict[str, Any], ours: dict[str, Any], base: dict[str, Any], expected: dict[str, Any]
) -> None:
    before = copy.deepcopy(theirs)
    assert merge.merge(theirs, ours, base, owns) == expected
    assert theirs == before  # the live document is never edited in place


@pytest.mark.parametrize(("name", "theirs", "ours", "base", "expected"), CASES, ids=[c[0] for c in CASES])
def test_merging_twice_changes_nothing_the_second_time(
    name: str, theirs: dict[str, Any], ours: dict[str, Any], base: dict[str, Any], expected: dict[str, Any]
) -> None:
    once = merge.merge(theirs, ours, base, owns)
    assert merge.merge(once, ours, ours, owns) == once


@pytest.mark.parametrize(("name", "theirs", "ours", "base", "expected"), CASES, ids=[c[0] for c in CASES])
def test_merging_keeps_the_user_view(
    name: str, theirs: dict[str, Any], ours: dict[str, Any], base: dict[str, Any], expected: dict[str, Any]
) -> None:
    merged = merge.merge(theirs, ours, base, owns)
    assert merge.same_user_view(theirs, merged, merge.deep_union(base, ours), owns)


def test_uninstall_leaves_exactly_the_users_own_file() -> None:
    user = {
        "permissions": {"allow": ["Bash(ls:*)"], "deny": ["Read(.env)"]},
        "hooks": {"Stop": [group("check.sh")]},
        "env": {"X": "1"},
    }
    installed = merge.merge(user, OURS, {}, owns)
    assert installed != user
    assert merge.strip(installed, OURS, owns) == user


def test_a_container_attend_emptied_is_removed_but_a_users_own_empty_one_stays() -> None:
    installed = merge.merge({"permissions": {"deny": []}}, OURS, {}, owns)
    assert merge.strip(installed, OURS, owns) == {"permissions": {"deny": []}}
    assert merge.strip(merge.merge({}, OURS, {}, owns), OURS, owns) == {}


def test_a_changed_user_entry_is_a_different_user_view() -> None:
    before = {"permissions": {"allow": ["Bash(ls:*)"]}}
    after = merge.merge(before, OURS, {}, owns)
    assert merge.same_user_view(before, after, OURS, owns)  # positive control
    after["permissions"]["allow"].remove("Bash(ls:*)")
    assert not merge.same_user_view(before, after, OURS, owns)


def test_an_allow_entry_the_user_denies_is_not_added() -> None:
    theirs = {"permissions": {"deny": ["mcp__attend__send", "Bash(attend send*)"]}}
    merged = merge.merge(theirs, merge.gated(OURS, theirs), {}, owns)
    assert merged["permissions"]["allow"] == ["Bash(attend:*)"]


@pytest.mark.parametrize(
    "theirs",
    [
        {"permissions": {"allow": "Bash(ls:*)"}},
        {"permissions": ["Bash(ls:*)"]},
        {"hooks": {"Stop": {"command": "x"}}},
        {"hooks": "x"},
    ],
)
def test_unexpected_types_where_lists_are_expected_are_refused(theirs: dict[str, Any]) -> None:
    with pytest.raises(MergeError) as caught:
        merge.merge(theirs, OURS, {}, owns)
    assert "fix it" in str(caught.value)
