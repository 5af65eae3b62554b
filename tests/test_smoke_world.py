from __future__ import annotations

import json

from tests.support import World


def test_a_stand_in_session_resolves_as_itself(world: World) -> None:
    s = world.session("alpha")
    out = s.attend("whoami", "--machine")
    assert out.rc == 0, out.stderr
    assert out.stdout.splitlines() == [
        f"session_id={s.session_id}",
        f"origin_path={s.cwd}",
        "resolved=true",
    ]
    human = world.attend("whoami", "--json")
    assert json.loads(human.stdout)["kind"] == "human"
