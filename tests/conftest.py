"""Fixtures only; the helpers they build on live in tests/support.py.

- ``world``: one test's machine (support.World), closed after the test.
- ``loops``: starts ``attend run`` as a child of a stand-in session (support.Loop), killed after.
- ``anyio_backend``: the MCP tests run on asyncio.
"""

from __future__ import annotations

import compileall
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import attend
from attend.testing.standin import StandIn
from tests.support import TERMINAL_MARK, Loop, World


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = World(tmp_path)
    yield w
    w.close()


@pytest.fixture
def loops(world: World) -> Iterator[Callable[..., Loop]]:
    started: list[Loop] = []

    def start(session: StandIn, env: dict[str, str] | None = None, wait: bool = True) -> Loop:
        loop = Loop(world, session, env, wait)
        started.append(loop)
        return loop

    yield start
    for loop in started:
        loop.kill()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


E2E = Path(__file__).resolve().parent / "e2e"

# pytest keeps each test module's assertion-rewritten bytecode only where bytecode may be written; with
# PYTHONDONTWRITEBYTECODE set (the world's environment sets it, a developer's may too) every xdist worker
# rewrote and compiled all of them again on every run, seconds of CPU each. The cache is gitignored.
sys.dont_write_bytecode = False


def pytest_configure(config: pytest.Config) -> None:
    """Compile attend's modules once, before any worker starts, as pip does for an installed wheel. The
    tests run `attend` as thousands of subprocesses with bytecode writing off (the world's environment
    says so, and so may the developer's): without the .pyc each of them compiled the CLI from source
    again, about half of its CPU."""
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist), not each worker
        compileall.compile_dir(Path(attend.__file__).parent, quiet=1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that drives mutt or tmux is marked ``terminal`` (tests.support.require_tools fails it
    when they are missing), so ``-m "not terminal"`` leaves those tests out by choice, never by a skip.
    Every test under tests/e2e/ is ``e2e`` (the real clients), whether or not its module says so, so the
    developer loop (``-m "not e2e and not slow"``) never starts a real client."""
    for item in items:
        if {"mutt", "tmux"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(TERMINAL_MARK)
        if E2E in Path(str(item.fspath)).resolve().parents:
            item.add_marker("e2e")
