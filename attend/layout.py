"""The spool's layout, declared once: every folder and file under the root, the name grammar, what a
``/clear`` carries to the new session id and what retention may remove. Standard library only, so
the hot paths can import it; ``attend.spool`` is the only code that touches what it names.

See docs/architecture/spool.md for the tree and its invariants.
"""

from __future__ import annotations

import _thread
import os
import time
from collections.abc import Callable, Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

# ---------------------------------------------------------------------- the tree

ROOMS = "rooms"  # rooms/<room>/{tmp,new,cur}/: the record of every signal sent to a room in new/
SESSIONS = "sessions"  # sessions/<sid>/: one maildir per enrolled session, and its small state files
CHANNELS = "channels"  # channels/<name>/{meta.json, members/<sid>}
PROJECTS = "projects"  # projects/<project key>/<sid>: who is enrolled at a project path
REGISTRY = "registry"  # registry/<project key>.json (+ .lock): persona and ordinal per session
BY_HOST = "by-host"  # by-host/<pid>-<procStart>: the id a host process (one session at a time) enrolled under
LOCKS = "locks"  # locks/<purpose>: named locks (cleanup, a channel's membership)
LOG = "log"  # log/attend.log (+ .1): the bounded diagnostic log
QUARANTINE = "quarantine"  # unreadable or foreign files set aside, never deleted on sight
STATE = "state"  # state/sweep.json: where the loop's bounded retention sweep stopped
PRESENCE = "presence"  # presence/<sid>.<event>: claimed once, so of all loops one publishes a peer event
HUMANS = "humans"  # humans/<user>/{tmp,new,cur}: a human's own mailbox, and when it last used the bus
RELAY = "relay"  # relay/: the cross-host relay's outbox, dedupe index and peers mirror (only once a relay ran)
INDEX = "index"  # index/search.sqlite: `attend search`'s full-text index, a disposable copy of rooms/ (attend.search)

TOP = (
    ROOMS,
    SESSIONS,
    CHANNELS,
    PROJECTS,
    REGISTRY,
    BY_HOST,
    LOCKS,
    LOG,
    QUARANTINE,
    STATE,
    PRESENCE,
    HUMANS,
    RELAY,
    INDEX,
)
# What an earlier release named otherwise, carried over in place on first use (Spool.carry_over): the
# host processes' pointers lived in by-claude/ before the core named no client, and an enrollment
# named its host process ``claude_pid`` (sessions.read_enrollment reads either).
BY_HOST_BEFORE = "by-claude"
HOST_PID_BEFORE = "claude_pid"
PRESENCE_ROOM = "sys-presence"  # rooms/sys-presence: peer started / ended records

TMP, NEW, CUR, CLAIMED = "tmp", "new", "cur", "claimed"
MAILDIR = (TMP, NEW, CUR, CLAIMED)  # a session's (or a human's) maildir
ROOM_MAILDIR = (TMP, NEW, CUR)  # a room's: cur/ stays empty, there so that mail readers open the room
MAILDIR_TOPS = (ROOMS, SESSIONS, HUMANS)  # each folder below these is a maildir any mail reader opens
SEEN = ":2,S"  # maildir info of an entry in cur/: version 2, flag Seen

# A session's own files, beside its maildir.
ENROLLED = "enrolled"  # the enrollment document (JSON): the session receives
OPTOUT = "optout"  # `scene private` under a live loop: stop receiving when the loop ends
MOVED_TO = "moved-to"  # after a /clear: the new id, followed by late senders
MOVED_FROM = "moved-from"  # after a /clear: the old ids, one a line, whose direct rooms repair still covers
HEARTBEAT = "heartbeat"  # mtime only: touched by the loop and the drain
DELIVERY_LOCK = "lock"  # linkers and claimers of one session serialise on it
SHOW_LOCK = "show.lock"  # held by a conduit from claim to show to seen
RUN_LOCK = "run.lock"  # held by a live `attend run` (the duplicate-run lock)
LAST_INBOUND = "last-inbound"  # the newest message from another session a conduit showed
REPAIR = "repair.json"  # the repair pass's cursor per room
NOTICE = "notice"  # "N earlier messages not shown", for the next conduit to announce once
REPLY_HINT = "reply-hint"  # present once a conduit has shown the reply forms
DRAIN_ROUNDS = "drain-rounds"  # consecutive blocking drains (the loop guard)
DRAINED = "drained"  # "<event tag> block|none": the drain's verdict at the last turn end (for the waiter)
WAITER = "waiter"  # "<pid> <procStart>" of the session's newest waiter (`attend wait --hook`)
SOCKET = "socket"  # "<pid> <procStart>" of the `attend mcp` posting to the session's inbox socket
# Each process a state file above names holds its own pid's byte of this lock (Spool.hold_slot) while
# it serves: the evidence readers ask for, since any process of the user can write the file.
STATE_LOCKS = {WAITER: "waiter.lock", SOCKET: "socket.lock"}
POSTED = "posted"  # the socket conduit's post awaiting the transcript's word: where to look, and its newest id
WAKE_ROUNDS = "wake-rounds"  # consecutive quick wakes by the waiter (its loop guard)
BANNER = "banner"  # the fingerprint of the last banner the loop printed
PRESENCE_CURSOR = "presence-cursor"  # the newest peer event the loop has printed
REAPING = "reaping"  # retention is removing this ended session
MCP = "mcp"  # mcp/<pid>.json: markers of live `attend mcp` servers
NOTIFY = "notify"  # notify/: the trailer's cursors and subscriptions
ACTIVE = "active"  # humans/<user>/active, mtime only: the human last sent or read (peers lists recent ones)
KEEPWARM = "keepwarm"  # keepwarm arming (JSON: deadline, window, the idle stretch last warmed), by `attend keepwarm`
FOLDED_BY = "folded-by"  # sessions/<sender>/folded-by/<receiver>: bumped by each fold (the sender's backpressure)
SENSOR_STATE = "sensors.json"  # what the loop's sensors remember across restarts (a context crossing said once)
DISCLOSED = "disclosed"  # JSON {at, why}: when the reheat was last said, by any conduit or the compact hook
COMPACTED = "compacted"  # JSON {at, shown}: the last compaction, and the cur/ names shown before it
LEASES = "leases"  # JSON: the session's leases on files, and the host process they live as long as (leases.md)
LEASES_LOCK = "leases"  # locks/leases: one lease or release at a time, so two sessions never both win a file
# The inbound rule (docs/architecture/outcomes.md): what a session takes in, and what waits for it.
HELD = "held"  # sessions/<sid>/held/: deliveries its inbound rule holds; no conduit lists this folder
DECLINED = "declined"  # sessions/<sid>/declined/: held deliveries declined (kept, never shown)
INBOUND = "inbound"  # sessions/<sid>/inbound: the session's own rule, "<class> <rule>" a line
INBOUND_DEFAULT = "inbound-default"  # the project overlay's default, written at enrollment (no yaml on a send)

# The relay's files (docs/architecture/relay.md), under relay/.
RELAY_ON = "enabled"  # relay/enabled: a relay serves this spool; sends for other hosts also go to the outbox
OUTBOX = "outbox"  # relay/outbox/{tmp,new,cur}/: records for other hosts; new/ is the queue, cur/ what the server took
RELAY_SEEN = "seen"  # relay/seen/<original id>: the local name an arrival got (the dedupe index, outlives new/)
RELAY_PEERS = "peers.json"  # relay/peers.json: other hosts' sessions and humans, as presence last said
RELAY_LOCK = "relay.lock"  # relay/relay.lock: held by the one running `attend relay`
RELAY_STATE = "state.json"  # relay/state.json: what the running relay last said of its link (doctor reads it)
ASIDE = "aside"  # relay/outbox/aside/: records the relay could not publish (doctor and relay --check count them)
ASIDE_LOG = "aside.log"  # relay/aside.log: "<id> <sender> <why>" for each record set aside, newest last
NOTICES = "notices"  # relay/notices/<sender>: the newest set-aside of a sender's, said in its next send's output

# A channel's files, and the other named files.
MEMBERS = "members"  # channels/<name>/members/<sid or user>: one file per member
META = "meta.json"  # channels/<name>/meta.json: pinned, description
LOG_FILE, LOG_OLD = "attend.log", "attend.log.1"  # log/: the current diagnostic log and the one before
SWEEP = "sweep.json"  # state/sweep.json: the unit the last bounded sweep reached
CLEANUP_LOCK = "cleanup"  # locks/cleanup: one cleanup (or sweep) at a time
SEARCH_DB = "search.sqlite"  # index/search.sqlite: deleted, truncated or corrupt, the next search rebuilds it

# What a /clear carries from sessions/<old>/ to sessions/<new>/: the maildir entries, these files
# (the opt-out too: `scene private` must survive it; the leases: a /clear keeps them), these folders,
# the channel memberships and the enrollment itself (merged).
CARRIED_FILES = (
    LAST_INBOUND,
    REPAIR,
    NOTICE,
    REPLY_HINT,
    DRAIN_ROUNDS,
    BANNER,
    PRESENCE_CURSOR,
    OPTOUT,
    LEASES,
    INBOUND,
    INBOUND_DEFAULT,
)
CARRIED_FOLDERS = (NOTIFY, MCP)

# What retention may remove (docs/architecture/spool.md, "Bounded growth"): stale files in any
# tmp/ of ROOMS and SESSIONS; room records in new/ by age and count; a live session's cur/ by age and
# count; everything of an ended session past its grace; the room of a dissolved channel; old files in
# QUARANTINE and PRESENCE. Never a live session's new/ or claimed/.
RETAINED_TOPS = (ROOMS, SESSIONS, HUMANS)  # owners of a tmp/ that the sweep visits
STALE_TMP_SECONDS = 129600  # 36 hours, as maildir(5) suggests for abandoned deliveries
LOG_LIMIT = 256 * 1024  # the diagnostic log keeps at most two files of this size

# ---------------------------------------------------------------------- names


class LazyPattern:
    """A regular expression compiled on its first use: a module imported by every ``send`` declares
    several that a given send never asks (each compile costs ~0.1 ms of a process's start), and a
    plain send asks none, so it never imports ``re`` (with ``enum`` and ``functools``, ~3 ms)."""

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            import re

            self._compiled = re.compile(self.pattern)
        return self._compiled

    def fullmatch(self, text: str) -> re.Match[str] | None:
        return self.compiled.fullmatch(text)

    def match(self, text: str) -> re.Match[str] | None:
        return self.compiled.match(text)

    def search(self, text: str) -> re.Match[str] | None:
        return self.compiled.search(text)

    def findall(self, text: str) -> list[str]:
        return self.compiled.findall(text)

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str) -> str:
        return self.compiled.sub(repl, text)


# <seconds>.M<microseconds>P<pid>Q<per-process counter>R<random>.<host>: fixed-width time first so
# names sort in send order; no ':' or '/', no leading '.', as the maildir rule asks.
NAME_RE = LazyPattern(r"[0-9]{10}\.M[0-9]{6}P[0-9]+Q[0-9]+R[0-9a-f]{8}\.[A-Za-z0-9-]+")

# The link bound: a record stays linked in a room's new/ only if its link() returned within this many
# seconds of its name's time (Spool.publish checks the clock after each link, and withdraws a late
# one; the sender retries under a fresh name). So a name older than the bound that a listing lacks
# never appears, and repair's cursor and the trailer's look-back trail by exactly this much. The
# window it must cover is render, write, fsync of one small file and the link: milliseconds, seconds
# on a disk under a heavy journal commit. Longer costs only re-examining that many seconds of names.
LINK_BOUND = 10.0

HOST_RE = LazyPattern(r"[A-Za-z0-9][A-Za-z0-9-]{0,62}")  # a host name as names and relay subjects carry it


ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def made_safe(text: str, allowed: str, runs: bool = False) -> str:
    """``text`` with every character not in ``allowed`` (ASCII) turned into ``-``, one for one, or each
    run of them into one ``-`` (``runs``): what ``re.sub("[^…]", "-", text)`` (``"[^…]+"``) does,
    without importing ``re`` on every send's path."""
    out: list[str] = []
    replaced = False  # the last character written was a replacement
    for c in text:
        if c in allowed:
            out.append(c)
            replaced = False
        elif not (runs and replaced):
            out.append("-")
            replaced = True
    return "".join(out)


def _host_name() -> str:
    """This host's name in message ids: ``$ATTEND_HOST`` when it is a valid name (two relayed hosts on
    one machine, a container), else the machine's node name made safe."""
    given = os.environ.get("ATTEND_HOST", "")
    if given and HOST_RE.fullmatch(given) and given != "all":
        return given
    return made_safe(os.uname().nodename, ALNUM + "-")[:63].strip("-") or "localhost"


_HOST = _host_name()
_name_lock = _thread.allocate_lock()  # not threading: the fast paths import this module
_counter = 0
_last_us = 0


def unique_name(now_ns: int | None = None) -> str:
    """A maildir unique name that sorts in send order and is the message id."""
    global _last_us, _counter
    with _name_lock:
        us = (time.time_ns() if now_ns is None else now_ns) // 1000
        us = max(us, _last_us + 1)  # strictly increasing within a process: one sender's names never tie
        _last_us = us
        seq = _counter
        _counter += 1
    sec, usec = divmod(us, 1_000_000)
    return f"{sec:010d}.M{usec:06d}P{os.getpid()}Q{seq}R{os.urandom(4).hex()}.{_HOST}"


def host() -> str:
    """The host name this process writes into message ids (and the relay publishes under)."""
    return _HOST


def adopt_host(name: str) -> None:
    """Write ``name`` into this process's message ids from now on: the spool's host, once a relay has
    run on it, whatever this process's environment says (attend.domain.messages.remote.adopt)."""
    global _HOST
    if HOST_RE.fullmatch(name) and name != "all":
        _HOST = name


def small_int(text: str | None, default: int = 0, digits: int = 18) -> int:
    """The number a state file holds: ASCII digits, at most ``digits`` of them (a 5,000-digit number
    is refused before conversion, which would raise); ``default`` for anything else."""
    text = (text or "")[: digits + 64].strip()
    if not text or len(text) > digits or not text.isascii() or not text.isdigit():
        return default
    return int(text)


def name_host(name: str) -> str:
    """The host a unique name was made on: its last dotted part."""
    return name.rsplit(".", 1)[-1]


def name_time(name: str) -> float:
    """Send time (epoch seconds) encoded in a unique name; 0.0 for a foreign name."""
    try:
        sec, rest = name.split(".M", 1)
        return int(sec) + int(rest[:6]) / 1e6
    except ValueError:
        return 0.0


def cutoff_name(at: float) -> str:
    """The unique-name prefix of time ``at``: every older name sorts below it."""
    sec, usec = divmod(int(at * 1_000_000), 1_000_000)
    return f"{sec:010d}.M{usec:06d}"


def base_name(entry: str) -> str:
    """The unique name of a maildir entry, without its ``:2,…`` info."""
    return entry.split(":", 1)[0]


_SID_CHARS = ALNUM + "_-"


def is_session_id(text: str) -> bool:
    """A session id, one safe path component: ``[A-Za-z0-9][A-Za-z0-9_-]{0,127}``. Checked by hand, as
    a user name is: every send reads a client's record through this, and a pattern would bring ``re``
    into the send (~3 ms of a ~28 ms process)."""
    return 0 < len(text) <= 128 and text[0] in ALNUM and all(c in _SID_CHARS for c in text)


_USER_FIRST = ALNUM + "_"
_USER_CHARS = ALNUM + "_.-"


def is_user_name(text: str) -> bool:
    """A human's user name, as its mailbox folder: ``[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}``."""
    return 0 < len(text) <= 64 and text[0] in _USER_FIRST and all(c in _USER_CHARS for c in text)


def user_key(human_id: str) -> str:
    """The mailbox folder of a human id: the user name, made one safe component (an older spool's
    ``user@terminal`` id is the same user). The one rule; ``h-<user>`` rooms follow it too."""
    user = made_safe(human_id.split("@", 1)[0], _USER_CHARS).lstrip(".-")[:64]
    return user or "unknown"


def iso(at: float) -> str:
    """UTC, ISO 8601, to the second: the one form --json output and the trailer use."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def config_root(env: Mapping[str, str] | None = None) -> str:
    """The user's settings folder, the other place attend keeps files: ``$XDG_CONFIG_HOME``/attend when
    absolute, else ``~/.config/attend``. Not the spool: config.yaml, scenes.yaml, install targets."""
    env = os.environ if env is None else env
    xdg = env.get("XDG_CONFIG_HOME", "")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "attend")
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config", "attend")


def private_dirs(path: str | os.PathLike[str]) -> None:
    """Make ``path`` and each missing folder above it 0700 (``mkdir(parents=True, mode=…)`` gives the
    parents the umask's mode: ~/.config/attend and its targets/ were 0755). What exists is left as is."""
    missing = []
    folder = os.path.abspath(os.fspath(path))
    while not os.path.isdir(folder):
        missing.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            if not os.path.isdir(folder):
                raise


def default_root(env: Mapping[str, str] | None = None) -> str:
    """``$ATTEND_HOME``, else an absolute ``$XDG_CACHE_HOME``/attend, else ``~/.cache/attend``."""
    env = os.environ if env is None else env
    if home := env.get("ATTEND_HOME"):
        return os.path.abspath(home)
    xdg = env.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "attend")
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache", "attend")


def event_tag(payload: bytes) -> str:
    """A tag for one Stop event: Claude Code hands every hook of the event the same payload bytes, so
    the drain and the waiter started by one turn end compute the same tag (zlib: no hashlib import)."""
    import zlib

    return f"{zlib.crc32(payload):08x}{len(payload):x}"
