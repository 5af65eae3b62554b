"""The attend MCP tools' size as the model receives them, measured with the real Claude Code client.

It runs `claude -p` (tests/e2e/node_modules, or $ATTEND_CLAUDE_BIN) against the scripted fake API on
loopback, with `attend mcp` registered through --mcp-config. The scripted model loads every attend
tool with ToolSearch (`select:` every `mcp__attend__*` name the client lists as deferred); the next
request then carries each tool as {name, description, input_schema, defer_loading}. The figure is the
sum over those tools of the compact JSON of {name, description, input_schema}, in bytes (the e2e
test holds it under 6000). Before ToolSearch loads them, the model gets only the names. It also prints
the size of the skill (skills/attend/SKILL.md), which holds the judgment the descriptions leave out.

Run: .venv/bin/python bench/e2e_tools_size.py [--json]
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.e2e.fake_api import Reply, Request, call, done  # noqa: E402
from tests.e2e.harness import E2E_DIR, E2EWorld, deferred_tools, tools_size  # noqa: E402


def measure() -> dict[str, Any]:
    binary = os.environ.get("ATTEND_CLAUDE_BIN") or str(E2E_DIR / "node_modules" / ".bin" / "claude")
    if not os.access(binary, os.X_OK):
        sys.exit(f"claude not found at {binary}: run `npm ci --prefix tests/e2e` (or set ATTEND_CLAUDE_BIN)")
    got: dict[str, Any] = {}

    def select_all(req: Request) -> Reply:
        got["deferred"] = [n for n in deferred_tools(req) if n.startswith("mcp__attend__")]
        got["first_request_tools"] = [t["name"] for t in req.tools if t["name"].startswith("mcp__attend__")]
        return call("ToolSearch", {"query": "select:" + ",".join(got["deferred"]), "max_results": 50})

    def capture(req: Request) -> Reply:
        got["tools"] = [t for t in req.tools if str(t.get("name", "")).startswith("mcp__attend__")]
        return done("Loaded.")

    with tempfile.TemporaryDirectory(prefix="attend-bench-e2e-") as tmp:
        world = E2EWorld(Path(tmp))
        try:
            world.settings({"permissions": {"allow": ["Bash(attend:*)"]}})
            run = world.claude([select_all, capture], mcp_config=world.mcp_config())
        finally:
            world.close()
    if run.rc != 0 or run.api.errors or "tools" not in got:
        sys.exit(f"the client run failed:\n{run.explain()}")
    tools = sorted(got["tools"], key=lambda t: t["name"])
    return {
        "client": run.argv[0],
        "deferred_names": got["deferred"],
        "loaded_before_toolsearch": got["first_request_tools"],
        "names_bytes": sum(len(n) for n in got["deferred"]),
        "tools": {t["name"]: tools_size([t]) for t in tools},
        "total_bytes": tools_size(tools),
        "skill_bytes": len((ROOT / "skills" / "attend" / "SKILL.md").read_bytes()),
    }


def main() -> None:
    figures = measure()
    if "--json" in sys.argv[1:]:
        print(json.dumps(figures, indent=2))
        return
    print(f"attend MCP tools as the model receives them (real client, {figures['client']}):")
    print(
        f"  before ToolSearch: names only, {len(figures['deferred_names'])} tools, "
        f"{figures['names_bytes']} bytes of names; loaded in the first request: "
        f"{figures['loaded_before_toolsearch'] or 'none'}"
    )
    for name, size in figures["tools"].items():
        print(f"  {name:<36} {size:>6} bytes")
    print(f"  {'total (name, description, input_schema)':<36} {figures['total_bytes']:>6} bytes (goal < 6000)")
    print(f"  {'the skill, skills/attend/SKILL.md':<36} {figures['skill_bytes']:>6} bytes")


if __name__ == "__main__":
    main()
