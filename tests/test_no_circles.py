"""No import circles among attend's modules: what two modules share lives a floor below both.

import-linter's contracts (pyproject) keep the layers, but they see neither a lazy
``importlib.import_module("attend…")`` (the MCP front loads the server so, off its hot path) nor a
circle inside one layer. This walk reads every import from the source with ``ast``: at module level,
inside functions, under ``TYPE_CHECKING``, and each ``importlib.import_module`` of a literal name;
then any strongly connected group of more than one module is a circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "attend"


def modules(package: Path) -> dict[str, Path]:
    found = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports_of(name: str, source: str, known: dict[str, Path]) -> set[str]:
    """The modules of ``known`` that the module ``name`` imports, by any of the forms above."""

    def resolve(target: str) -> str | None:
        while target and target not in known:
            target = target.rpartition(".")[0]
        return target or None

    package = name if known[name].name == "__init__.py" else name.rpartition(".")[0]
    found: set[str | None] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(resolve(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in known else resolve(base))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(resolve(node.args[0].value))
    return {m for m in found if m is not None and m != name}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's walk, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph.get(step, ())))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def import_graph(package: Path) -> dict[str, set[str]]:
    known = modules(package)
    return {name: imports_of(name, path.read_text(encoding="utf-8"), known) for name, path in known.items()}


def test_no_module_of_attend_imports_itself_through_others() -> None:
    found = circles(import_graph(PACKAGE))
    assert not found, (
        "import circles (each group imports itself through the others); move what they share a floor "
        f"below both: {found}"
    )


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"a.py": "from pkg import b\n", "b.py": "import pkg.a\n"}, [["pkg.a", "pkg.b"]]),
        (  # lazily, inside a function, through a third module
            {
                "a.py": "def f():\n    from pkg.b import x\n",
                "b.py": "from pkg import c\nx = 1\n",
                "c.py": "from . import a\n",
            },
            [["pkg.a", "pkg.b", "pkg.c"]],
        ),
        (  # importlib, as the MCP front loads the server, and a typing-only import back
            {
                "front.py": 'import importlib\nserver = importlib.import_module("pkg.server")\n',
                "server.py": "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from pkg.front import Replay\n",
            },
            [["pkg.front", "pkg.server"]],
        ),
        ({"a.py": "from pkg import shared\n", "b.py": "from pkg.shared import T\nimport pkg.a\n", "shared.py": ""}, []),
    ],
    ids=["two", "three-lazily", "importlib-and-typing", "a-floor-below"],
)
def test_the_walk_finds_a_planted_circle(tmp_path: Path, files: dict[str, str], expected: list[list[str]]) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    for name, text in files.items():
        (tmp_path / "pkg" / name).write_text(text)
    assert circles(import_graph(tmp_path / "pkg")) == expected
