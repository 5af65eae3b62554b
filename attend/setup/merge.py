"""The three-way merge of attend's baseline into a Claude Code JSON file. Pure.

The law is written down in docs/architecture/settings.md, "The merge".

Inputs: theirs (the live file), ours (the baseline slice attend asserts), base (what attend wrote
last into this target). Walking ours ∪ base:
- a list (``permissions.allow``, ``hooks.Stop``, …): ``deprecated = base − ours`` and
  ``result = (theirs − deprecated − ours) ++ ours``. The user's entries keep their order, attend's
  are present once and last (so attend's Stop hook runs after the user's own), and what attend
  wrote before and no longer ships goes. Under ``hooks.<event>`` a group is also attend's when
  every command in it is attend's (``owns``): the backstop for a base that was lost.
- an owned value (``mcpServers.attend``): ``result = ours``, or removed when ours no longer has it.
- a list or object the merge emptied is removed; one the user left empty stays.

A user who removed one of attend's entries by hand gets it back on the next install: that is the
law (ours is asserted). To keep a tool gated, deny it: an allow entry the user denies in
``permissions.deny`` is not added (see ``gated``).

``strip`` (the same walk with ours empty) gives the "user view": everything that is not attend's.
Install checks it is unchanged across the write; uninstall writes it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from attend.errors import UsageError

Json = Any
MISSING: Any = object()
OWNED_VALUES = {("mcpServers", "attend")}


class MergeError(UsageError):
    """The live file holds a type attend cannot merge into (e.g. ``permissions.allow`` is a string)."""


def _key(value: Json) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _kind(value: Json) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


def list_law(theirs: list[Json], ours: list[Json], base: list[Json], owned: Callable[[Json], bool]) -> list[Json]:
    ours_keys = {_key(e) for e in ours}
    drop = ours_keys | {_key(e) for e in base}
    kept = [e for e in theirs if _key(e) not in drop and not owned(e)]
    unique: list[Json] = []
    for e in ours:
        if _key(e) not in {_key(u) for u in unique}:
            unique.append(e)
    return kept + unique


def merge(theirs: dict[str, Json], ours: dict[str, Json], base: dict[str, Json], owns: Callable[[str], bool]) -> Json:
    """The merged document; ``theirs`` is not modified. ``owns(command)`` says a hook command is attend's."""
    if not isinstance(theirs, dict):
        raise MergeError(f"the file holds {_kind(theirs)} where a JSON object is expected; fix it, then run again")
    return _merge_dict(copy.deepcopy(theirs), ours, base, (), owns)


def strip(theirs: dict[str, Json], base: dict[str, Json], owns: Callable[[str], bool]) -> Json:
    """The user's view: ``theirs`` without anything attend wrote (base) or owns structurally."""
    return merge(theirs, {}, base, owns)


def _merge_dict(
    theirs: dict[str, Json],
    ours: dict[str, Json],
    base: dict[str, Json],
    path: tuple[str, ...],
    owns: Callable[[str], bool],
) -> dict[str, Json]:
    keys = list(dict.fromkeys([*ours, *base]))
    if path == ("hooks",):
        # Stale attend hook groups are found structurally in any event, base or no base.
        keys += [k for k in theirs if k not in keys and isinstance(theirs[k], list)]
    for key in keys:
        here = (*path, key)
        o, b = ours.get(key, MISSING), base.get(key, MISSING)
        t = theirs.get(key, MISSING)
        if here in OWNED_VALUES:
            if o is not MISSING:
                theirs[key] = copy.deepcopy(o)
            elif t is not MISSING:
                del theirs[key]
            continue
        shape = o if o is not MISSING else b if b is not MISSING else t
        if isinstance(shape, dict):
            if t is not MISSING and not isinstance(t, dict):
                raise MergeError(f"{'.'.join(here)} is {_kind(t)}, not an object; fix it, then run again")
            had = t is MISSING or bool(t)  # read before the merge, which edits t in place
            sub = _merge_dict(t if t is not MISSING else {}, _obj(o), _obj(b), here, owns)
            _place(theirs, key, sub, had)
        elif isinstance(shape, list):
            if t is not MISSING and not isinstance(t, list):
                raise MergeError(f"{'.'.join(here)} is {_kind(t)}, not a list; fix it, then run again")
            owned = _hook_group_owned(owns) if len(here) == 2 and here[0] == "hooks" else _never
            merged = list_law(t if t is not MISSING else [], _lst(o), _lst(b), owned)
            _place(theirs, key, merged, t is MISSING or bool(t))
        elif o is not MISSING:
            theirs[key] = copy.deepcopy(o)
    return theirs


def _place(parent: dict[str, Json], key: str, value: Json, removable: bool) -> None:
    """Set ``value``, unless the merge emptied it: then remove it (a user's own empty value stays).

    ``removable``: the key was absent or held something before the merge.
    """
    if not value and removable:
        parent.pop(key, None)
    else:
        parent[key] = value


def _obj(value: Json) -> dict[str, Json]:
    return value if isinstance(value, dict) else {}


def _lst(value: Json) -> list[Json]:
    return value if isinstance(value, list) else []


def _never(_: Json) -> bool:
    return False


def _hook_group_owned(owns: Callable[[str], bool]) -> Callable[[Json], bool]:
    def owned(group: Json) -> bool:
        hooks = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(hooks, list) or not hooks:
            return False
        return all(isinstance(h, dict) and isinstance(h.get("command"), str) and owns(h["command"]) for h in hooks)

    return owned


def gated(ours: dict[str, Json], theirs: dict[str, Json]) -> dict[str, Json]:
    """``ours`` without the allow entries the user denies: a deny is the user's gate, and it wins."""
    perms = theirs.get("permissions")
    deny = perms.get("deny") if isinstance(perms, dict) else None
    if not isinstance(deny, list) or "permissions" not in ours:
        return ours
    out = copy.deepcopy(ours)
    allow = out["permissions"].get("allow", [])
    out["permissions"]["allow"] = [e for e in allow if e not in deny]
    return out


def normalise(value: Json) -> Json:
    """For comparing user views: empty lists and objects count as absent."""
    if isinstance(value, dict):
        out = {k: normalise(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in ({}, [])}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    return value


def same_user_view(
    before: dict[str, Json], after: dict[str, Json], base: dict[str, Json], owns: Callable[[str], bool]
) -> bool:
    return bool(normalise(strip(before, base, owns)) == normalise(strip(after, base, owns)))


def deep_union(a: dict[str, Json], b: dict[str, Json], path: tuple[str, ...] = ()) -> dict[str, Json]:
    """Two baselines as one (for the user view: everything either names is attend's)."""
    out = copy.deepcopy(a)
    for key, value in b.items():
        nested = isinstance(out.get(key), dict) and isinstance(value, dict) and (*path, key) not in OWNED_VALUES
        if nested:
            out[key] = deep_union(out[key], value, (*path, key))
        elif key in out and isinstance(out[key], list) and isinstance(value, list):
            out[key] = list_law(out[key], value, [], _never)
        else:
            out[key] = copy.deepcopy(value)
    return out
