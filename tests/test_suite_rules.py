"""Rules the test suite keeps about itself.

- Shared helpers live in tests/support.py (fixtures in conftest.py), so no module under tests/ imports
  a test module. A test module imported by another is collected twice over, drags its fixtures along
  by name, and turns one file's edit into another's failure.
- No assertion compares a clock's reading. The machines these tests run on are shared and loaded, so
  a test asserts behaviour; speed is measured in bench/ and reported in docs/benchmarks.md. A wait
  has a deadline that fails it (``wait_until``), which is a hang guard, not an assertion on time."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent


def _module_of(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def _is_test_module(dotted: str) -> bool:
    """``tests.test_x``, ``tests.e2e.test_x``, or anything below them."""
    parts = dotted.split(".")
    if parts[0] != "tests":
        return False
    rest = parts[2:] if parts[1:2] == ["e2e"] else parts[1:]
    return bool(rest) and rest[0].startswith("test_")


def imported_test_modules(source: str, module: str) -> list[str]:
    """The test modules ``source`` (the text of module ``module``) imports, as ``line: name``."""
    package = module.rsplit(".", 1)[0]
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)] if node.level > 1 else anchor
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        hits = sorted({t for t in targets if _is_test_module(t)})
        if hits:
            found.append(f"{node.lineno}: {hits[0]}")
    return found


def _python_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "node_modules" not in p.relative_to(TESTS).parts)


def test_no_module_under_tests_imports_a_test_module() -> None:
    files = _python_files()
    assert any(p.name == "test_suite_rules.py" for p in files)  # the walk sees this very file
    offences = [
        f"{p.relative_to(REPO)}:{hit}"
        for p in files
        for hit in imported_test_modules(p.read_text(encoding="utf-8"), _module_of(p))
    ]
    assert offences == [], "import helpers from tests.support instead:\n" + "\n".join(offences)


def test_the_rule_catches_every_spelling_of_a_test_module_import() -> None:
    planted = {
        "from tests.test_conduits import Loop": "tests.test_conduits",
        "import tests.test_sensor": "tests.test_sensor",
        "import tests.test_sensor as s": "tests.test_sensor",
        "from tests import test_drain": "tests.test_drain",
        "from tests.e2e.test_mcp_e2e import x": "tests.e2e.test_mcp_e2e",
        "from tests.e2e import test_smoke_e2e": "tests.e2e.test_smoke_e2e",
        "from .test_mcp_world import adopt": "tests.test_mcp_world",
        "from . import test_notify": "tests.test_notify",
        "def f():\n    from tests.test_sensor import old_signal": "tests.test_sensor",
    }
    for source, name in planted.items():
        assert imported_test_modules(source, "tests.test_planted") == [f"{source.count(chr(10)) + 1}: {name}"], source
    relative_from_e2e = imported_test_modules("from ..test_sensor import x", "tests.e2e.test_planted")
    assert relative_from_e2e == ["1: tests.test_sensor"]


def test_the_rule_lets_the_support_modules_through() -> None:
    allowed = (
        "from tests.support import World\n"
        "from tests.e2e.harness import E2EWorld\n"
        "from tests.e2e.fake_api import bash\n"
        "from tests.e2e import harness\n"
        "import tests.support\n"
        "from attend.domain.core import rooms\n"
        "from . import support\n"
    )
    assert imported_test_modules(allowed, "tests.test_planted") == []


CLOCKS = {("time", "monotonic"), ("time", "perf_counter"), ("time", "time"), ("time", "monotonic_ns")}


# Names that hold a clock's reading or a bound on one: `elapsed`, and constants such as ENDS_WITHIN.
def _a_timing_name(name: str) -> bool:
    return "elapsed" in name.lower() or (name.isupper() and name.endswith("WITHIN"))


def _reads_a_clock(node: ast.AST) -> bool:
    """A clock call or a name that holds a reading, outside any call's arguments (``check(now=time.time()
    + 61)`` passes a fake "now" to the code under test, which is no measurement)."""
    if isinstance(node, ast.Call):
        f = node.func
        return isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and (f.value.id, f.attr) in CLOCKS
    if isinstance(node, ast.Name) and _a_timing_name(node.id):
        return True
    return any(_reads_a_clock(child) for child in ast.iter_child_nodes(node))


def timed_assertions(source: str) -> list[int]:
    """The lines of ``assert`` statements that compare a clock's reading."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assert):
            compares = [n for n in ast.walk(node.test) if isinstance(n, ast.Compare)]
            if any(_reads_a_clock(side) for c in compares for side in (c.left, *c.comparators)):
                lines.append(node.lineno)
    return lines


def test_no_test_asserts_on_a_clock() -> None:
    offences = [
        f"{p.relative_to(REPO)}:{line}"
        for p in _python_files()
        if p.name.startswith("test_")
        for line in timed_assertions(p.read_text(encoding="utf-8"))
    ]
    assert offences == [], "assert behaviour; measure speed in bench/:\n" + "\n".join(offences)


def test_the_clock_rule_catches_a_timing_and_lets_a_fake_now_through() -> None:
    timed = (
        "assert time.monotonic() < end",
        "assert app.is_running and time.monotonic() < end, 'x'",
        "assert exited[0] - last <= ENDS_WITHIN",
        "assert time.perf_counter() - t0 < 0.5",
        "assert elapsed < 2.0",
    )
    for source in timed:
        assert timed_assertions(source) == [1], source
    untimed = (
        "assert keepwarm.check(spool, sid, path, cfg, time.time() + 3601) is None",
        "assert presence.check_turn(spool, 60.0, now=time.time() + 61) is True",
        "assert out.returncode == 0",
        "assert within.sessions == [] and spool.exists('sessions', sid)",
    )
    for source in untimed:
        assert timed_assertions(source) == [], source
