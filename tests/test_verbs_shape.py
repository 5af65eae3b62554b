"""Every verb has the one shape (attend/verbs/__init__.py): a non-empty ``DESCRIPTION``, ``PARAMS`` naming
exactly its request's parameters, and ``run(ctx: Context, req: <a frozen dataclass>) -> <an annotated result>``.

A module of attend/verbs/ is a verb unless it is in HELPERS. The check reads the modules as imported
(``inspect`` and ``typing.get_type_hints``), and fails on a planted module of the wrong shape.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import pkgutil
import sys
import typing
from pathlib import Path
from types import ModuleType

import pytest

import attend.verbs
from attend.domain.sessions.context import Context
from attend.verbs import parameters

# Modules of attend/verbs/ that hold shared code, not a verb.
HELPERS = frozenset({"inbox_filters", "search_core"})
# Verbs behind a flag of another command (inbox --drain, inbox --wait): their examples are that command's.
FLAGS = frozenset({"drain", "inbox_wait"})


def verb_modules() -> dict[str, ModuleType]:
    names = [m.name for m in pkgutil.iter_modules(attend.verbs.__path__)]
    return {n: importlib.import_module(f"attend.verbs.{n}") for n in sorted(names) if n not in HELPERS}


def problems(module: ModuleType) -> list[str]:
    """What keeps ``module`` from the verb shape; empty when it has it."""
    found: list[str] = []
    description = getattr(module, "DESCRIPTION", None)
    if not isinstance(description, str) or not description.strip():
        found.append("no DESCRIPTION string")
    run = getattr(module, "run", None)
    if not inspect.isfunction(run):
        return [*found, "no run function"]
    params = list(inspect.signature(run).parameters.values())
    if [p.name for p in params] != ["ctx", "req"]:
        found.append(f"run takes ({', '.join(str(p) for p in params)}), not (ctx, req)")
    elif any(p.default is not p.empty or p.kind is not p.POSITIONAL_OR_KEYWORD for p in params):
        found.append("run's ctx and req must be plain required parameters")
    try:
        hints = typing.get_type_hints(run)
    except Exception as e:  # an annotation that does not resolve
        return [*found, f"run's annotations do not resolve: {e}"]
    if hints.get("ctx") is not Context:
        found.append(f"run's ctx is annotated {hints.get('ctx')!r}, not Context")
    if "return" not in hints:
        found.append("run has no return annotation")
    req = hints.get("req")
    if not (isinstance(req, type) and dataclasses.is_dataclass(req)):
        return [*found, f"run's req is annotated {req!r}, not a dataclass"]
    if not req.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        found.append(f"{req.__name__} is not frozen")
    names = parameters(req)
    declared = getattr(module, "PARAMS", None)
    if declared is None:
        if names:
            found.append(f"no PARAMS for the parameters {names}")
    elif not isinstance(declared, dict) or set(declared) != set(names):
        found.append(f"PARAMS names {sorted(declared)}, the request's parameters are {sorted(names)}")
    elif not all(isinstance(v, str) and v.strip() for v in declared.values()):
        found.append("a PARAMS entry is not a non-empty string")
    examples = getattr(module, "EXAMPLES", None)
    if examples is not None and not (
        isinstance(examples, tuple)
        and 2 <= len(examples) <= 4
        and all(
            isinstance(e, tuple)
            and len(e) == 2
            and all(isinstance(x, str) and x.strip() for x in e)
            and "attend " in e[0]
            for e in examples
        )
    ):
        found.append("EXAMPLES is not 2-4 (command line, what it does) pairs of attend command lines")
    return found


def test_every_verb_with_a_command_of_its_own_has_examples() -> None:
    missing = [name for name, module in verb_modules().items() if name not in FLAGS and not hasattr(module, "EXAMPLES")]
    assert not missing, f"no EXAMPLES (the end of --help) in: {', '.join(missing)}"


def test_every_verb_has_the_one_shape() -> None:
    modules = verb_modules()
    assert {"drain", "run", "doctor", "install", "permissions", "peers", "tail", "cleanup"} <= set(modules)
    bad = {name: p for name, module in modules.items() if (p := problems(module))}
    assert not bad, (
        "verbs not of the shape run(ctx: Context, req: <Request>) with DESCRIPTION and PARAMS:\n"
        + "\n".join(f"  attend/verbs/{name}.py: {'; '.join(p)}" for name, p in sorted(bad.items()))
    )


def test_the_helpers_hold_no_verb() -> None:
    for name in HELPERS:
        module = importlib.import_module(f"attend.verbs.{name}")
        assert not hasattr(module, "run") and not hasattr(module, "DESCRIPTION"), f"{name} is a verb, not a helper"


# --- the check bites --------------------------------------------------------------------------------

HEADER = """from __future__ import annotations
from collections.abc import Callable
from dataclasses import dataclass, field
from attend.domain.sessions.context import Context
from attend.verbs import FRONTEND
"""

GOOD = (
    HEADER
    + """
DESCRIPTION = "Do a thing."
PARAMS = {"lines": "How many."}

@dataclass(frozen=True)
class ThingRequest:
    lines: int = 50
    progress: Callable[[int], None] | None = field(default=None, metadata=FRONTEND)

@dataclass
class Thing:
    lines: int

def run(ctx: Context, req: ThingRequest) -> Thing:
    return Thing(req.lines)
"""
)

PLANTED = {
    "no description": GOOD.replace('DESCRIPTION = "Do a thing."', ""),
    "an empty description": GOOD.replace('"Do a thing."', '"  "'),
    "no run": GOOD.replace("def run(", "def go("),
    "a bare parameter": GOOD.replace(
        "def run(ctx: Context, req: ThingRequest) -> Thing:", "def run(ctx: Context, lines: int = 50) -> Thing:"
    ).replace("req.lines", "lines"),
    "no context": GOOD.replace(
        "def run(ctx: Context, req: ThingRequest)", "def run(target: str | None, env: dict[str, str])"
    ),
    "an extra callback": GOOD.replace("req: ThingRequest)", "req: ThingRequest, progress: object = None)"),
    "ctx not a Context": GOOD.replace("def run(ctx: Context,", "def run(ctx: object,"),
    "req not a dataclass": GOOD.replace("req: ThingRequest)", "req: dict[str, int])"),
    "a mutable request": GOOD.replace("@dataclass(frozen=True)\nclass ThingRequest", "@dataclass\nclass ThingRequest"),
    "PARAMS for a field the frontend supplies": GOOD.replace(
        '{"lines": "How many."}', '{"lines": "How many.", "progress": "x"}'
    ),
    "a parameter without PARAMS": GOOD.replace('PARAMS = {"lines": "How many."}', ""),
    "no return annotation": GOOD.replace(") -> Thing:", "):"),
    "one example": GOOD.replace("PARAMS = {", 'EXAMPLES = (("attend thing", "does it"),)\nPARAMS = {'),
    "five examples": GOOD.replace("PARAMS = {", 'EXAMPLES = (("attend thing", "does it"),) * 5\nPARAMS = {'),
    "an example that is not attend": GOOD.replace(
        "PARAMS = {", 'EXAMPLES = (("ls", "lists"), ("attend thing", "does it"))\nPARAMS = {'
    ),
}


def _load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> ModuleType:
    """The planted source as a module (registered while the test runs: dataclasses look it up there)."""
    name = "planted_verb"
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


def test_a_verb_of_the_shape_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert problems(_load(tmp_path, monkeypatch, GOOD)) == []


@pytest.mark.parametrize("case", sorted(PLANTED))
def test_the_check_fails_on_a_planted_verb_of_the_wrong_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    assert PLANTED[case] != GOOD, case
    assert problems(_load(tmp_path, monkeypatch, PLANTED[case])), case
