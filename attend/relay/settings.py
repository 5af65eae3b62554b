"""The ``relay:`` section of the user's config.yaml, checked: one line per problem, nothing imported from nats."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from attend import layout
from attend.domain.settings import config

DEFAULT_HEARTBEAT = 15.0  # seconds between presence puts; entries live 3 heartbeats (the readers' TTL)
KNOWN = ("servers", "host", "nkey_seed", "creds", "user", "password_file", "tls_ca", "same_humans", "heartbeat")


@dataclass
class RelaySettings:
    servers: list[str]
    host: str
    nkey_seed: str | None = None  # a file holding the host's nkey seed
    creds: str | None = None  # a .creds file (JWT + seed)
    user: str | None = None
    password_file: str | None = None
    tls_ca: str | None = None
    same_humans: bool = False
    heartbeat: float = DEFAULT_HEARTBEAT
    problems: list[str] = field(default_factory=list)
    source: str = ""

    @property
    def ttl(self) -> float:
        return 3 * self.heartbeat


def load(env: Mapping[str, str] | None = None) -> RelaySettings | None:
    """The relay's settings, or None when config.yaml has no ``relay:`` section (no relay here)."""
    cfg = config.load(env, announce=True)
    if cfg.relay is None and cfg.relay_unread is not None:  # a relay: section in a file not read
        where, line = cfg.relay_unread
        return RelaySettings(
            [],
            layout.host(),
            problems=[f"{where}:{line}: relay: not read, as the file does not apply (see attend config lint)"],
            source=f"{where}:{line}",
        )
    if cfg.relay is None:
        return None
    data, where, line = cfg.relay
    return parse(data, f"{where}:{line}")


def parse(data: object, where: str = "relay") -> RelaySettings:
    out = RelaySettings([], layout.host(), source=where)
    bad = out.problems
    if not isinstance(data, dict):
        bad.append(f"{where}: relay: must be a mapping with at least servers: [nats://host:4222]")
        return out
    for key in data:
        if key not in KNOWN:
            bad.append(f"{where}: relay.{key}: unknown key; known: {', '.join(KNOWN)}")
    servers = data.get("servers")
    if isinstance(servers, str):
        servers = [servers]
    if not isinstance(servers, list) or not servers or not all(isinstance(s, str) and s for s in servers):
        bad.append(f"{where}: relay.servers: give a list of server URLs, e.g. [tls://bus.example:4222]")
    else:
        for url in servers:
            if not url.startswith(("nats://", "tls://", "ws://", "wss://")):
                bad.append(f"{where}: relay.servers: {url!r} is not a nats://, tls:// or ws:// URL")
        out.servers = list(servers)
    host = data.get("host")
    if host is not None:
        if not isinstance(host, str) or not layout.HOST_RE.fullmatch(host) or host == "all":
            bad.append(f"{where}: relay.host: {host!r} must be letters, digits and '-' (and not 'all')")
        elif host != layout.host():
            bad.append(
                f"{where}: relay.host: {host} is not the name this machine writes into message ids "
                f"({layout.host()}); set ATTEND_HOST={host} for every attend process, or drop relay.host"
            )
        else:
            out.host = host
    for key in ("nkey_seed", "creds", "password_file", "tls_ca"):
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or not value:
            bad.append(f"{where}: relay.{key}: give a file path")
            continue
        path = os.path.expanduser(value)
        if not os.path.isfile(path):
            bad.append(f"{where}: relay.{key}: no file at {path}")
        elif key != "tls_ca" and os.stat(path).st_mode & 0o077:
            bad.append(f"{where}: relay.{key}: {path} is readable by others; chmod 600 it")
        setattr(out, key, path)
    user = data.get("user")
    if user is not None:
        if not isinstance(user, str) or not user:
            bad.append(f"{where}: relay.user: give the user name the server knows this host by")
        else:
            out.user = user
    if sum(x is not None for x in (out.nkey_seed, out.creds, out.user)) > 1:
        bad.append(f"{where}: relay: give one of nkey_seed, creds or user (+ password_file), not several")
    same = data.get("same_humans", False)
    if not isinstance(same, bool):
        bad.append(f"{where}: relay.same_humans: true or false")
    else:
        out.same_humans = same
    beat = data.get("heartbeat", DEFAULT_HEARTBEAT)
    if isinstance(beat, bool) or not isinstance(beat, int | float) or not 1 <= beat <= 60:
        bad.append(f"{where}: relay.heartbeat: seconds between 1 and 60 (the bucket keeps a key 90 s)")
    else:
        out.heartbeat = float(beat)
    return out


def has_client() -> bool:
    """Whether nats-py, the relay extra, is installed (the relay and its check import it anyway)."""
    try:
        import nats  # noqa: F401
    except ImportError:
        return False
    return True


def unusable(s: RelaySettings) -> list[str]:
    """What makes these credentials unusable before any connection is tried, one line each: the
    ``nkeys`` package an nkey or ``.creds`` login needs, a file that cannot be read, a seed, ``.creds``
    file or CA that does not parse. The client would otherwise fail the same way at every reconnect
    (or, for a ``.creds`` file with no JWT, read it for ever)."""
    out: list[str] = []
    nkeys: Any = None
    if s.nkey_seed or s.creds:
        try:
            nkeys = importlib.import_module("nkeys")  # nats-py signs the server's nonce with it
        except ImportError as e:
            key = "nkey_seed" if s.nkey_seed else "creds"
            return [f"{s.source}: relay.{key}: an nkey login needs the nkeys package ({e}); pip install nkeys"]
    for key in ("nkey_seed", "creds", "password_file", "tls_ca"):
        path = getattr(s, key)
        if path is None:
            continue
        try:
            with open(path, "rb") as f:
                data = f.read(1 << 20)
        except OSError as e:
            out.append(f"{s.source}: relay.{key}: cannot read {path}: {e.strerror or e}")
            continue
        problem = _unparsable(key, data, path, nkeys)
        if problem:
            out.append(f"{s.source}: relay.{key}: {path} {problem}")
    return out


def _unparsable(key: str, data: bytes, path: str, nkeys: Any) -> str | None:
    """Why a readable credentials file cannot serve, or None."""
    if key == "tls_ca":
        import ssl

        try:
            ssl.create_default_context(cafile=path)
        except (ssl.SSLError, ValueError) as e:
            return f"holds no CA certificate ({e.__class__.__name__})"
        return None
    if key == "password_file":
        return "is empty" if not data.strip() else None
    seed = data.strip()
    if key == "creds":
        lines = [line.strip() for line in data.splitlines()]
        jwt = _after(lines, b"BEGIN NATS USER JWT")
        seed = _after(lines, b"BEGIN USER NKEY SEED") or b""
        if not jwt:
            return "holds no user JWT (-----BEGIN NATS USER JWT-----); is it a .creds file?"
    try:
        nkeys.from_seed(bytearray(seed))
    except Exception:
        return "holds no valid nkey seed (a line SU...)"
    return None


def _after(lines: list[bytes], marker: bytes) -> bytes | None:
    """The line after the one holding ``marker``, as a .creds file keeps its JWT and its seed."""
    for i, line in enumerate(lines[:-1]):
        if marker in line:
            return lines[i + 1] or None
    return None


def connect_options(s: RelaySettings, on_error: Callable[[Exception], Any] | None = None) -> dict[str, Any]:
    """nats.connect keyword arguments for these settings: every URL (a list: nats-py refuses a comma
    string), endless reconnects, this host's inbox prefix (its permissions allow no other), TLS."""
    opts: dict[str, Any] = {
        "servers": s.servers,
        "name": f"attend-relay-{s.host}",
        "inbox_prefix": f"_INBOX_{s.host}",
        "max_reconnect_attempts": -1,
        "reconnect_time_wait": 1,
        "connect_timeout": 3,
        "allow_reconnect": True,
    }
    if on_error is not None:
        opts["error_cb"] = on_error  # the default prints a traceback per failed reconnect
    if s.creds:
        opts["user_credentials"] = s.creds
    if s.nkey_seed:
        opts["nkeys_seed"] = s.nkey_seed
    if s.user:
        opts["user"] = s.user
        if s.password_file:
            with open(s.password_file, encoding="utf-8") as f:
                opts["password"] = f.read().strip()
    if s.tls_ca:
        import logging
        import ssl

        opts["tls"] = ssl.create_default_context(cafile=s.tls_ca)
        # nats-py's protocol asks to keep a half-closed socket, which asyncio's TLS transport ignores and
        # warns of, on stderr, at every refused or dropped connection: noise beside the relay's one line.
        logging.getLogger("asyncio").addFilter(_quiet_tls_eof)
    return opts


def _quiet_tls_eof(record: Any) -> bool:
    return not str(record.msg).startswith("returning true from eof_received()")
