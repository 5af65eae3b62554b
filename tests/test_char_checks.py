"""The character checks a plain send uses instead of regular expressions (so it never imports ``re``)
answer exactly as the patterns they replace, over every short string of the characters that matter."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable

import pytest

from attend.domain.core import envelope
from attend.layout import ALNUM, is_user_name, made_safe

# Letters, digits, each punctuation the patterns name, a space, non-ASCII and a line break.
ALPHABET = "aZ0_.-#+ @/é\n"
STRINGS = [
    *("".join(p) for n in range(5) for p in itertools.product(ALPHABET, repeat=n)),
    "a" * 64,
    "a" * 65,
    "_" + "x." * 40,
]


@pytest.mark.parametrize(
    ("check", "pattern"),
    [
        (is_user_name, r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}"),
        (envelope._plain_phrase, r"[A-Za-z0-9_#+-]+(?: [A-Za-z0-9_#+-]+)*"),
    ],
)
def test_a_character_check_accepts_what_its_pattern_fullmatches(check: Callable[[str], bool], pattern: str) -> None:
    compiled = re.compile(pattern)
    assert [s for s in STRINGS if check(s) != bool(compiled.fullmatch(s))] == []


@pytest.mark.parametrize(("allowed", "runs"), [(ALNUM, False), (ALNUM, True), (ALNUM + "_.-", True)])
def test_made_safe_replaces_what_re_sub_replaces(allowed: str, runs: bool) -> None:
    pattern = re.compile("[^" + re.escape(allowed) + "]" + ("+" if runs else ""))
    assert [s for s in STRINGS if made_safe(s, allowed, runs) != pattern.sub("-", s)] == []
