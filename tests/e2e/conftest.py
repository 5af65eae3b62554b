"""Fixtures for the end-to-end tests: ``e2e``, a World that can also run the real Claude Code client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import E2EWorld, claude_bin


@pytest.fixture
def e2e(tmp_path: Path) -> Iterator[E2EWorld]:
    claude_bin()  # skip (or fail in CI) before building anything when the client is not installed
    w = E2EWorld(tmp_path)
    yield w
    w.close()
