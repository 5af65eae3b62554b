"""A host is a named seam, not a branch in every module: outside the host adapters (attend/hosts/) and
their setup adapters (attend/setup/<host>.py), no module of attend names a host by its string (it asks
``attend.hosts`` or ``attend.setup.hosts``), and the two registries list the same hosts in the same
order. So a new host is one module in each (docs/architecture/hosts.md, "A fourth host").

The rule is read from the source with ``ast``: a string constant equal to a host's name ("claude",
"codex", "gemini"), docstrings aside, anywhere outside those modules is a violation, unless its module
is in EXCEPTIONS, which names each with its reason and what it would need to ask the seam instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from attend import hosts
from attend.setup import hosts as setups

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "attend"

ADAPTERS = frozenset({"attend.setup.claude", "attend.setup.codex", "attend.setup.gemini"})

# Modules that still name a host by its string, and why. Each would ask the seam instead as it says.
EXCEPTIONS: dict[str, str] = {
    "attend.conduits.loop": (
        "the sensor loop's timer for watching Claude Code's session records is keyed \"claude\": a timer's "
        "name, not a host comparison (the records folder it watches is Claude Code's own)"
    ),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def in_seam(module: str) -> bool:
    return module == "attend.hosts" or module.startswith("attend.hosts.") or module in ADAPTERS


def named_hosts(source: str, names: frozenset[str] = frozenset(hosts.NAMES)) -> list[tuple[int, str]]:
    """(line, name) of each string constant in ``source`` equal to a host's name, docstrings aside."""
    tree = ast.parse(source)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return sorted(
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
        if id(node) not in docstrings
    )


def test_no_module_outside_the_host_adapters_names_a_host_by_its_string() -> None:
    found = {
        module: hits
        for path in sorted(PACKAGE.rglob("*.py"))
        if not in_seam(module := module_name(path)) and module not in EXCEPTIONS
        if (hits := named_hosts(path.read_text(encoding="utf-8")))
    }
    report = "\n".join(f"  {m}:{line}: {name!r}" for m, hits in found.items() for line, name in hits)
    assert not found, (
        "these modules name a host by its string; ask attend.hosts (Host members, HOSTS, by_name, of) or "
        f"attend.setup.hosts (the setup adapters) instead, or add the module to EXCEPTIONS with a reason:\n{report}"
    )


def test_the_exceptions_name_modules_that_exist() -> None:
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    assert not set(EXCEPTIONS) - modules, sorted(set(EXCEPTIONS) - modules)


@pytest.mark.parametrize(
    "snippet",
    [
        'def f(who):\n    return who.host == "codex"\n',
        'CLIENTS = ("claude", "codex", "gemini")\n',
        'def f(record):\n    return [(record, "gemini")]\n',
        'def f(who):\n    """The host, or "claude".\n    """\n    return who.host or "claude"\n',
    ],
)
def test_the_rule_flags_a_planted_host_name(snippet: str) -> None:
    assert named_hosts(snippet)


@pytest.mark.parametrize(
    "snippet",
    [
        'def f(who):\n    """Whether the session is Codex\'s: "codex" by name."""\n    return who.host is None\n',
        'KEY = "codex_trusted"\nLINE = f"{KEY}: claude"\n',
    ],
)
def test_the_rule_lets_docstrings_and_longer_strings_pass(snippet: str) -> None:
    assert named_hosts(snippet) == []


def test_every_host_has_one_setup_adapter_of_its_name_in_the_same_order() -> None:
    assert setups.NAMES == hosts.NAMES
    assert [a.name for a in setups.ADAPTERS if a.primary] == [hosts.DEFAULT.name]
    assert len(set(hosts.NAMES)) == len(hosts.NAMES)
