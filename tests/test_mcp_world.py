"""Helpers the MCP, contract and notify tests share, and the checks that they do what they say.

- ``server_as(world, s)`` is the in-process server acting as stand-in session ``s``: each call makes a
  fresh Context whose ancestry walk starts at the stand-in's pid, as a real server's would at its own.
- ``adopt(world)`` writes a session record for the test process itself (the original attend's
  fixture does the same), so a server spawned over real stdio by this process resolves as that session.
- ``stdio_params(world)`` passes the world's environment explicitly: the SDK hands a stdio child only
  HOME, LOGNAME, PATH, SHELL, TERM and USER of its own.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from mcp import StdioServerParameters

from attend import identity
from attend.mcp.server import AttendServer, build_server
from attend.testing.standin import StandIn
from attend.verbs import join as join_verb
from tests.conftest import World

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def server_as(world: World, s: StandIn | None) -> AttendServer:
    return build_server(lambda: world.context(s))


def enroll(world: World, s: StandIn, channel: str = "crew") -> None:
    """Enroll the stand-in the way an agent does without a loop: by joining a channel."""
    join_verb.run(world.context(s), join_verb.JoinRequest(channel))


def adopt(world: World, project: str = "proj", session_id: str | None = None) -> str:
    """Write a session record naming this test process; returns its session id."""
    sid = session_id or str(uuid.uuid4())
    record = {
        "pid": os.getpid(),
        "sessionId": sid,
        "cwd": str(world.project(project)),
        "startedAt": int(time.time() * 1000),
        "procStart": identity.proc_start(os.getpid()),
        "version": "test-process",
        "kind": "interactive",
        "status": "busy",
    }
    path = identity.claude_dir(world.env) / "sessions" / f"{os.getpid()}.json"
    path.write_text(json.dumps(record))
    return sid


def stdio_params(world: World, project: str = "proj", **env: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "attend", "mcp"],
        cwd=str(world.project(project)),
        env={**world.env, **env},
    )


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    data = result.structured_content
    assert isinstance(data, dict)
    return data


def error_text(result: Any) -> str:
    assert result.is_error, result.structured_content
    return "".join(getattr(block, "text", "") for block in result.content)


def spool_files(root: Path, *parts: str) -> list[str]:
    folder = root.joinpath(*parts)
    return sorted(os.listdir(folder)) if folder.is_dir() else []


# ---------------------------------------------------------------------- the helpers themselves


async def test_the_in_process_server_resolves_as_the_stand_in_it_serves(world: World) -> None:
    from mcp import Client

    s = world.session("alpha")
    async with Client(server_as(world, s), mode="legacy") as client:
        status = structured(await client.call_tool("status", {}))
    assert status["session_id"] == s.session_id
    assert status["kind"] == "agent"
    assert status["resolved"] is True


def test_an_adopted_test_process_resolves_as_its_session(world: World) -> None:
    sid = adopt(world)
    ctx = world.context()  # the ancestry walk starts at this test process
    assert ctx.who().id == sid
