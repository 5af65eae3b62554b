"""attend search (attend/search/, attend/verbs/search.py): the query language, the index as a disposable
copy of the rooms (deleted, truncated, unreadable or planted: rebuilt), catch-up at query time (a relayed
arrival, a late link, a removal), who may search what, the CLI and the MCP tool. The fuzz feeds 10,000
hostile queries to the parser and the engine on a tiny index."""

from __future__ import annotations

import json
import os
import random
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from attend import layout
from attend.domain.core import envelope
from attend.domain.core.envelope import Signal
from attend.errors import AttendError
from attend.search import query as q
from attend.search import snippet
from attend.search.index import Filters, Index
from attend.spool import Spool
from attend.verbs import search as search_verb
from tests.support import World, enroll, error_text, post, server_as, structured


def found(world: World, text: str, **kw: object) -> list[str]:
    """The bodies' snippets a human's search finds, best first."""
    result = search_verb.run(world.context(), search_verb.SearchRequest(text, **kw))  # type: ignore[arg-type]
    return [f.snippet for f in result.results]


def ids(world: World, text: str, ctx: object = None) -> list[str]:
    result = search_verb.run(ctx or world.context(), search_verb.SearchRequest(text))  # type: ignore[arg-type]
    return [f.id for f in result.results]


def plain(snippets: list[str]) -> list[str]:
    return sorted(s.replace("**", "") for s in snippets)


def send_as(spool: Spool, room: str, body: str, sender: str = "sess-a", label: str = "Api-alpha", **kw: object) -> str:
    name = layout.unique_name()
    sig = Signal(name, label, "agent", sender, "*", room, "/p", body, layout.name_time(name), **kw)  # type: ignore[arg-type]
    spool.publish([room], envelope.render(sig), name)
    return name


# ---------------------------------------------------------------------- the query language


def test_bare_words_match_as_words_in_any_order_all_of_them(world: World) -> None:
    post(world.spool, "open", "the lock on deploy is stuck")
    post(world.spool, "open", "deploy went fine")
    assert plain(found(world, "stuck lock")) == ["the lock on deploy is stuck"]
    assert plain(found(world, "deploy")) == ["deploy went fine", "the lock on deploy is stuck"]
    assert found(world, "lockless") == []  # a word, not a substring


def test_a_phrase_matches_its_words_in_order(world: World) -> None:
    post(world.spool, "open", "the build failed on main")
    post(world.spool, "open", "main failed the build")
    assert plain(found(world, '"build failed"')) == ["the build failed on main"]
    assert plain(found(world, '"failed build"')) == []


def test_a_prefix_matches_every_word_it_starts(world: World) -> None:
    post(world.spool, "open", "migration done")
    post(world.spool, "open", "migrating the schema")
    post(world.spool, "open", "a mig of beer")
    assert plain(found(world, "migr*")) == ["migrating the schema", "migration done"]


def test_or_binds_tighter_than_and(world: World) -> None:
    post(world.spool, "open", "lock on deploy")
    post(world.spool, "open", "mutex on deploy")
    post(world.spool, "open", "mutex alone")
    assert plain(found(world, "lock OR mutex deploy")) == ["lock on deploy", "mutex on deploy"]


@pytest.mark.parametrize("text", ["deploy -staging", "deploy NOT staging", 'deploy -"to staging"'])
def test_minus_or_not_leaves_out_what_holds_the_word(world: World, text: str) -> None:
    post(world.spool, "open", "deploy to staging")
    post(world.spool, "open", "deploy to production")
    assert plain(found(world, text)) == ["deploy to production"]


def test_only_left_out_words_list_everything_else_newest_first(world: World) -> None:
    post(world.spool, "open", "older one", age=60)
    post(world.spool, "open", "staging only", age=30)
    post(world.spool, "open", "newer one")
    assert [s for s in found(world, "-staging")] == ["newer one", "older one"]


def test_from_filters_by_sender_id_or_display_name_prefix(world: World) -> None:
    send_as(world.spool, "open", "lock taken", sender="sess-api", label="Api-alpha")
    send_as(world.spool, "open", "lock freed", sender="sess-web", label="Web-beta")
    assert plain(found(world, "lock from:api")) == ["lock taken"]
    assert plain(found(world, "lock from:sess-web")) == ["lock freed"]
    assert plain(found(world, "lock", sender="Web")) == ["lock freed"]
    assert plain(found(world, "from:web-BETA")) == ["lock freed"]


def test_room_filters_by_channel_open_or_the_callers_own_room(world: World) -> None:
    post(world.spool, "@deploy", "deploy note in the channel")
    post(world.spool, "open", "deploy note in open")
    post(world.spool, "h-fixture-human", "deploy note to me")
    assert plain(found(world, "deploy room:#deploy")) == ["deploy note in the channel"]
    assert plain(found(world, "deploy room:open")) == ["deploy note in open"]
    assert plain(found(world, "deploy room:@me")) == ["deploy note to me"]
    assert plain(found(world, "deploy", room=("#deploy", "open"))) == [
        "deploy note in open",
        "deploy note in the channel",
    ]


def test_since_takes_a_duration_or_a_date(world: World) -> None:
    post(world.spool, "open", "report old", age=3 * 86400)
    post(world.spool, "open", "report new", age=3600)
    assert plain(found(world, "report since:2d")) == ["report new"]
    day = time.strftime("%Y-%m-%d", time.localtime(time.time() - 2 * 86400))
    assert plain(found(world, f"report since:{day}")) == ["report new"]
    assert plain(found(world, "report", since="4d")) == ["report new", "report old"]


def test_re_finds_one_thread_from_any_of_its_messages(world: World) -> None:
    spool = world.spool
    root = send_as(spool, "open", "plan for the release")
    child = send_as(spool, "open", "release date is friday", re=root)
    send_as(spool, "open", "release notes drafted", re=child, ancestors=(root,))
    send_as(spool, "open", "another release thread")
    expected = ["plan for the release", "release date is friday", "release notes drafted"]
    assert plain(found(world, f"release re:{root}")) == expected
    assert plain(found(world, f"re:{child}")) == expected
    assert plain(found(world, "release", re=f"<{root}@attend.invalid>")) == expected


def test_accents_fold_both_ways(world: World) -> None:
    post(world.spool, "open", "Le café est prêt")
    post(world.spool, "open", "naive resume")
    assert plain(found(world, "cafe pret")) == ["Le café est prêt"]
    assert plain(found(world, "CAFÉ")) == ["Le café est prêt"]
    assert plain(found(world, "naïve résumé")) == ["naive resume"]
    assert found(world, "cafe") == ["Le **café** est prêt"]


@pytest.mark.parametrize(
    ("ident", "near_miss"),
    [
        ("POL-358", "POL 358 and pol_358"),
        ("attend/spool.py", "attend spool py"),
        ("user@host", "the user host"),
        ("a:b", "a b"),
        ("v2.4.1", "v2 4 1"),
    ],
)
def test_identifiers_are_found_as_written_and_only_so(world: World, ident: str, near_miss: str) -> None:
    post(world.spool, "open", f"see {ident}.")
    post(world.spool, "open", near_miss)
    assert found(world, ident) == [f"see **{ident}**."]


def test_part_of_an_identifier_is_found_and_a_prefix_of_one_too(world: World) -> None:
    post(world.spool, "open", "broke at attend/spool.py:42 (POL-358)")
    assert plain(found(world, "spool.py")) == ["broke at attend/spool.py:42 (POL-358)"]
    assert plain(found(world, "spool.py:42")) == ["broke at attend/spool.py:42 (POL-358)"]
    assert plain(found(world, "POL-35*")) == ["broke at attend/spool.py:42 (POL-358)"]
    assert found(world, "POL-35") == []
    assert plain(found(world, "spool")) == ["broke at attend/spool.py:42 (POL-358)"]  # the word within it too


def test_the_agent_mail_bug_a_hyphen_or_a_column_name_is_never_syntax(world: World) -> None:
    post(world.spool, "open", "ticket POL-358 body: fixed")
    for text in ("POL-358", "body:fixed", "body: fixed", "rank", "ids:x", "fts", "358-POL"):
        search_verb.run(world.context(), search_verb.SearchRequest(text))  # no "no such column"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "nothing to search for"),
        ("   ", "nothing to search for"),
        ("* ( ) ^", "nothing to search for"),
        ("x" * 3000, "at most 2000"),
        ("since:yesterday-ish", "since:"),
        ("re:not-an-id", "is not a message id"),
        ("room:@someone", "only room:@me"),
    ],
)
def test_a_query_that_cannot_be_read_is_one_line_and_exit_one(world: World, text: str, why: str) -> None:
    post(world.spool, "open", "something")
    with pytest.raises(q.QueryError) as e:
        search_verb.run(world.context(), search_verb.SearchRequest(text))
    assert why in str(e.value) and "\n" not in str(e.value)
    r = world.attend("search", "--", text) if text.strip() else world.attend("search")
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1 and why in r.stderr


def test_a_best_reading_says_how_it_read_the_query(world: World) -> None:
    post(world.spool, "open", "the lock")
    result = search_verb.run(world.context(), search_verb.SearchRequest('"the lock OR ( NOT'))
    assert [f.snippet for f in result.results] == ["**the** **lock**"]
    assert result.notes == [
        "a quote with no closing quote was left out",
        "'(' has no letters or digits to search for, so it was left out",
        "NOT at the end, with nothing after it, was left out",
    ]
    result = search_verb.run(world.context(), search_verb.SearchRequest("lock OR"))
    assert [f.snippet for f in result.results] == ["the **lock**"]


HOSTILE = [
    '"',
    "(",
    ")",
    "NEAR(",
    "NEAR",
    "*",
    "\x00",
    "OR",
    "AND",
    "NOT",
    "-",
    ":",
    "^",
    "{",
    "}",
    "+",
    "from:",
    "room:",
    "since:",
    "re:",
    "room:#",
    "body:",
    "ids:",
    "🔥",
    "👩‍💻",
    "café",
    "x" * 5000,
    "lock",
    "POL-358",
    "a/b.c",
    "\\",
    "'",
    "\n",
    "\u202e",
    "\ud800",
]


def hostile(rnd: random.Random) -> str:
    """One hostile query: pieces of query syntax, of the engine's, control characters and long words,
    with random characters of any plane between them, joined with spaces or not."""
    parts = []
    for _ in range(rnd.randint(0, 8)):
        if rnd.random() < 0.6:
            parts.append(rnd.choice(HOSTILE))
        else:
            parts.append(
                "".join(
                    chr(rnd.choice((rnd.randint(32, 126), rnd.randint(0, 0x10FFFF)))) for _ in range(rnd.randint(1, 6))
                )
            )
    return (" " if rnd.random() < 0.5 else "").join(parts)


def check_query(index: Index, text: str) -> None:
    try:
        query = q.parse(text)
    except q.QueryError as e:
        assert "\n" not in str(e)
        return
    hits = index.search(query, Filters(), 5)  # the engine never sees a term unquoted: no syntax error
    assert all(hit.name for hit in hits)
    snippet.make("the lock on POL-358, café", query.terms())


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Index]:
    spool = Spool.open(tmp_path_factory.mktemp("tiny") / "spool")
    for body in ("the lock on POL-358", "Le café est prêt", "deploy attend/spool.py", 'NEAR(x) "quoted" *'):
        send_as(spool, "open", body)
    index = Index(spool)
    index.ensure()
    yield index
    index.close()


@settings(max_examples=1_000, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(rnd=st.randoms(use_true_random=True))
def test_ten_thousand_hostile_queries_raise_nothing_but_a_one_line_query_error(tiny: Index, rnd: random.Random) -> None:
    # 1,000 examples of ten queries each: 10,000 queries, at a tenth of hypothesis's cost per example.
    for _ in range(10):
        check_query(tiny, hostile(rnd))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(text=st.text(max_size=60) | st.lists(st.sampled_from(HOSTILE), max_size=6).map(" ".join))
def test_hypothesis_own_strings_raise_nothing_but_a_query_error(tiny: Index, text: str) -> None:
    check_query(tiny, text)


# ---------------------------------------------------------------------- the index: disposable, caught up


def index_file(world: World) -> Path:
    return world.spool_root / "index" / "search.sqlite"


def test_the_index_is_private_and_lives_under_the_spool(world: World) -> None:
    post(world.spool, "open", "hello there")
    assert found(world, "hello")
    st_ = index_file(world).stat()
    assert stat.S_IMODE(st_.st_mode) == 0o600
    assert stat.S_IMODE(index_file(world).parent.stat().st_mode) == 0o700
    assert not [p for p in index_file(world).parent.iterdir() if p.name != "search.sqlite"]  # no journal left


@pytest.mark.parametrize("damage", ["deleted", "truncated", "garbage", "unreadable", "empty"])
def test_a_damaged_index_is_rebuilt_never_repaired(world: World, damage: str) -> None:
    post(world.spool, "open", "the first message")
    assert found(world, "first")
    path = index_file(world)
    if damage == "deleted":
        path.unlink()
    elif damage == "truncated":
        with open(path, "r+b") as fh:
            fh.truncate(path.stat().st_size // 2)
    elif damage == "garbage":
        data = bytearray(path.read_bytes())
        data[100:4000] = os.urandom(3900)
        path.write_bytes(bytes(data))
    elif damage == "unreadable":
        path.chmod(0)
    else:
        path.write_bytes(b"")
    post(world.spool, "open", "the second message")
    assert plain(found(world, "message")) == ["the first message", "the second message"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_symlink_planted_as_the_index_is_never_followed(world: World, tmp_path: Path) -> None:
    post(world.spool, "open", "a message")
    found(world, "message")
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    index_file(world).unlink()
    index_file(world).symlink_to(victim)
    (index_file(world).parent / "search.sqlite-journal").symlink_to(tmp_path / "victim2")
    assert plain(found(world, "message")) == ["a message"]
    assert victim.read_bytes() == b"precious" and not (tmp_path / "victim2").exists()
    assert not index_file(world).is_symlink()


def test_a_fifo_or_a_hard_link_planted_as_the_index_is_replaced_not_opened(world: World, tmp_path: Path) -> None:
    post(world.spool, "open", "a message")
    index_file(world).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.mkfifo(index_file(world))
    assert plain(found(world, "message")) == ["a message"]  # never blocks on the FIFO
    other = tmp_path / "other"
    other.write_bytes(b"keep me")
    index_file(world).unlink()
    os.link(other, index_file(world))
    assert plain(found(world, "message")) == ["a message"]
    assert other.read_bytes() == b"keep me"


def test_a_message_sent_after_the_index_was_made_is_found(world: World) -> None:
    post(world.spool, "open", "before the index")
    assert found(world, "index")
    post(world.spool, "@crew", "after the index, in a new room")
    assert plain(found(world, "index")) == ["after the index, in a new room", "before the index"]


def test_a_record_linked_late_under_an_older_name_is_found(world: World) -> None:
    spool = world.spool
    post(spool, "open", "newest first", age=0)
    assert found(world, "first")
    post(spool, "open", "late first link", age=30)  # an older name, linked after the index passed it
    os.utime(world.spool_root / "rooms" / "open" / "new", ns=(0, 0))  # even with the folder's stamp unchanged
    index = Index(spool)
    index.ensure()
    index.close()
    assert "late first link" in plain(found(world, "first"))


def test_a_relayed_arrival_is_found(world: World) -> None:
    from attend.relay import store

    host = "hostz"
    name = layout.unique_name().rpartition(".")[0] + f".{host}"
    sig = Signal("", "Zed", "agent", "0" * 8 + "-0000-4000-8000-" + "0" * 12, "*", "open", "/p", "relayed POL-9", 0.0)
    data = envelope.render(sig.with_id(name, layout.name_time(name)))
    post(world.spool, "open", "a local one")
    assert found(world, "local")
    subject, headers = f"attend.from.{host}.to.all.open", {"Nats-Msg-Id": name, "Attend-From-Host": host}
    assert store.receive(world.spool, layout.host(), subject, headers, data) == "stored"
    result = search_verb.run(world.context(), search_verb.SearchRequest("POL-9"))
    assert [(f.snippet, f.sender) for f in result.results] == [("relayed **POL-9**", f"Zed@{host}")]


def test_retention_removes_from_the_index_what_it_removes_from_the_spool(world: World) -> None:
    from attend.domain.messages import retention

    spool = world.spool
    old = post(spool, "open", "ancient deploy", age=30 * 86400)
    post(spool, "open", "recent deploy")
    assert plain(found(world, "deploy")) == ["ancient deploy", "recent deploy"]
    index = Index(spool)
    index.ensure()
    assert index.counts()["messages"] == 2
    index.close()
    report = retention.run(spool, retention.Policy(14 * 86400, 10000, 10000, 3600), is_live=lambda _sid: True)
    assert report.files >= 1 and not spool.exists("rooms", "open", "new", old)
    assert plain(found(world, "deploy")) == ["recent deploy"]
    index = Index(spool)
    index.ensure()
    assert index.counts()["messages"] == 1  # its row is gone, not only hidden
    index.close()


def test_a_room_removed_whole_leaves_the_index_with_its_messages(world: World) -> None:
    spool = world.spool
    post(spool, "@gone", "channel chatter")
    assert found(world, "chatter")
    spool.remove_tree("rooms", "@gone")
    assert found(world, "chatter") == []


def test_once_removed_rows_outnumber_a_quarter_the_index_is_rebuilt(world: World) -> None:
    spool = world.spool
    names = [post(spool, "open", f"filler {i}") for i in range(100)]
    assert len(found(world, "filler", limit=100)) == 100
    for name in names[:80]:
        spool.remove("rooms", "open", "new", name)
    index = Index(spool)
    caught = index.ensure()
    assert caught.rebuilt and index.counts() == {"messages": 20, "rooms": 1, "dead": 0}
    index.close()


def test_searching_an_empty_spool_makes_nothing(world: World) -> None:
    shutil.rmtree(world.spool_root)  # not even the world's human has used attend here
    r = world.attend("search", "anything")
    assert r.returncode == 0 and r.stdout == "no messages found\n"
    assert not world.spool_root.exists()


# ---------------------------------------------------------------------- who may search what


def test_a_session_cannot_find_another_sessions_direct_mail(world: World) -> None:
    a, b = world.session("proj", name="Ann"), world.session("proj", name="Bob")
    enroll(world, a)
    enroll(world, b)
    spool = world.spool
    send_as(spool, f"d-{b.session_id}", "secret plan for bob only", sender="someone")
    send_as(spool, f"d-{a.session_id}", "secret plan for ann only", sender="someone")
    send_as(spool, "open", "secret plan in the open", sender="someone")
    ann = world.context(a)
    result = search_verb.run(ann, search_verb.SearchRequest("secret plan"))
    assert plain([f.snippet for f in result.results]) == ["secret plan for ann only", "secret plan in the open"]
    assert search_verb.run(ann, search_verb.SearchRequest("bob")).results == []
    with pytest.raises(q.QueryError, match="not one you receive"):
        search_verb.run(ann, search_verb.SearchRequest(f"secret room:d-{b.session_id}"))
    # The human's search covers every room, as inbox --all does.
    assert len(found(world, "secret plan")) == 3


def test_a_session_finds_what_it_sent_itself_wherever_it_went(world: World) -> None:
    a = world.session("proj", name="Ann")
    enroll(world, a)
    send_as(world.spool, "d-someone-else", "my note to another", sender=a.session_id)
    result = search_verb.run(world.context(a), search_verb.SearchRequest("note"))
    assert [f.snippet for f in result.results] == ["my **note** to another"]


# ---------------------------------------------------------------------- results, the CLI and MCP


def test_results_show_id_room_sender_local_time_and_a_marked_snippet(world: World) -> None:
    name = send_as(world.spool, "@deploy", "rolled back POL-358 at noon", label="Api-alpha")
    r = world.attend("search", "POL-358", "--utc")
    assert r.returncode == 0, r.stderr
    at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(layout.name_time(name)))
    assert r.stdout == f"{at}  #deploy  Api-alpha  {name}\n  rolled back **POL-358** at noon\n"
    doc = json.loads(world.attend("search", "POL-358", "--json").stdout)
    assert doc["results"] == [
        {
            "id": name,
            "at": layout.iso(layout.name_time(name)),
            "room": "@deploy",
            "sender": "Api-alpha",
            "snippet": "rolled back **POL-358** at noon",
        }
    ]
    opened = world.attend("inbox", name)
    assert opened.returncode == 0 and "rolled back POL-358 at noon" in opened.stdout


def test_the_fast_path_and_click_answer_alike(world: World) -> None:
    post(world.spool, "open", "alike in both")
    fast = world.attend("search", "alike", "--limit", "3", "--json")
    slow = world.cli("search", "alike", "--limit", "3", "--json")
    assert fast.returncode == slow.returncode == 0
    assert json.loads(fast.stdout) == json.loads(slow.stdout)


def test_a_search_process_loads_none_of_the_heavy_modules(world: World) -> None:
    """docs/benchmarks.md, "Search": the process stays near 3x a bare interpreter by leaving these out.
    The sqlite3 package loads datetime for adapters no query uses; its C module is what runs."""
    import subprocess
    import sys

    from tests.support import ATTEND

    post(world.spool, "open", "rolled back POL-358 at noon, the lock held")
    for folder in (world.spool_root / "rooms").glob("*/new"):  # written a minute ago: no racy stamp to list again
        os.utime(folder, (time.time() - 60, time.time() - 60))
    assert world.attend("search", "lock").returncode == 0  # indexes the message (a parse, with re)
    heavy = {"click", "dataclasses", "re", "enum", "json", "datetime", "sqlite3", "typing"}
    for query in (["lock"], ["POL-358", "from:Other"]):
        out = subprocess.run(
            [sys.executable, "-X", "importtime", ATTEND, "search", *query],
            capture_output=True,
            text=True,
            env=world.env,
        )
        assert out.returncode == 0 and "POL-358" in out.stdout, out.stdout + out.stderr
        loaded = {line.split("|")[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
        assert "_sqlite3" in loaded and "attend.search.index" in loaded  # positive control: it searched
        assert heavy & loaded == set(), query


def test_the_limit_and_flags_are_checked(world: World) -> None:
    post(world.spool, "open", "x marks")
    assert world.attend("search", "marks", "--limit", "0").returncode == 2
    assert world.attend("search", "marks", "--limit", "many").returncode == 2
    assert world.attend("search", "marks", "--bogus").returncode == 2


def test_a_hostile_body_cannot_draw_on_the_terminal(world: World) -> None:
    post(world.spool, "open", "evil \x1b[2J\x1b]0;pwned\x07 payload\nsecond line")
    r = world.attend("search", "payload")
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout
    assert r.stdout.count("\n") == 2


@pytest.mark.anyio
async def test_the_mcp_tool_returns_headers_and_snippets_within_two_kilobytes(world: World) -> None:
    s = world.session("proj", name="Ann")
    enroll(world, s)
    for i in range(12):
        send_as(world.spool, "open", f"deploy {i} " + "long text about the deploy " * 80, label="A" * 60)
    async with Client(server_as(world, s), mode="legacy") as client:
        doc = structured(await client.call_tool("search", {"query": "deploy"}))
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert len(doc["results"]) == 5
    assert len(json.dumps(doc, ensure_ascii=False).encode()) <= 2048
    assert all(set(r) == {"id", "at", "room", "sender", "snippet"} for r in doc["results"])
    tool = tools["search"]
    size = len(
        json.dumps(
            {"name": "mcp__attend__search", "description": tool.description, "input_schema": tool.input_schema},
            separators=(",", ":"),
            ensure_ascii=False,
        ).encode()
    )
    assert size <= 330, size
    assert tool.description and "\n" not in tool.description


@pytest.mark.anyio
async def test_a_bad_query_over_mcp_is_one_sentence_with_is_error(world: World) -> None:
    s = world.session("proj", name="Ann")
    enroll(world, s)
    post(world.spool, "open", "x")
    async with Client(server_as(world, s), mode="legacy") as client:
        text = error_text(await client.call_tool("search", {"query": "re:nonsense"}))
        limit = error_text(await client.call_tool("search", {"query": "x", "limit": 1000}))
    assert "is not a message id" in text and "\n" not in text
    assert "limit" in limit


def test_errors_are_attend_errors() -> None:
    assert issubclass(q.QueryError, AttendError) and q.QueryError.exit_code == 1


def test_only_the_gate_opens_an_sqlite_file() -> None:
    """SQLite opens its file by path: the gate readies that path (its state files' part, attend/gate/state.py,
    disposable_database), and no other module calls connect on SQLite's package or its C module."""
    import ast

    root = Path(__file__).resolve().parent.parent / "attend"
    callers = sorted(
        str(path.relative_to(root.parent))
        for path in root.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "connect"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in ("sqlite3", "_sqlite3")
    )
    assert callers == ["attend/gate/state.py"]


def test_two_searches_at_once_on_a_fresh_index_both_answer_whole(world: World) -> None:
    import subprocess

    from tests.support import ATTEND

    for i in range(200):
        post(world.spool, "open" if i % 2 else "@crew", f"note {i} about the lock")
    procs = [
        subprocess.Popen(
            [ATTEND, "search", "lock", "--json", "--limit", "100"],
            env=world.env,
            cwd=world.project("proj"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    found = [sorted(r["id"] for r in json.loads(out)["results"]) for out, _ in outs]
    assert found[0] == found[1] and len(found[0]) == 100
    index = Index(world.spool)
    index.ensure()
    assert index.counts()["messages"] == 200  # each message once, whoever indexed it
    index.close()
