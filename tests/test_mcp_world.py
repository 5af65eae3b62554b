"""Checks that the MCP helpers in tests/support.py do what they say: ``server_as`` resolves as the
stand-in it serves, and ``adopt`` makes this test process resolve as its own session."""

from __future__ import annotations

import pytest

from tests.support import World, adopt, server_as, structured

pytestmark = pytest.mark.anyio


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
