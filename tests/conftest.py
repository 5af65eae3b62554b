"""Fixtures only; the helpers they build on live in tests/support.py.

- ``world``: one test's machine (support.World), closed after the test.
- ``loops``: starts ``attend run`` as a child of a stand-in session (support.Loop), killed after.
- ``anyio_backend``: the MCP tests run on asyncio.
"""

from __future__ import annotations

import compileall
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

import attend
from attend.testing.standin import StandIn
from tests.support import TERMINAL_MARK, Loop, World

# The fuzz suites (tests/test_outside_input.py): a bounded number of examples, so each reader's suite
# runs in seconds in the developer loop and in CI alike; no deadline, since a shared machine's pauses
# would fail an example that is merely slow. HYPOTHESIS_PROFILE=deep runs more.
settings.register_profile(
    "attend",
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
settings.register_profile("deep", parent=settings.get_profile("attend"), max_examples=2000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "attend"))


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
    config.pluginmanager.register(Order(), "attend-order")


def drives_a_terminal(item: pytest.Item) -> bool:
    """A mutt or tmux fixture, or a class declaring ``TERMINAL_TOOLS`` (the real clients' TUIs in tmux)
    named in the test's own code."""
    if {"mutt", "tmux"} & set(getattr(item, "fixturenames", ())):
        return True
    function, module = getattr(item, "function", None), getattr(item, "module", None)
    if function is None or module is None:
        return False
    codes, names = [function.__code__], set()
    while codes:  # the test's body, and the lambdas and comprehensions inside it
        code = codes.pop()
        names.update(code.co_names)
        codes += [c for c in code.co_consts if hasattr(c, "co_names")]
    return any(getattr(vars(module).get(name), "TERMINAL_TOOLS", ()) for name in names)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test that drives mutt or tmux is marked ``terminal`` (tests.support.require_tools fails it
    when they are missing), so ``-m "not terminal"`` leaves those tests out by choice, never by a skip.
    Every test under tests/e2e/ is ``e2e`` (the real clients), whether or not its module says so, so the
    developer loop (``-m "not e2e and not slow"``) never starts a real client."""
    for item in items:
        if drives_a_terminal(item):
            item.add_marker(TERMINAL_MARK)
        if E2E in Path(str(item.fspath)).resolve().parents:
            item.add_marker("e2e")


class Order:
    """Under xdist, the tests that remain once ``-m`` has deselected are ordered longest first."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        given = getattr(config, "workerinput", {})
        if "workercount" in given:  # each worker collects: all order by the one copy the controller sent
            items[:] = longest_first(items, given.get(DURATIONS) or {}, int(given["workercount"]))


# Each test's seconds (setup, call and teardown) in the last run that ran it, kept in pytest's cache.
DURATIONS = "attend/durations"
LONG = 20.0  # what an untimed e2e or slow test is taken to last: a real client's start, a stress run


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist's controller hands each worker the times it read once at its start: workers reading the
    cache themselves could see different copies (a run finishing meanwhile), and xdist refuses workers
    whose collections differ."""
    if DURATIONS not in _read:
        cache = getattr(node.config, "cache", None)
        _read[DURATIONS] = cache.get(DURATIONS, {}) if cache is not None else {}
    node.workerinput[DURATIONS] = _read[DURATIONS]


_read: dict[str, dict[str, float]] = {}  # the controller's one read of the cache


def longest_first(items: list[pytest.Item], seconds: dict[str, float], workers: int) -> list[pytest.Item]:
    """The tests longest first, so a long one (a 30 s repair pass, the authority sweep) starts while
    the others run beside it, not alone at the end of the run. xdist's load scheduler hands each worker
    a first chunk of consecutive tests (a quarter of its share) and then the rest in order as workers
    free up: the longest are dealt across those chunks, the rest follow longest first. A test not
    timed yet counts as an average one, or as a long one when it is ``e2e`` or ``slow`` (all there is to
    go by without pytest's cache, as in CI). Only the order changes: every test still runs."""
    typical = sum(seconds.values()) / len(seconds) if seconds else 1.0

    def expected(item: pytest.Item) -> float:
        long = item.get_closest_marker("e2e") or item.get_closest_marker("slow")
        return seconds.get(item.nodeid, LONG if long else typical)

    ranked = sorted(items, key=lambda item: -expected(item))  # stable: ties keep their order
    chunk = max(len(items) // workers // 4, 2)
    if len(items) < 2 * workers or chunk * workers > len(items):
        return ranked
    first = ranked[: chunk * workers]
    return [first[i] for worker in range(workers) for i in range(worker, len(first), workers)] + ranked[len(first) :]


_timed: dict[str, float] = {}
_failed: set[str] = set()  # a failure's time says little about the next run's: the last passing one stays


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when in ("setup", "call", "teardown"):
        _timed[report.nodeid] = _timed.get(report.nodeid, 0.0) + report.duration
        if report.failed:
            _failed.add(report.nodeid)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The controller (or a run without xdist) keeps this run's times for the next run's order."""
    cache = getattr(session.config, "cache", None)
    timed = {k: round(v, 2) for k, v in _timed.items() if k not in _failed}
    if timed and cache is not None and not hasattr(session.config, "workerinput"):
        cache.set(DURATIONS, {**cache.get(DURATIONS, {}), **timed})


@pytest.fixture(autouse=True)
def _names_stay_at_the_real_time() -> Iterator[None]:
    """A test that names a message from an injected clock in the future leaves this worker's later names
    there (each process's names only increase), and every later test that compares them with another
    process's names is wrong by years. Fail the test that did it, not the one that trips over it."""
    from attend import layout

    yield
    ahead = layout._last_us - time.time_ns() // 1000
    assert ahead < 60_000_000, f"this test left the process's message names {ahead / 1e6:.0f} s in the future"
