"""Channel membership: one file per member under channels/<name>/members/, written and removed
atomically, so concurrent joins never erase each other (the original's last-writer-wins yaml did).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass

from attend import rooms
from attend.spool import Spool


@dataclass(frozen=True)
class ChannelInfo:
    name: str
    members: tuple[str, ...]
    pinned: bool
    description: str


def exists(spool: Spool, name: str) -> bool:
    return spool.exists("channels", name, "members")


def members(spool: Spool, name: str) -> list[str]:
    try:
        return sorted(os.listdir(spool.root / "channels" / name / "members"))
    except FileNotFoundError:
        return []


def names(spool: Spool) -> list[str]:
    try:
        found = os.listdir(spool.root / "channels")
    except FileNotFoundError:
        return []
    return sorted(n for n in found if rooms.CHANNEL_RE.fullmatch(n))


def meta(spool: Spool, name: str) -> dict[str, object]:
    text = spool.read_text("channels", name, "meta.json")
    try:
        raw = json.loads(text) if text else {}
    except ValueError:
        raw = {}
    return raw if isinstance(raw, dict) else {}


def info(spool: Spool, name: str) -> ChannelInfo:
    m = meta(spool, name)
    return ChannelInfo(name, tuple(members(spool, name)), bool(m.get("pinned")), str(m.get("description") or ""))


def add_member(spool: Spool, name: str, member: str) -> bool:
    """Add one member file; False when it was already there."""
    spool.dir("channels", name, "members")
    record = json.dumps({"joined_at": time.time()}).encode()
    return spool.create_exclusive(record, "channels", name, "members", member)


def remove_member(spool: Spool, name: str, member: str) -> bool:
    return spool.remove("channels", name, "members", member)
