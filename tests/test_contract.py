"""One state contract for both frontends (docs/architecture/mcp.md): each verb, run through the CLI and
through MCP against copies of one seeded spool, leaves the same message state, and answers with
the same document (the CLI's --json is the tool's structuredContent).

Compared: rooms, session maildirs with their flags, channel membership, enrollment, registration,
last-inbound and the other per-session records. Ignored: unique names and times (normalised), and
MCP bookkeeping (the presence marker and notify/), lock files and the diagnostic log.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from attend.domain.attention import trailer
from attend.domain.sessions import sessions
from attend.domain.sessions.context import Context
from attend.layout import NAME_RE
from attend.mcp.server import build_server
from attend.spool import Spool
from attend.testing.standin import StandIn
from attend.verbs import send as send_verb
from tests.support import World, join_channel, structured

pytestmark = pytest.mark.anyio

# Paths (relative to the spool root, as regular expressions) that are bookkeeping, not message state.
IGNORED = (
    r"sessions/[^/]+/mcp(/.*)?",  # the MCP presence marker
    r"sessions/[^/]+/notify(/.*)?",  # trailer cursors and subscriptions
    r"sessions/[^/]+/lock",
    r"registry/[^/]+\.lock",
    r"log(/.*)?",
    r"index(/.*)?",  # the search index: a disposable copy of rooms/, made by whoever searches
)
TIME_KEYS = {"joined_at", "enrolled_at", "registered_at", "last_seen", "created_at", "at", "waited"}
# Values drawn at random per run (a new subscription's id), compared by presence only.
RANDOM_KEYS = {"subscription_id"}
# Tools that change no message state: only the notify/ bookkeeping §5 lets a read-only tool write.
READ_ONLY = {"inbox", "peers", "status", "inbox_wait", "notify_subscribe", "notify_unsubscribe", "search"}


class Seeded:
    """A spool with two enrolled sessions, a little history, nothing pending for A, and one standing
    subscription of A's."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.a = world.session("proj")
        self.b = world.session("proj")
        join_channel(world, self.a, "crew")
        join_channel(world, self.b, "crew")
        b_ctx = world.context(self.b)
        send_verb.run(b_ctx, send_verb.SendRequest("hello everyone"))
        send_verb.run(b_ctx, send_verb.SendRequest("just for A", to=self.a.session_id))
        last = send_verb.run(b_ctx, send_verb.SendRequest("crew news", channel="crew"))
        spool = world.spool
        # What a conduit does when it shows A its mail: claim, show, mark seen, record last-inbound.
        names = spool.listing(self.a.session_id, "new")
        for name in names:
            spool.claim_all(self.a.session_id, [name])
        spool.mark_seen(self.a.session_id, names)
        sessions.set_last_inbound(spool, self.a.session_id, last.id)
        self.subscription = trailer.subscribe(spool, world.context(self.a).who(), ["peer_ended"], None).id
        self.seed_names = set(_all_names(world.spool_root))

    def copy(self, label: str) -> Path:
        dest = self.world.tmp / f"spool-{label}"
        shutil.copytree(self.world.spool_root, dest, symlinks=True)
        return dest


def _all_names(root: Path) -> list[str]:
    return sorted({m.group(0) for p in root.rglob("*") for m in [NAME_RE.search(p.name)] if m})


def state_tree(root: Path, seed_names: set[str]) -> dict[str, Any]:
    """Every spool file but the ignored ones, with new unique names and times normalised."""
    new_names = [n for n in _all_names(root) if n not in seed_names]
    for path in root.rglob("*"):
        if path.is_file():
            new_names += [
                m for m in NAME_RE.findall(path.read_bytes().decode("utf-8", "replace")) if m not in seed_names
            ]
    order = {name: f"<new-{i}>" for i, name in enumerate(sorted(set(new_names)))}

    def norm(text: str) -> str:
        text = NAME_RE.sub(lambda m: order.get(m.group(0), m.group(0)), text)
        text = re.sub(r"^Date: .*$", "Date: <date>", text, flags=re.M)
        return text.replace(str(root), "<spool>")

    tree: dict[str, Any] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if any(re.fullmatch(pattern, rel) for pattern in IGNORED) or rel.split("/")[-1].startswith("."):
            continue
        if path.is_dir():
            tree[norm(rel) + "/"] = "dir"
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        try:
            tree[norm(rel)] = _strip_times(json.loads(text)) if text.strip().startswith(("{", "[")) else norm(text)
        except ValueError:
            tree[norm(rel)] = norm(text)
    return tree


def _strip_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: ("<time>" if k in TIME_KEYS else "<random>" if k in RANDOM_KEYS else _strip_times(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_strip_times(v) for v in value]
    return value


def document(data: dict[str, Any], root: Path, seed_names: set[str]) -> Any:
    """A result document with notifications stripped and new ids, times and paths normalised."""
    data = {k: v for k, v in data.items() if k != "notifications"}
    text = json.dumps(data, sort_keys=True).replace(str(root), "<spool>")
    new = sorted({n for n in NAME_RE.findall(text) if n not in seed_names})
    for i, name in enumerate(new):
        text = text.replace(name, f"<new-{i}>")
    return _strip_times(json.loads(re.sub(r'"at": "[0-9T:Z-]+"', '"at": "<time>"', text)))


def cli_run(s: StandIn, root: Path, argv: list[str]) -> dict[str, Any]:
    out = s.attend(*argv, env={"ATTEND_HOME": str(root)})
    assert out.rc == 0, (argv, out.stderr)
    return json.loads(out.stdout)  # type: ignore[no-any-return]


async def mcp_run(world: World, s: StandIn, root: Path, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    def context() -> Context:
        return Context(spool=Spool.open(root), env=world.env, cwd=str(s.cwd), pid=s.pid)

    async with Client(build_server(context), mode="legacy") as client:
        return structured(await client.call_tool(tool, args))


CASES: list[tuple[str, list[str], str, dict[str, Any]]] = [
    ("send to #open", ["send", "--json", "--", "hi all"], "send", {"message": "hi all"}),
    ("send to a channel", ["send", "--json", "--channel", "crew", "--", "x"], "send",
     {"message": "x", "channel": "crew"}),
    ("send to a peer", ["send", "--json", "--to", "{b}", "--", "psst"], "send", {"message": "psst", "to": "{b}"}),
    ("broadcast on behalf", ["send", "--json", "--broadcast", "--on-behalf-of", "op", "--", "m"], "send",
     {"message": "m", "broadcast": True, "on_behalf_of": "op"}),
    ("reply to the last inbound", ["reply", "--json", "--", "ok"], "reply", {"message": "ok"}),
    ("reply by id", ["reply", "--json", "--re", "{first}", "--", "ok"], "reply", {"message": "ok", "re": "{first}"}),
    ("inbox page", ["inbox", "--json", "--limit", "2"], "inbox", {"limit": 2}),
    ("inbox by id", ["inbox", "--json", "{first}"], "inbox", {"id": "{first}"}),
    ("peers", ["peers", "--json"], "peers", {}),
    ("status", ["status", "--json"], "status", {}),
    ("join", ["join", "--json", "ops"], "join", {"name": "ops"}),
    ("leave", ["leave", "--json", "crew"], "leave", {"name": "crew"}),
    ("inbox_wait polls once", ["inbox", "--json", "--wait", "0"], "inbox_wait", {"seconds": 0}),
    ("notify subscribe", ["notify", "subscribe", "--json", "open,channel:crew"], "notify_subscribe",
     {"kinds": ["open", "channel:crew"]}),
    ("notify unsubscribe", ["notify", "unsubscribe", "--json", "{sub}"], "notify_unsubscribe",
     {"subscription_id": "{sub}"}),
    ("inbound hold", ["inbound", "--json", "hold", "--from", "hosts,humans"], "inbound",
     {"action": "hold hosts,humans"}),
    ("search", ["search", "--json", "--limit", "5", "--", "news"], "search", {"query": "news"}),
]  # fmt: skip


@pytest.mark.parametrize(("label", "argv", "tool", "args"), CASES, ids=[c[0] for c in CASES])
async def test_the_cli_and_mcp_leave_the_same_state_and_answer_the_same_document(
    world: World, label: str, argv: list[str], tool: str, args: dict[str, Any]
) -> None:
    seeded = Seeded(world)
    first = world.spool.room_names("open")[0]
    fill = {"{b}": seeded.b.session_id, "{first}": first, "{sub}": seeded.subscription}
    argv = [fill.get(a, a) for a in argv]
    args = {k: fill.get(v, v) if isinstance(v, str) else v for k, v in args.items()}
    cli_root, mcp_root = seeded.copy("cli"), seeded.copy("mcp")
    before = state_tree(cli_root, seeded.seed_names)

    via_cli = cli_run(seeded.a, cli_root, argv)
    via_mcp = await mcp_run(world, seeded.a, mcp_root, tool, args)
    if tool in ("send", "reply"):  # a model is told the brief of the CLI's whole document
        recipients = [send_verb.Recipient(**r) for r in via_cli["recipients"]]
        keys = {f.name for f in dataclasses.fields(send_verb.Sent)} - {"recipients"}
        whole = send_verb.Sent(**{k: v for k, v in via_cli.items() if k in keys}, recipients=recipients)
        via_cli = dataclasses.asdict(send_verb.brief(whole))

    cli_state = state_tree(cli_root, seeded.seed_names)
    mcp_state = state_tree(mcp_root, seeded.seed_names)
    assert cli_state == mcp_state
    if tool in READ_ONLY:
        assert cli_state == before  # read-only: nothing but MCP bookkeeping changed
    else:
        assert cli_state != before  # positive control: the verb did change the state
    assert document(via_cli, cli_root, seeded.seed_names) == document(via_mcp, mcp_root, seeded.seed_names)
    if tool == "inbox_wait":
        assert via_mcp["items"]  # positive control: the documents compared are not both empty


def test_the_ignored_paths_are_only_mcp_bookkeeping(world: World) -> None:
    # Positive control for IGNORED: a marker and a cursor are skipped, a delivery is not.
    root = world.spool_root
    for rel in ("sessions/x/mcp/1.json", "sessions/x/notify/attention.json", "sessions/x/new/1"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("{}")
    tree = state_tree(root, set())
    assert "sessions/x/new/1" in tree
    assert not any("/mcp/" in k or "/notify/" in k for k in tree)
    os.unlink(root / "sessions/x/new/1")
