"""Another host's input is only input (issue 32, findings 2, 4, 5 and 8).

Every record that arrives from elsewhere is checked field by field before use, and a bad field drops
the entry or the field, never the caller: presence entries (another host's, as the relay mirrors them)
and relay records, client session records, hook payloads, Codex and Gemini config files. Each reader
is fuzzed with Hypothesis, a bounded number of examples (tests/conftest.py's profile), so the suite
runs in seconds; the hostile cases the review found are pinned as plain tests beside them.

Bounded input at every door: ``attend send`` and ``attend reply`` read standard input only up to the
message limit and a byte; Codex's config values are checked for type before anything is merged.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import time
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from attend import layout, safejson
from attend.conduits import drain, hosthooks, recall, waiter
from attend.domain.messages import remote
from attend.hosts import base as records
from attend.relay import store
from attend.setup import guard
from tests.support import ATTEND, World

SID = "0" * 8 + "-0000-4000-8000-" + "0" * 12

# Any JSON value, nested a few levels: what another host or program may hand over.
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=80),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=12), inner, max_size=6),
    max_leaves=30,
)


def _read(reader: Any, data: str | bytes) -> tuple[str, str]:
    """What a reader makes of ``data``: the value written back canonically (NaN equal to itself), or
    the kind of error and its words."""
    try:
        return "value", json.dumps(reader(data), sort_keys=True)
    except RecursionError:
        return "error", "too deep"
    except ValueError as e:
        return "error", f"{type(e).__name__}: {e}"


@given(
    json_values.map(json.dumps)
    | json_values.map(lambda v: json.dumps(v, indent=1, ensure_ascii=False))
    | json_values.map(lambda v: json.dumps(v).encode())
    | json_values.map(lambda v: " \n" + json.dumps(v) + " x")
    | st.text(max_size=60)
    | st.binary(max_size=60)
    | st.sampled_from(["", " ", "\ufeff{}", "[1,]", '{"a" 1}', "[" * 5000, "1e999", "-Infinity", '"\\ud800"'])
    | st.sampled_from([b"\xef\xbb\xbf[1]", b"\xff\xfe[\x001\x00]\x00", b"\x00", b'"\xc3\x28"'])
)
@example("[" * 5000 + "]" * 5000)
def test_any_text_reads_as_json_loads_reads_it_same_value_or_same_error(data: str | bytes) -> None:
    """safejson reads with the C scanner the json package uses, without importing the package (its
    import is a tenth of a send); what it gives, value or error, is json.loads's own."""
    got = _read(safejson.loads, data)
    want = _read(json.loads, data)
    if want == ("error", "too deep"):
        assert got[0] == "error" and got[1].startswith("TooDeep")
    else:
        assert got == want


def presence_entry(host: str = "devbox", sid: str = SID, **fields: object) -> dict[str, object]:
    entry: dict[str, object] = {
        "host": host,
        "kind": "agent",
        "id": sid,
        "name": "Bea",
        "project": "/p",
        "status": "idle",
        "channels": ["crew"],
    }
    entry.update(fields)
    return entry


# Values of any field as a hostile host might publish them: wrong types, huge, nested, control characters.
field_values = json_values | st.sampled_from(
    [5, None, True, 1e308, -1, "x" * 100_000, "\x00\x1b[2J", ["crew"] * 10_000, {"a": {"b": {"c": 1}}}]
)
entry_fields = st.dictionaries(
    st.sampled_from(["host", "kind", "id", "name", "project", "status", "channels", "seen", "extra"]),
    field_values,
    max_size=6,
)


def _mirror(world: World, *entries: object, ttl: object = 45.0) -> None:
    spool = world.spool
    spool.make_dir("relay")
    spool.write_state(b"{}", "relay", "enabled")
    doc = {"host": "vm", "same_humans": False, "ttl": ttl, "peers": list(entries)}
    spool.write_state(json.dumps(doc).encode(), "relay", "peers.json")


# ---------------------------------------------------------------------- presence entries


@pytest.mark.parametrize("channels", [5, None, "crew", {"crew": 1}, [5, None, ["x"]]])
def test_a_presence_entry_with_a_bad_field_breaks_no_reader_on_this_host(world: World, channels: object) -> None:
    s = world.session("proj", name="Ada")
    assert s.attend("join", "crew").rc == 0
    _mirror(world, presence_entry(channels=channels, seen=time.time()))
    r = world.attend("peers", "--json")
    assert r.returncode == 0, r.stderr
    bea = [p for p in json.loads(r.stdout)["peers"] if p.get("host") == "devbox"]
    assert [p["display"] for p in bea] == ["Bea"] and bea[0]["channels"] == []  # the field dropped
    for args in (("--to", "Bea"), ("--to", "#crew"), ("--to", "Ada")):
        r = world.attend("send", *args, "hello")
        assert r.returncode == 0, (args, r.stderr)
    r = world.attend("doctor", "--json")
    assert "Traceback" not in r.stderr and "TypeError" not in r.stderr, r.stderr


@given(entry_fields)
def test_any_presence_entry_is_dropped_or_read_with_checked_fields(fields: dict[str, object]) -> None:
    value = presence_entry(**fields)
    peer = remote.entry(value)
    if peer is None:
        return
    assert layout.HOST_RE.fullmatch(peer.host) and peer.kind in ("agent", "human")
    assert isinstance(peer.name, str) and 0 < len(peer.name) <= 64 and peer.name.isprintable()
    assert "," not in peer.name and "@" not in peer.name
    assert len(peer.project) <= 256 and peer.project.isprintable() and len(peer.status) <= 32
    assert isinstance(peer.channels, list) and len(peer.channels) <= remote.MAX_CHANNELS
    assert all(isinstance(c, str) and 0 < len(c) <= 64 for c in peer.channels)
    assert isinstance(peer.seen, float) and math.isfinite(peer.seen)


@given(st.binary(max_size=300) | json_values.map(lambda v: json.dumps(v).encode()))
def test_any_mirror_file_reads_as_a_mirror_or_none(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    from attend.spool import Spool

    spool = Spool.open(tmp_path_factory.mktemp("spool"))
    spool.make_dir("relay")
    spool.write_state(data, "relay", "peers.json")
    mirror = remote.read(spool)
    assert mirror is None or (isinstance(mirror.ttl, float) and math.isfinite(mirror.ttl))


@given(st.lists(entry_fields, max_size=5), field_values)
def test_any_mirror_of_entries_reads_without_raising(
    tmp_path_factory: pytest.TempPathFactory, entries: list[dict[str, object]], ttl: object
) -> None:
    from attend.spool import Spool

    spool = Spool.open(tmp_path_factory.mktemp("spool"))
    spool.make_dir("relay")
    doc = {"host": "vm", "ttl": ttl, "peers": [presence_entry(**e) for e in entries]}
    spool.write_state(json.dumps(doc).encode(), "relay", "peers.json")
    mirror = remote.read(spool)
    assert mirror is not None and all(isinstance(p.channels, list) for p in mirror.peers)


# ---------------------------------------------------------------------- relay records


def arrival(host: str, body: str, **headers: str) -> tuple[str, dict[str, str], bytes]:
    from attend.domain.core import envelope
    from attend.domain.core.envelope import Signal

    name = layout.unique_name().rpartition(".")[0] + f".{host}"
    sig = Signal("", "Zed", "agent", SID, "*", "open", "/p", body, 0.0)
    data = envelope.render(sig.with_id(name, layout.name_time(name)))
    return f"attend.from.{host}.to.all.open", {"Nats-Msg-Id": name, "Attend-From-Host": host, **headers}, data


def test_a_relayed_body_over_the_local_64_kib_limit_is_refused_and_never_written(world: World) -> None:
    spool = world.spool
    subject, headers, data = arrival("devbox", "x" * (120 * 1024))
    with pytest.raises(store.Refused, match="64 KiB"):
        store.admit(spool, "vm", subject, headers, data)
    assert not spool.names("relay", "seen") and not spool.room_names("open")
    subject, headers, data = arrival("devbox", "x" * (64 * 1024))
    assert store.receive(spool, "vm", subject, headers, data) == "stored"


@given(
    st.text(max_size=60),
    st.dictionaries(st.sampled_from(["Nats-Msg-Id", "Attend-From-Host", "Attend-Re", "x"]), st.text(max_size=60)),
    st.binary(max_size=400),
)
def test_any_relay_record_is_stored_or_refused_never_raises_otherwise(
    tmp_path_factory: pytest.TempPathFactory, subject: str, headers: dict[str, str], data: bytes
) -> None:
    from attend.spool import Spool

    spool = Spool.open(tmp_path_factory.mktemp("spool"))
    with contextlib.suppress(store.Refused):
        store.admit(spool, "vm", subject, headers, data)


@given(
    st.sampled_from(["From-Id", "Room", "From-Kind", "Client", "Re", "Attend-To", "From", "Origin", "On-Behalf-Of"]),
    st.text(alphabet=st.characters(max_codepoint=127), max_size=300) | st.just("=?utf-8?b?" + "QQ" * 200 + "?="),
)
def test_a_relay_record_with_any_one_header_changed_is_stored_or_refused(
    tmp_path_factory: pytest.TempPathFactory, header: str, value: str
) -> None:
    from attend.spool import Spool

    spool = Spool.open(tmp_path_factory.mktemp("spool"))
    subject, headers, data = arrival("devbox", "hello")
    lines = data.decode().split("\n")
    clean = value.replace("\n", " ").replace("\r", " ")
    if not any(line.startswith(header + ":") for line in lines):
        lines.insert(1, f"{header}: {clean}")
    lines = [f"{header}: {clean}" if line.startswith(header + ":") else line for line in lines]
    try:
        got = store.admit(spool, "vm", subject, headers, "\n".join(lines).encode())
    except store.Refused:
        return
    if isinstance(got, store.Arrival):
        sig = got.sig
        assert sig.via == "devbox" and sig.from_id.endswith("@devbox")
        assert layout.is_session_id(sig.from_id.removesuffix("@devbox")) or layout.is_user_name(
            sig.from_id.removesuffix("@devbox")
        )
        assert sig.sender.isprintable() and len(sig.sender) <= store.NAME_MAX + 64
        assert "\0" not in sig.origin and len(sig.origin) <= store.FIELD_MAX + 64
        assert sig.to.isprintable() and len(sig.to) <= store.FIELD_MAX


# ---------------------------------------------------------------------- client session records


@given(st.dictionaries(st.sampled_from(["pid", "sessionId", "cwd", "procStart", "name", "status"]), field_values))
def test_any_client_session_record_is_dropped_or_read_with_checked_fields(raw: dict[str, Any]) -> None:
    raw.setdefault("sessionId", SID)
    record = records.record_from(raw)
    if record is None:
        return
    assert isinstance(record.pid, int) and not isinstance(record.pid, bool) and 0 < record.pid < records.PID_MAX
    assert record.cwd is None or (record.cwd.startswith("/") and "\0" not in record.cwd and len(record.cwd) <= 4096)
    assert record.name is None or (record.name.isprintable() and len(record.name) <= 128)
    assert record.status is None or len(record.status) <= 32
    assert record.proc_start is None or len(record.proc_start) <= 32


@given(st.binary(max_size=300) | json_values.map(lambda v: json.dumps(v).encode()))
def test_any_session_record_file_is_read_or_skipped_by_every_reader(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    folder = tmp_path_factory.mktemp("sessions")
    (folder / f"{os.getpid()}.json").write_bytes(data)
    records.read_record(folder, os.getpid())
    assert all(r.pid == os.getpid() for r in records.live_records(folder))


def test_a_session_record_with_a_huge_pid_or_a_nul_in_its_cwd_is_no_record_or_loses_the_field() -> None:
    assert records.record_from({"pid": 10**400, "sessionId": SID}) is None
    assert records.record_from({"pid": True, "sessionId": SID}) is None
    record = records.record_from({"pid": 5, "sessionId": SID, "cwd": "/a\0b", "name": "x" * 1000, "procStart": 10**30})
    assert record is not None and (record.cwd, record.name, record.proc_start) == (None, None, None)


# ---------------------------------------------------------------------- hook payloads

payloads = (
    st.binary(max_size=200)
    | json_values.map(lambda v: json.dumps(v).encode())
    | st.dictionaries(
        st.sampled_from(["session_id", "cwd", "stop_hook_active", "source", "tool_name", "tool_input"]),
        field_values | st.just(SID) | st.just("compact"),
        max_size=5,
    ).map(lambda d: json.dumps(d).encode())
)


@given(payloads)
def test_every_hook_entry_takes_any_payload_and_fails_open(world: World, data: bytes) -> None:
    env = {**world.env}
    err = StringIO()
    with pytest.MonkeyPatch.context() as m:
        for k, v in env.items():
            m.setenv(k, v)
        assert drain.hook_main(data, StringIO(), err) == 0
        assert waiter.hook_main(data, env, err) in (0, 2)
        assert recall.hook_main(data, env, StringIO(), err) == 0
        assert hosthooks.session_start(data, env, StringIO(), err) == 0
        with contextlib.suppress(ValueError):  # not an object, or not JSON: main() allows the tool, in one line
            guard.decide(safejson.loads(data or b"null"), env)


@given(field_values)
def test_a_payload_field_is_text_of_its_size_or_nothing(value: object) -> None:
    got = safejson.text_field({"cwd": value}, "cwd", 64)
    assert got is None or (isinstance(got, str) and len(got) <= 64 and got.isprintable())


# ---------------------------------------------------------------------- config files

toml_values = st.sampled_from(['"x"', "5", "true", "[1, 2]", "1.5", "{ a = 1 }", "[]"])


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('mcp_servers = "x"', "mcp_servers is a string"),
        ("hooks = 5", "hooks is the number 5"),
        ("[mcp_servers]\nattend = 3", "mcp_servers.attend is the number 3"),
        ("[hooks]\nstate = [1]", "hooks.state is an array"),
    ],
)
def test_a_codex_config_value_of_the_wrong_type_is_one_line_naming_its_key_and_nothing_is_written(
    world: World, text: str, key: str
) -> None:
    codex = world.home / ".codex"
    codex.mkdir()
    (codex / "config.toml").write_text(text + "\n")
    r = world.attend("install", "--host", "codex")
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and key in lines[0] and "nothing was changed" in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    assert sorted(p.name for p in codex.iterdir()) == ["config.toml"]
    assert (codex / "config.toml").read_text() == text + "\n"


@given(
    st.sampled_from(["mcp_servers", "hooks", "mcp_servers.attend", "hooks.state", "mcp_servers.other"]),
    toml_values,
)
def test_any_codex_config_value_installs_or_is_refused_in_one_line(
    tmp_path_factory: pytest.TempPathFactory, key: str, value: str
) -> None:
    from attend.setup import codex, install, plan

    home = tmp_path_factory.mktemp("home")
    folder = home / ".codex"
    folder.mkdir()
    table, _, leaf = key.rpartition(".")
    (folder / "config.toml").write_text((f"[{table}]\n" if table else "") + f"{leaf} = {value}\n")
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), "PATH": "/usr/bin:/bin"}
    p = codex.SETUP.plan(env, "/usr/bin/attend")
    try:
        plan.install(p, env)
    except install.InstallError as e:
        assert "\n" not in str(e) and key.split(".")[0] in str(e)


@given(st.dictionaries(st.sampled_from(["hooks", "mcpServers", "general", "tools"]), field_values, max_size=3))
def test_any_gemini_settings_file_installs_or_is_refused_in_one_line(
    tmp_path_factory: pytest.TempPathFactory, doc: dict[str, object]
) -> None:
    from attend.errors import AttendError
    from attend.setup import gemini, plan

    home = tmp_path_factory.mktemp("home")
    folder = home / ".gemini"
    folder.mkdir()
    (folder / "settings.json").write_text(json.dumps(doc))
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), "PATH": "/usr/bin:/bin"}
    p = gemini.SETUP.plan(env, "/usr/bin/attend")
    try:
        plan.install(p, env)
    except AttendError as e:
        assert "\n" not in str(e)


hook_files = st.recursive(
    st.none() | st.integers(-5, 5) | st.text(max_size=20) | st.booleans(),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["hooks", "Stop", "AfterAgent", "command", "matcher"]), inner, max_size=3)
    ),
    max_leaves=12,
)


@given(hook_files, hook_files, st.sampled_from(["", "hooks = 5", 'mcp_servers = "x"', "[hooks]\nstate = 1"]))
@example({"hooks": {"Stop": [{"hooks": 5}]}}, {"hooks": {"AfterAgent": [{"hooks": 5}]}}, "")  # a TypeError before
def test_doctor_reads_any_clients_hook_and_config_files_and_says_what_it_found(
    tmp_path_factory: pytest.TempPathFactory, codex_hooks: object, gemini_settings: object, config: str
) -> None:
    from attend.verbs import doctor

    home = tmp_path_factory.mktemp("home")
    for folder, name, doc in ((".codex", "hooks.json", codex_hooks), (".gemini", "settings.json", gemini_settings)):
        (home / folder).mkdir()
        (home / folder / name).write_text(json.dumps(doc))
    (home / ".codex" / "config.toml").write_text(config + "\n")
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), "PATH": "/usr/bin:/bin"}
    for check in doctor._host_checks(env):
        assert check.status in ("ok", "warn", "fail") and "\n" not in check.detail


# ---------------------------------------------------------------------- standard input


@pytest.mark.parametrize("args", [("send",), ("send", "--to", "#open"), ("reply", "--re", "x")])
def test_send_and_reply_read_standard_input_only_up_to_the_limit_and_refuse_in_one_line(
    world: World, args: tuple[str, ...]
) -> None:
    proc = subprocess.Popen(
        [ATTEND, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=world.env,
        cwd=str(world.project("proj")),
        bufsize=0,
    )
    assert proc.stdin is not None
    offered, written = 256 << 20, 0
    chunk = b"a" * (1 << 16)
    try:
        while written < offered:
            proc.stdin.write(chunk)
            written += len(chunk)
    except BrokenPipeError:
        pass
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.close()
    assert proc.stderr is not None
    err = proc.stderr.read()
    proc.wait(60)
    assert proc.returncode == 2, err
    refusal = "attend: the message on standard input is over the 64 KiB limit; shorten it or point at a file"
    assert err.decode().strip() == refusal
    assert proc.stdout is not None and proc.stdout.read() == b""
    assert written < 8 << 20  # it stopped reading at the limit: the rest was never taken from the pipe


def test_a_body_at_the_limit_on_standard_input_is_sent(world: World) -> None:
    r = world.attend("send", "--json", stdin="b" * (64 * 1024) + "\n")
    assert r.returncode == 0, r.stderr
    sent = json.loads(r.stdout)["id"]
    assert (Path(world.spool_root) / "rooms" / "open" / "new" / sent).stat().st_size > 64 * 1024
