"""The relay between hosts (`attend relay`, docs/architecture/relay.md), against a real nats-server that
the tests start on loopback and kill: two hosts on one machine, each with its own spool, HOME and host
name (ATTEND_HOST), each with its own relay process.

- Every kind of address crosses exactly once: #open, a channel, a remote session by name, a remote
  human, and a reply back; what arrives says where it came from, in every rendering.
- ``peers`` on each host lists the other's sessions; a shared name addresses this host's session, and
  the sender is told the other's ``name@host``.
- Order: a window of publishes that the stream refuses in part and then takes (a proxy holds it while
  the stream is changed under it) still arrives in its sender's order.
- Chaos: ``kill -9`` of either relay, a server restart and a 30 s server outage while 2,000 messages
  flow both ways from a background sender: 0 lost, 0 duplicated, none out of its sender's order.
- A three-node cluster that loses its stream leader keeps the bus working.
- Security: host B cannot publish as A, read or acknowledge A's consumer, purge the stream or touch A's
  presence; a record lying about its host is refused by the receiving relay and never written.
- ``--check`` says each problem in one line (config, stream, consumers and their filters, each
  permission); the relay exits 1 on the lock or a wrong filter, 2 when the server refuses it.
- The relay's own files: an arrival batch's index entries are durable before its records land; prune.
- With no relay configured, nothing of nats is imported by a send.
- Nothing lost without a word: a process whose ATTEND_HOST is not the spool's sends under the spool's
  host; a record the relay sets aside shows in doctor, relay --check and its sender's next send; a
  reply across hosts reaches the human's mailbox; a bare local name wins over another host's; the
  relay without its extra is one line; a stop prints no traceback.

The server configuration is built from ``attend.relay.subjects.permissions``, the same function the
documented configuration comes from.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from attend import layout
from attend.domain.messages import outbound
from attend.relay import subjects
from attend.testing.standin import StandIn
from tests.support import ATTEND, World, wait_until

NATS_SERVER = shutil.which("nats-server") or (
    "/usr/sbin/nats-server" if os.path.exists("/usr/sbin/nats-server") else None
)
# `-m "not relay"` leaves these tests out on purpose; without nats-server a test that starts one fails,
# saying what to install (a skip would leave the run green with the relay never tried against a server).
pytestmark = pytest.mark.relay
CHAOS_COUNT = 2000  # messages each way, as the issue asks
CHAOS_SECONDS = 70.0  # the flow's length: it goes on through each disturbance (the outage ends by 55 s)
OUTAGE = 30.0  # seconds the server is down
PASSWORDS = {"admin": "admin-secret", "hosta": "a-secret", "hostb": "b-secret", "hostc": "c-secret"}


def require_nats_server() -> None:
    """Fail, saying what to install, when there is no nats-server to start."""
    if NATS_SERVER is None:
        pytest.fail(
            "nats-server not installed: apt-get install nats-server (.ci/run installs it), "
            'or leave the relay tests out on purpose with -m "not relay"',
            pytrace=False,
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class NatsServer:
    """One nats-server (optionally one node of a cluster), with JetStream and per-host users."""

    def __init__(
        self,
        tmp: Path,
        name: str = "n1",
        routes: list[int] | None = None,
        cluster_port: int = 0,
        permissions: dict[str, Any] | None = None,
        nkey_users: dict[str, str] | None = None,
        tls: tuple[Path, Path] | None = None,
    ) -> None:
        require_nats_server()
        self.dir = tmp / f"nats-{name}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.name = name
        users: list[dict[str, Any]] = [{"user": "admin", "password": PASSWORDS["admin"]}]
        for host in ("hosta", "hostb", "hostc"):
            perms = (permissions or {}).get(host) or subjects.permissions(host)
            users.append({"user": host, "password": PASSWORDS[host], "permissions": perms})
        for host, public in (nkey_users or {}).items():  # as docs/architecture/relay.md configures a host
            users.append({"nkey": public, "permissions": subjects.permissions(host)})
        conf: dict[str, Any] = {
            "server_name": name,
            "listen": f"127.0.0.1:{self.port}",
            "jetstream": {"store_dir": str(self.dir / "js"), "max_mem": "32M", "max_file": "256M"},
            "accounts": {"ATTEND": {"jetstream": "enabled", "users": users}},
        }
        self.scheme = "nats"
        if tls is not None:  # every client must speak TLS, and is shown this certificate
            conf["tls"] = {"cert_file": str(tls[0]), "key_file": str(tls[1])}
            self.scheme = "tls"
        if routes is not None:
            conf["cluster"] = {
                "name": "attend",
                "listen": f"127.0.0.1:{cluster_port}",
                "routes": [f"nats-route://127.0.0.1:{p}" for p in routes],
            }
        self.conf = self.dir / "server.conf"
        self.conf.write_text(json.dumps(conf, indent=1))
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def start(self, wait: bool = True) -> None:
        log = open(self.dir / "server.log", "ab")  # noqa: SIM115 - the server writes it while it runs
        self.proc = subprocess.Popen([str(NATS_SERVER), "-c", str(self.conf)], stdout=log, stderr=log)
        log.close()
        if wait:
            wait_until(self.listening, f"nats-server {self.name} to listen on {self.port}")

    def listening(self) -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
        self.proc = None


def relay_config(
    world: World, host: str, servers: list[str], user: str | None = None, tls_ca: Path | None = None
) -> None:
    folder = Path(layout.config_root(world.env))
    folder.mkdir(parents=True, exist_ok=True)
    secret = folder / "relay.password"
    secret.write_text(PASSWORDS[user or host] + "\n")
    secret.chmod(0o600)
    (folder / "config.yaml").write_text(
        "relay:\n"
        f"  servers: [{', '.join(servers)}]\n"
        f"  user: {user or host}\n"
        f"  password_file: {secret}\n"
        "  heartbeat: 1\n" + (f"  tls_ca: {tls_ca}\n" if tls_ca else "")
    )


def key_config(world: World, servers: list[str], key: str, secret: str, tls_ca: Path) -> None:
    """The relay section docs/architecture/relay.md shows: an nkey seed (or a .creds file) and the CA
    that signed the server's certificate."""
    folder = Path(layout.config_root(world.env))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ("relay.nk" if key == "nkey_seed" else "relay.creds")
    path.write_text(secret)
    path.chmod(0o600)
    (folder / "config.yaml").write_text(
        f"relay:\n  servers: [{', '.join(servers)}]\n  {key}: {path}\n  tls_ca: {tls_ca}\n  heartbeat: 1\n"
    )


def make_ca(folder: Path, name: str) -> tuple[Any, Any, Path]:
    """A certificate authority of the test's own: (its key, its certificate, the PEM file holding it)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    pem = folder / f"{name}.pem"
    pem.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key, cert, pem


def server_certificate(folder: Path, ca_key: Any, ca_cert: Any) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by the CA: (certificate file, key file) for nats-server."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bus")]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    cert_file, key_file = folder / "server.pem", folder / "server.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    key_file.chmod(0o600)
    return cert_file, key_file


class Host:
    """One host: its World (HOME, spool), its host name and its relay process. With ``netns``, the
    relay and this host's commands run in that network namespace, each in a UTS namespace of its own
    whose node name is the host name (no ATTEND_HOST): a machine of its own but for the disk."""

    def __init__(
        self,
        tmp: Path,
        host: str,
        servers: list[str],
        user: str = "fixture-human",
        netns: str | None = None,
        world: World | None = None,
    ) -> None:
        self.world = world or World(tmp / host)
        self.world.env.update(USER=user)
        self.world.mint_human(user)  # this host's human made its mailbox at its terminal before
        if netns is None:
            self.world.env.update(ATTEND_HOST=host)
        self.netns = netns
        self.host = host
        self.user = user
        self.servers = servers
        relay_config(self.world, host, servers)
        self.relay: subprocess.Popen[bytes] | None = None
        self.log = tmp / f"relay-{host}.log"

    def wrap(self, *argv: str) -> list[str]:
        """argv as this host runs it: in its network namespace, under its own node name."""
        if self.netns is None:
            return list(argv)
        line = " ".join(f"'{a}'" for a in argv)
        return [
            "ip",
            "netns",
            "exec",
            self.netns,
            "unshare",
            "--uts",
            "sh",
            "-c",
            f"hostname {self.host} && exec {line}",
        ]

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`attend args…` on this host, as its human."""
        return subprocess.run(
            self.wrap(ATTEND, *args),
            capture_output=True,
            text=True,
            env=self.world.env,
            cwd=str(self.world.tmp),
            timeout=120,
        )

    def start_relay(self) -> None:
        with open(self.log, "ab") as log:
            self.relay = subprocess.Popen(
                self.wrap(ATTEND, "relay"), env=self.world.env, stdout=log, stderr=log, cwd=str(self.world.tmp)
            )
        wait_until(lambda: self.state().startswith("connected"), lambda: f"relay {self.host} up: {self.said()}")

    def state(self) -> str:
        try:
            doc = json.loads((self.world.spool_root / "relay" / "state.json").read_text())
        except (OSError, ValueError):
            return ""
        return str(doc.get("state", "")) if self.relay and doc.get("pid") == self.relay.pid else ""

    def said(self) -> str:
        try:
            return self.log.read_text()[-2000:]
        except OSError:
            return ""

    def stop_relay(self, sig: int = signal.SIGTERM) -> int | None:
        if self.relay is None:
            return None
        if self.relay.poll() is None:
            self.relay.send_signal(sig)
        rc = self.relay.wait(60)
        self.relay = None
        return rc

    def session(self, name: str, channel: str | None = "crew") -> StandIn:
        s = self.world.session(f"proj-{self.host}", name=name)
        r = s.attend("join", channel or f"c{s.pid}")
        assert r.rc == 0, r.stderr
        return s

    def send(self, who: StandIn | None, message: str, to: str | None = None) -> str:
        """A send through the library, as `attend send` does it (fast: chaos sends hundreds), under this
        host's name (what ATTEND_HOST gives the `attend` processes of this host)."""
        saved = layout._HOST
        layout._HOST = self.host
        try:
            return outbound.send(self.world.context(who), message, to=to).sig.id
        finally:
            layout._HOST = saved

    def cli_send(self, who: StandIn, message: str, *args: str) -> str:
        """`attend send` as a child of the stand-in session ``who``: the real command; the new id."""
        r = who.attend("send", "--json", *args, message)
        assert r.rc == 0, r.stderr
        return str(json.loads(r.stdout)["id"])

    def bodies(self, sid: str) -> list[str]:
        """Every body delivered to session ``sid`` (new/, claimed/, cur/): a duplicate shows twice."""
        out = []
        base = self.world.spool_root / "sessions" / sid
        for sub in ("new", "claimed", "cur"):
            with contextlib.suppress(FileNotFoundError):
                for f in sorted((base / sub).iterdir()):
                    out.append(f.read_bytes().partition(b"\n\n")[2].decode())
        return out

    def arrivals(self, sid: str, prefix: str) -> list[int]:
        """The numbers of the bodies ``<prefix><n>`` delivered to ``sid``, in the order they arrived here
        (their local names: a relayed record is named when the relay writes it)."""
        base = self.world.spool_root / "sessions" / sid
        named: list[tuple[str, int]] = []
        for sub in ("new", "claimed", "cur"):
            with contextlib.suppress(FileNotFoundError):
                for f in (base / sub).iterdir():
                    body = f.read_bytes().partition(b"\n\n")[2].decode()
                    if body.startswith(prefix):
                        named.append((f.name.split(":")[0], int(body[len(prefix) :])))
        return [n for _, n in sorted(named)]

    def count(self, sid: str) -> int:
        """How many deliveries ``sid`` has (new/, claimed/, cur/): names only, no reads."""
        base = self.world.spool_root / "sessions" / sid
        n = 0
        for sub in ("new", "claimed", "cur"):
            with contextlib.suppress(FileNotFoundError):
                n += len(os.listdir(base / sub))
        return n

    def human_bodies(self, user: str) -> list[str]:
        out = []
        for sub in ("new", "claimed", "cur"):
            with contextlib.suppress(FileNotFoundError):
                for f in sorted((self.world.spool_root / "humans" / user / sub).iterdir()):
                    out.append(f.read_bytes().partition(b"\n\n")[2].decode())
        return out

    def records(self, sid: str, body: str) -> list[bytes]:
        base = self.world.spool_root / "sessions" / sid
        return [
            f.read_bytes()
            for sub in ("new", "claimed", "cur")
            if (base / sub).is_dir()
            for f in (base / sub).iterdir()
            if f.read_bytes().partition(b"\n\n")[2].decode() == body
        ]

    def outbox(self) -> list[str]:
        with contextlib.suppress(FileNotFoundError):
            return os.listdir(self.world.spool_root / "relay" / "outbox" / "new")
        return []

    def peers(self) -> dict[str, Any]:
        r = self.run("peers", "--json")
        assert r.returncode == 0, r.stderr
        return dict(json.loads(r.stdout))

    def close(self) -> None:
        self.stop_relay(signal.SIGKILL)
        self.world.close()


def provision(
    tmp: Path, servers: list[str], hosts: str = "hosta,hostb", replicas: int = 1, tls_ca: Path | None = None
) -> None:
    admin = World(tmp / "admin")
    relay_config(admin, "admin", servers, user="admin", tls_ca=tls_ca)
    r = admin.attend("relay", "--provision", hosts, "--replicas", str(replicas), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.fixture
def server(tmp_path: Path) -> Iterator[NatsServer]:
    srv = NatsServer(tmp_path)
    srv.start()
    yield srv
    srv.stop(signal.SIGKILL)


@pytest.fixture
def hosts(tmp_path: Path, server: NatsServer) -> Iterator[tuple[Host, Host]]:
    provision(tmp_path, [server.url])
    a = Host(tmp_path, "hosta", [server.url])
    b = Host(tmp_path, "hostb", [server.url], user="bob")
    try:
        a.start_relay()
        b.start_relay()
        yield a, b
    finally:
        a.close()
        b.close()


def crosses(a: Host, b: Host, body: str) -> None:
    """A send to #open on ``a`` reaches a new session on ``b``."""
    sb = b.session(f"R{os.getpid() % 1000}b")
    a.send(a.session(f"R{os.getpid() % 1000}a"), body)
    wait_until(lambda: body in b.bodies(sb.session_id), f"{body!r} on {b.host}")


def sees(h: Host, other: str, name: str) -> bool:
    return any(p["display"] == name and p.get("host") == other for p in h.peers()["peers"])


# ---------------------------------------------------------------------- delivery


def test_every_address_kind_crosses_hosts_exactly_once_and_says_where_it_came_from(
    hosts: tuple[Host, Host],
) -> None:
    a, b = hosts
    sa, sb = a.session("Ada"), b.session("Bea")
    assert b.world.attend("inbox").returncode == 0  # bob used the bus on hostb: presence lists him
    wait_until(lambda: sees(a, "hostb", "Bea"), lambda: f"hosta to see Bea: {a.peers()}")
    wait_until(lambda: sees(b, "hosta", "Ada"), lambda: f"hostb to see Ada: {b.peers()}")
    wait_until(lambda: any(h["user"] == "bob" for h in a.peers().get("humans", [])), "hosta to see bob")

    a.cli_send(sa, "to everyone")
    a.cli_send(sa, "to the crew", "--to", "#crew")
    direct = a.cli_send(sa, "to Bea alone", "--to", "Bea")
    r = a.world.attend("send", "--to", "bob", "to bob, from a human")
    assert r.returncode == 0, r.stderr
    for body in ("to everyone", "to the crew", "to Bea alone"):
        wait_until(lambda body=body: body in b.bodies(sb.session_id), f"{body!r} on hostb")
    wait_until(lambda: "to bob, from a human" in b.human_bodies("bob"), "bob's mail on hostb")

    # A reply on hostb to the relayed direct message lands in Ada's maildir, threaded under the original.
    here = b.records(sb.session_id, "to Bea alone")[0]
    local_id = next(line.split(": ", 1)[1] for line in here.decode().splitlines() if line.startswith("Message-ID"))
    local_id = local_id.strip("<>").split("@")[0]
    r = sb.attend("reply", "--re", local_id, "back to you")
    assert r.rc == 0, r.stderr
    wait_until(lambda: "back to you" in a.bodies(sa.session_id), "the reply on hosta")

    # Settle, then count: each exactly once, none echoed back to its own host.
    time.sleep(1.5)
    got_b = b.bodies(sb.session_id)
    for body in ("to everyone", "to the crew", "to Bea alone"):
        assert got_b.count(body) == 1, got_b
    assert b.human_bodies("bob").count("to bob, from a human") == 1
    assert a.bodies(sa.session_id).count("back to you") == 1
    assert "to everyone" not in a.bodies(sa.session_id)

    # Where it came from, in the record itself: never a local identity.
    text = here.decode()
    assert f"From-Id: {sa.session_id}@hosta" in text and "Relayed-From: hosta" in text
    assert f"Relayed-Id: {direct}" in text and "Ada@hosta" in text
    reply = a.records(sa.session_id, "back to you")[0].decode()
    assert f"Re: {direct}" in reply and f"From-Id: {sb.session_id}@hostb" in reply
    assert not a.outbox() and not b.outbox()


@pytest.mark.anyio
async def test_a_relayed_record_shows_name_at_host_in_the_loop_line_the_drain_the_inbox_and_chat(
    hosts: tuple[Host, Host],
) -> None:
    from attend.chat.app import ChatApp
    from attend.verbs import chat as chat_verb
    from tests.support import Loop

    a, b = hosts
    sa, bea, cid = a.session("Ada"), b.session("Bea"), b.session("Cid")
    loop = Loop(b.world, bea)
    try:
        assert b.world.attend("inbox").returncode == 0  # bob used the bus on hostb: he has a mailbox
        for name in ("Bea", "Cid"):
            wait_until(lambda name=name: sees(a, "hostb", name), f"hosta to see {name}")
        wait_until(lambda: any(h["user"] == "bob" for h in a.peers().get("humans", [])), "hosta to see bob")
        a.cli_send(sa, "for Bea's loop", "--to", "Bea")
        a.cli_send(sa, "for Cid's drain", "--to", "Cid")
        a.cli_send(sa, "for bob's inbox", "--to", "bob")
        a.cli_send(sa, "for everyone", "--to", "#open")

        line = next(
            x
            for x in loop.wait_for(lambda ls: any("for Bea's loop" in x for x in ls), "the loop line")
            if "for Bea's loop" in x
        )
        assert "Ada@hosta" in line, line
        wait_until(lambda: "for Cid's drain" in b.bodies(cid.session_id), "Cid's message on hostb")
        r = cid.attend("inbox", "--drain", "--format", "hook")
        assert r.rc == 0, r.stderr
        reason = json.loads(r.stdout)["reason"]
        assert "Ada@hosta" in reason and "for Cid's drain" in reason, reason
        wait_until(lambda: "for bob's inbox" in b.human_bodies("bob"), "bob's mail on hostb")
        r = b.world.attend("inbox")
        assert r.returncode == 0, r.stderr
        assert "Ada@hosta" in r.stdout and "for bob's inbox" in r.stdout, r.stdout
        wait_until(
            lambda: any(
                b"for everyone" in f.read_bytes() for f in (b.world.spool_root / "rooms" / "open" / "new").iterdir()
            ),
            "#open on hostb",
        )
        ctx = b.world.context()
        app = ChatApp(ctx, chat_verb.run(ctx, chat_verb.ChatRequest(None)), clock=lambda _at: "09:30", live=False)
        async with app.run_test(size=(100, 30)):
            text = app.conversation_text()
            assert app.current.label == "#open" and "for everyone" in text, text
            assert "Ada@hosta" in text, text
    finally:
        loop.stop()


@pytest.fixture
def namespaces(tmp_path: Path) -> Iterator[tuple[str, str, str, str]]:
    """Two network namespaces joined by a veth pair: (ns A, ns B, A's address, B's address)."""
    if os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("unshare") is None:
        pytest.skip("network and UTS namespaces need root, ip(8) and unshare(1); CI runs as root")
    tag = f"{os.getpid() % 100000}"
    ns_a, ns_b, net = f"atta{tag}", f"attb{tag}", f"10.{77 + os.getpid() % 100}.{os.getpid() % 250}"

    def ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True)

    try:
        ip("netns", "add", ns_a)
        ip("netns", "add", ns_b)
        ip("link", "add", f"va{tag}", "type", "veth", "peer", "name", f"vb{tag}")
        ip("link", "set", f"va{tag}", "netns", ns_a)
        ip("link", "set", f"vb{tag}", "netns", ns_b)
        for ns, dev, addr in ((ns_a, f"va{tag}", f"{net}.1"), (ns_b, f"vb{tag}", f"{net}.2")):
            ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            ip("-n", ns, "link", "set", dev, "up")
            ip("-n", ns, "link", "set", "lo", "up")
        yield ns_a, ns_b, f"{net}.1", f"{net}.2"
    finally:
        for ns in (ns_a, ns_b):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_two_machines_in_their_own_network_and_uts_namespaces_talk_over_a_veth_pair(
    tmp_path: Path, namespaces: tuple[str, str, str, str]
) -> None:
    ns_a, ns_b, addr_a, _addr_b = namespaces
    port = free_port()
    srv = NatsServer(tmp_path)
    conf = json.loads(srv.conf.read_text())
    conf["listen"] = f"{addr_a}:{port}"
    srv.conf.write_text(json.dumps(conf))
    proc = subprocess.Popen(["ip", "netns", "exec", ns_a, str(NATS_SERVER), "-c", str(srv.conf)])
    url = f"nats://{addr_a}:{port}"
    a = Host(tmp_path, "hosta", [url], netns=ns_a)
    b = Host(tmp_path, "hostb", [url], user="bob", netns=ns_b)
    try:
        admin = Host(tmp_path, "admin", [url], netns=ns_b)
        relay_config(admin.world, "admin", [url], user="admin")
        wait_until(
            lambda: admin.run("relay", "--provision", "hosta,hostb").returncode == 0, "provisioning across the veth"
        )
        a.start_relay()
        b.start_relay()
        sb = b.world.session("proj-b", name="Nia")
        assert sb.attend("join", "crew").rc == 0
        assert b.run("inbox").returncode == 0  # bob used the bus on hostb
        wait_until(lambda: sees(a, "hostb", "Nia"), lambda: f"hosta to see hostb's Nia: {a.peers()}")
        assert a.run("send", "across the wire").returncode == 0
        r = a.run("send", "--json", "--to", "bob", "to bob across the wire")
        assert r.returncode == 0, r.stderr
        sent = json.loads(r.stdout)["id"]
        assert sent.endswith(".hosta")  # the name this machine's own node name gives
        wait_until(lambda: "across the wire" in b.bodies(sb.session_id), "#open on hostb")
        wait_until(lambda: "to bob across the wire" in b.human_bodies("bob"), "bob's mail on hostb")
        box = b.world.spool_root / "humans" / "bob"
        mail = next(f for d in ("new", "cur") if (box / d).is_dir() for f in (box / d).iterdir())
        local = mail.name.split(":")[0]
        r = b.run("reply", "--to", local, "bob answers")
        assert r.returncode == 0, r.stderr
        wait_until(lambda: "bob answers" in a.human_bodies("fixture-human"), "the reply in hosta's human mailbox")
        time.sleep(1)
        assert b.bodies(sb.session_id).count("across the wire") == 1
        assert b.human_bodies("bob").count("to bob across the wire") == 1
        assert a.human_bodies("fixture-human").count("bob answers") == 1
    finally:
        a.close()
        b.close()
        proc.kill()
        proc.wait(30)


def test_peers_lists_the_other_hosts_sessions_and_a_shared_name_addresses_the_local_one_naming_the_other(
    hosts: tuple[Host, Host],
) -> None:
    a, b = hosts
    sa = a.session("Sam")
    b.session("Sam")
    wait_until(lambda: sees(a, "hostb", "Sam"), lambda: f"hosta to list hostb's Sam: {a.peers()}")
    wait_until(lambda: sees(b, "hosta", "Sam"), lambda: f"hostb to list hosta's Sam: {b.peers()}")
    table = a.world.attend("peers").stdout
    assert "Sam@hostb" in table, table

    # Local names first: another host's presence cannot take a name from a session of this host.
    r = a.world.attend("send", "--json", "--to", "Sam", "the one here")
    assert r.returncode == 0, r.stdout + r.stderr
    sent = json.loads(r.stdout)
    assert sent["room"] == f"d-{sa.session_id}"
    assert any("Sam@hostb" in w for w in sent["warnings"]), sent  # and the sender is told how to reach the other
    r = sa.attend("send", "--to", "Sam@hostb", "this one")
    assert r.rc == 0, r.stderr


def test_a_stopped_relay_leaves_its_sessions_to_fade_from_the_others_peers(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    b.session("Fay")
    wait_until(lambda: sees(a, "hostb", "Fay"), "hosta to see Fay")
    b.stop_relay(signal.SIGKILL)  # no clean withdrawal: the TTL ends it (a 2.9 server sends no expiry)
    wait_until(lambda: not sees(a, "hostb", "Fay"), "Fay to fade from hosta's peers")


def test_the_presence_watch_runs_no_polling_task_and_still_follows_a_burst_past_the_flow_control_window(
    tmp_path: Path, server: NatsServer
) -> None:
    """nats-py answers a KV watch's flow control from a task that wakes four times a second for the
    watch's life: most of an idle relay's CPU. The relay stops it; the client still answers a flow
    control message as it comes, or from a stalled consumer's heartbeat, so a burst far past the
    server's window (300 entries of 2 KiB, 600 KiB) all arrives."""
    from attend.relay.daemon import quiet_flow_control

    provision(tmp_path, [server.url])

    async def act(nc: Any, _errors: list[str]) -> tuple[bool, bool, int]:
        kv = await nc.jetstream(timeout=5).key_value(subjects.BUCKET)
        watcher = await kv.watchall()
        jsi = watcher._sub._sub._jsi
        had = jsi._fctask is not None
        task = jsi._fctask
        quiet_flow_control(watcher)
        await asyncio.sleep(0)
        stopped = jsi._fctask is None and (task is None or task.cancelled() or task.done())
        seen: set[str] = set()
        for i in range(300):
            await kv.put(f"hosta.burst{i}", b"x" * 2048)

        async def follow() -> None:
            async for entry in watcher:
                if entry is not None and entry.key.startswith("hosta.burst"):
                    seen.add(entry.key)
                    if len(seen) == 300:
                        return

        await asyncio.wait_for(follow(), 120)
        await watcher.stop()
        return had, stopped, len(seen)

    had, stopped, seen = _as_host(server.url, "hosta", act)
    assert had, "nats-py no longer runs a flow-control task beside a watch: quiet_flow_control is not needed"
    assert stopped
    assert seen == 300


def test_a_lease_crosses_hosts_keyed_by_the_repository_and_flags_an_edit_there(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    url = "https://owner:token@example.com/team/app.git"  # the credentials are never published
    kay = a.session("Kay")
    bo = b.session("Bo")
    for s in (kay, bo):  # two clones of one repository, at different paths
        subprocess.run(["git", "init", "-q", str(s.cwd)], check=True)
        subprocess.run(["git", "-C", str(s.cwd), "remote", "add", "origin", url], check=True)
        (s.cwd / "src" / "api").mkdir(parents=True)
    leased = kay.attend("lease", "src/api", "--reason", "routes")
    assert leased.rc == 0, leased.stderr

    def listed() -> list[dict[str, Any]]:
        return list(json.loads(b.run("leases", "--json").stdout)["leases"])

    wait_until(lambda: listed(), lambda: f"hostb to list hosta's lease: {b.said()}")
    (x,) = listed()
    assert (x["holder"], x["host"], x["glob"], x["repo"]) == (
        "Kay@hosta",
        "hosta",
        "src/api",
        "url:https://example.com/team/app",
    )
    assert "token" not in (b.world.spool_root / "relay" / "peers.json").read_text()
    edit = {
        "session_id": bo.session_id,
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "cwd": str(bo.cwd),
        "tool_input": {"file_path": str(bo.cwd / "src" / "api" / "x.py"), "content": ""},
    }
    r = bo.attend("hook", "edit", stdin=json.dumps(edit))
    line = json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "src/api/x.py is leased on hosta by Kay@hosta" in line, line


class Proxy:
    """A loopback TCP hop between one host's relay and the server that can hold what the relay sends and
    let it through in parts, so a test can land a change on the server in the middle of one window of
    publishes. It also counts the server's no-responders answers (a publish the stream did not take)."""

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.lock = threading.Lock()
        self.holding = False
        self.held = bytearray()
        self.refusals = 0  # "NATS/1.0 503" answers seen on their way back
        self.to_server: socket.socket | None = None
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = self.listener.accept()
                server = socket.create_connection(("127.0.0.1", self.upstream))
                with self.lock:
                    self.to_server = server
                threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
                threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, outbound: bool) -> None:
        tail = b""
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                with self.lock:
                    if outbound and self.holding:
                        self.held += data
                        continue
                    if not outbound:
                        self.refusals += (tail + data).count(b"NATS/1.0 503") - tail.count(b"NATS/1.0 503")
                        tail = data[-16:]
                    dst.sendall(data)
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def hold(self) -> None:
        with self.lock:
            self.holding = True

    def release(self, upto: int | None = None) -> None:
        """Let ``upto`` held bytes through (all, and stop holding, by default)."""
        with self.lock:
            n = len(self.held) if upto is None else upto
            if self.to_server is not None:
                self.to_server.sendall(bytes(self.held[:n]))
            del self.held[:n]
            if upto is None:
                self.holding = False

    def close(self) -> None:
        self.listener.close()


def _stream_takes(url: str, subjects_now: list[str]) -> None:
    """As an admin: the stream takes these subjects from now on (the relay's, or none of them)."""
    import dataclasses

    async def act(nc: Any, _errors: list[str]) -> None:
        js = nc.jetstream(timeout=5)
        config = (await js.stream_info(subjects.STREAM)).config
        await js.update_stream(dataclasses.replace(config, subjects=subjects_now))

    _as_host(url, "admin", act)


def test_arrivals_keep_each_senders_order_when_the_stream_comes_back_mid_window(
    tmp_path: Path, server: NatsServer
) -> None:
    """The stream refuses hosta's publishes for a while and takes them again while a window of them is on
    its way: the ones it refused must not land after the ones it took, so hostb sees hosta's order."""
    provision(tmp_path, [server.url])
    proxy = Proxy(server.port)
    a = Host(tmp_path, "hosta", [proxy.url])
    b = Host(tmp_path, "hostb", [server.url], user="bob")
    try:
        a.start_relay()
        b.start_relay()
        sa, sb = a.session("Ord"), b.session("Eve")
        a.send(sa, "ord 0")
        wait_until(lambda: b.arrivals(sb.session_id, "ord ") == [0], "the first message on hostb")
        _stream_takes(server.url, ["attend-paused.>"])  # publishes to attend.> find no stream now
        n = 200
        for i in range(1, n):
            a.send(sa, f"ord {i}")
        wait_until(lambda: proxy.refusals > 0, "hosta's relay to find the stream gone")
        proxy.hold()
        mark = b"HPUB attend.from.hosta.to.all.open"
        wait_until(lambda: mark in proxy.held, "hosta's relay to publish again while the proxy holds it", 30)
        time.sleep(0.3)  # the rest of the write that carried it
        with proxy.lock:
            starts = [i for i in range(len(proxy.held)) if proxy.held.startswith(mark, i)]
        before = proxy.refusals
        half = starts[len(starts) // 2] if len(starts) > 1 else starts[0]
        proxy.release(half)  # the first half of the window reaches the stream while it refuses
        wait_until(lambda: proxy.refusals - before >= len(starts) // 2, "the stream to refuse the first half")
        _stream_takes(server.url, [subjects.SUBJECTS])
        proxy.release()  # and the rest once it takes them again
        wait_until(
            lambda: len(b.arrivals(sb.session_id, "ord ")) >= n, lambda: f"all of hosta's on hostb; {a.said()}", 120
        )
        got = b.arrivals(sb.session_id, "ord ")
        assert got == list(range(n)), f"out of order on hostb: {[x for i, x in enumerate(got) if x != i][:10]}"
        assert not a.outbox()
    finally:
        a.close()
        b.close()
        proxy.close()


# ---------------------------------------------------------------------- chaos


class Flow:
    """Messages both ways in the background while the test disturbs the bus: pair i is ``a2b i`` from
    a's session and ``b2a i`` from b's, sent through the library's send (the real send path: the rooms,
    the outbox, fsync on), paced over ``seconds`` so the flow is still going when each disturbance
    ends. One thread sends both (Host.send sets the process's host name for each send)."""

    def __init__(self, a: Host, sa: StandIn, b: Host, sb: StandIn, n: int, seconds: float) -> None:
        self.hosts = (a, sa, b, sb)
        self.n = n
        self.seconds = seconds
        self.sent = 0
        self.failed: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        a, sa, b, sb = self.hosts
        start = time.monotonic()
        try:
            for i in range(self.n):
                time.sleep(max(0.0, start + i * self.seconds / self.n - time.monotonic()))
                a.send(sa, f"a2b {i}")
                b.send(sb, f"b2a {i}")
                self.sent = i + 1
        except BaseException as e:  # raised in the test's thread
            self.failed = e

    def reach(self, pairs: int) -> None:
        """Wait until ``pairs`` pairs are sent (the sender goes on meanwhile)."""
        settle(lambda: self.failed is not None or self.sent >= pairs, f"{pairs} pairs sent", 600)
        if self.failed is not None:
            raise self.failed

    def check(self) -> None:
        """Every message arrived exactly once and in its sender's order; both outboxes empty."""
        self.reach(self.n)
        self.thread.join(60)
        a, sa, b, sb = self.hosts
        for h, sid, prefix, other in ((b, sb.session_id, "a2b ", a), (a, sa.session_id, "b2a ", b)):
            settle(lambda h=h, sid=sid: h.count(sid) >= self.n, lambda h=h, o=other: f"{h.host}'s arrivals; {o.said()}")
            settle(
                lambda h=h, sid=sid, prefix=prefix: set(h.arrivals(sid, prefix)) >= set(range(self.n)),
                lambda h=h, o=other: f"every one of {o.host}'s on {h.host}; {o.said()}",
            )
        time.sleep(2)  # a late duplicate would land now
        for h, sid, prefix in ((b, sb.session_id, "a2b "), (a, sa.session_id, "b2a ")):
            got = h.arrivals(sid, prefix)
            assert sorted(got) == list(range(self.n)), f"lost or duplicated on {h.host}"
            assert got == list(range(self.n)), (
                f"out of order on {h.host}: {[x for i, x in enumerate(got) if x != i][:8]}"
            )
        assert not a.outbox() and not b.outbox()


def settle(check: Any, what: Any, timeout: float = 300) -> None:
    """wait_until at a slower pace: these checks list thousands of files."""
    end = time.monotonic() + timeout
    while not check():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what() if callable(what) else what}")
        time.sleep(0.25)


@pytest.mark.slow  # chaos: a minute and more, mostly waiting; the whole suite (.ci/run) runs it
def test_kill_9_of_either_relay_while_messages_flow_both_ways_loses_duplicates_and_reorders_nothing(
    hosts: tuple[Host, Host],
) -> None:
    a, b = hosts
    sa, sb = a.session("Kit"), b.session("Lee")
    flow = Flow(a, sa, b, sb, CHAOS_COUNT, CHAOS_SECONDS)
    for share, victim in ((4, a), (2, b), (4 / 3, a)):
        flow.reach(int(CHAOS_COUNT / share))
        victim.stop_relay(signal.SIGKILL)  # mid-flow: the sender goes on while it is down and starting
        victim.start_relay()
    flow.check()


@pytest.mark.slow  # chaos: a minute and more, mostly waiting; the whole suite (.ci/run) runs it
def test_a_server_restart_and_a_30_s_outage_while_messages_flow_both_ways_lose_duplicate_and_reorder_nothing(
    hosts: tuple[Host, Host], server: NatsServer
) -> None:
    a, b = hosts
    sa, sb = a.session("Ora"), b.session("Pia")
    flow = Flow(a, sa, b, sb, CHAOS_COUNT, CHAOS_SECONDS)
    flow.reach(CHAOS_COUNT // 4)
    server.stop(signal.SIGKILL)
    server.start()
    flow.reach(CHAOS_COUNT // 3)
    server.stop(signal.SIGTERM)
    sent = flow.sent
    deadline = time.monotonic() + OUTAGE
    while time.monotonic() < deadline:  # the sender goes on while the server is away: the outboxes grow
        time.sleep(0.2)
    assert flow.sent - sent >= CHAOS_COUNT // 4, "messages flowed through the outage"
    assert len(a.outbox()) > 0 and len(b.outbox()) > 0, "what was sent meanwhile waits in each outbox"
    server.start()
    flow.check()
    # Presence comes back after the restarts: each host lists the other's session again.
    wait_until(lambda: sees(a, "hostb", "Pia"), lambda: f"hosta to see Pia again: {a.peers()}")
    wait_until(lambda: sees(b, "hosta", "Ora"), lambda: f"hostb to see Ora again: {b.peers()}")


@pytest.mark.slow  # chaos: minutes of CPU; the whole suite (.ci/run) runs it
def test_a_three_node_cluster_losing_its_stream_leader_keeps_the_bus_working(tmp_path: Path) -> None:
    cports = [free_port() for _ in range(3)]
    nodes = [NatsServer(tmp_path, f"n{i + 1}", routes=cports, cluster_port=cports[i]) for i in range(3)]
    for n in nodes:
        n.start(wait=False)
    a = b = None
    try:
        for n in nodes:
            wait_until(n.listening, f"{n.name} to listen")
        urls = [n.url for n in nodes]
        admin = World(tmp_path / "admin")
        relay_config(admin, "admin", urls, user="admin")
        wait_until(lambda: _provisioned(admin), "the cluster to elect a leader and take the stream", 120)
        a, b = Host(tmp_path, "hosta", urls), Host(tmp_path, "hostb", urls)
        a.start_relay()
        b.start_relay()
        sa, sb = a.session("Quin"), b.session("Rue")
        a.send(sa, "before")
        wait_until(lambda: "before" in b.bodies(sb.session_id), "the first message through the cluster")
        leader = _stream_leader(urls)
        victim = next(n for n in nodes if n.name == leader)
        victim.stop(signal.SIGKILL)  # the node that orders the stream's writes, not just any node
        for i in range(20):
            a.send(sa, f"after {i}")
            b.send(sb, f"back {i}")
        want_b = {"before", *(f"after {i}" for i in range(20))}
        wait_until(lambda: want_b <= set(b.bodies(sb.session_id)), "hostb to get every message with a node down", 180)
        want_a = {f"back {i}" for i in range(20)}
        wait_until(lambda: want_a <= set(a.bodies(sa.session_id)), "hosta to get every message with a node down", 180)
        time.sleep(2)
        assert sorted(x for x in b.bodies(sb.session_id) if x in want_b) == sorted(want_b)
        assert sorted(x for x in a.bodies(sa.session_id) if x in want_a) == sorted(want_a)
        assert _stream_leader([n.url for n in nodes if n is not victim]) not in ("", leader)
    finally:
        for h in (a, b):
            if h is not None:
                h.close()
        for n in nodes:
            n.stop(signal.SIGKILL)


def _stream_leader(urls: list[str]) -> str:
    """The server name of the stream's leader, as the cluster reports it ("" while it elects one)."""

    async def leader(nc: Any, _errors: list[str]) -> str:
        info = await nc.jetstream(timeout=5).stream_info(subjects.STREAM)
        return str(info.cluster.leader or "") if info.cluster else ""

    for url in urls:
        with contextlib.suppress(Exception):
            return str(_as_host(url, "admin", leader))
    return ""


def _provisioned(admin: World) -> bool:
    """One try at provisioning (a cluster still electing its leader refuses; the caller tries again)."""
    r = admin.attend("relay", "--provision", "hosta,hostb", "--replicas", "3", timeout=120)
    return r.returncode == 0


# ---------------------------------------------------------------------- security


def _as_host(url: str, host: str, act: Any) -> Any:
    """Run ``act(nc, errors)`` connected as ``host`` with its own credentials; what it returns."""
    import nats

    async def main() -> Any:
        errors: list[str] = []

        async def on_error(e: Exception) -> None:
            errors.append(str(e))

        nc = await nats.connect(
            [url], user=host, password=PASSWORDS[host], inbox_prefix=subjects.inbox_prefix(host), error_cb=on_error
        )
        try:
            return await act(nc, errors)
        finally:
            await nc.close()

    return asyncio.run(main())


def test_host_b_cannot_publish_as_a_read_or_ack_as_consumer_touch_its_presence_or_purge_the_stream(
    hosts: tuple[Host, Host], server: NatsServer
) -> None:
    a, _b = hosts
    sa = a.session("Val")
    wait_until(lambda: f"hosta.s.{sa.session_id}" in _presence_keys(server.url), "hosta's presence key")

    async def attempts(nc: Any, errors: list[str]) -> dict[str, bool]:
        js = nc.jetstream(timeout=2)
        out: dict[str, bool] = {}
        before = (await js.stream_info(subjects.STREAM)).state.messages
        try:
            await js.publish("attend.from.hosta.to.all.open", b"spoof", headers={"Nats-Msg-Id": "x"}, timeout=2)
            out["publish as hosta"] = True
        except Exception:
            out["publish as hosta"] = False
        out["stream unchanged"] = (await js.stream_info(subjects.STREAM)).state.messages == before
        try:
            psub = await js.pull_subscribe_bind(subjects.direct("hosta"), subjects.STREAM)
            await psub.fetch(1, timeout=2)
            out["read hosta's consumer"] = True
        except Exception:
            out["read hosta's consumer"] = False
        kv = await js.key_value(subjects.BUCKET)
        key = f"hosta.s.{sa.session_id}"
        try:
            await kv.delete(key)
            out["delete hosta's presence"] = True
        except Exception:
            out["delete hosta's presence"] = False
        try:
            await kv.put("hosta.s.forged", b"{}")
            out["put hosta's presence"] = True
        except Exception:
            out["put hosta's presence"] = False
        # An acknowledgement on hosta's consumer (as one of its deliveries would be acked): refused.
        await nc.publish(f"$JS.ACK.{subjects.STREAM}.{subjects.direct('hosta')}.1.{before}.1.0.0", b"+ACK")

        def ack_refused() -> bool:
            return any(f"$js.ack.{subjects.STREAM}.hosta-direct".lower() in e.lower() for e in errors)

        # The server's word comes asynchronously: wait for it (a loaded machine), up to a deadline.
        deadline = time.monotonic() + 15
        while not ack_refused() and time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                await nc.flush(2)
            await asyncio.sleep(0.05)
        out["ack hosta's records"] = not ack_refused()
        try:
            await js.purge_stream(subjects.STREAM)
            out["purge the stream"] = True
        except Exception:
            out["purge the stream"] = False
        try:
            await js.delete_consumer(subjects.STREAM, subjects.direct("hosta"))
            out["delete hosta's consumer"] = True
        except Exception:
            out["delete hosta's consumer"] = False
        out["stream still whole"] = (await js.stream_info(subjects.STREAM)).state.messages == before
        await nc.flush(2)
        said = " ".join(errors).lower()
        out["each refused by the server"] = all(
            f'permissions violation for publish to "{subject}"'.lower() in said
            for subject in (
                "attend.from.hosta.to.all.open",
                f"$JS.API.CONSUMER.MSG.NEXT.{subjects.STREAM}.hosta-direct",
                f"$KV.{subjects.BUCKET}.hosta.s.{sa.session_id}",
                f"$JS.API.STREAM.PURGE.{subjects.STREAM}",
                f"$JS.API.CONSUMER.DELETE.{subjects.STREAM}.hosta-direct",
            )
        )
        return out

    got = _as_host(server.url, "hostb", attempts)
    assert got == {
        "publish as hosta": False,
        "stream unchanged": True,
        "read hosta's consumer": False,
        "delete hosta's presence": False,
        "put hosta's presence": False,
        "ack hosta's records": False,
        "purge the stream": False,
        "delete hosta's consumer": False,
        "stream still whole": True,
        "each refused by the server": True,
    }
    assert f"hosta.s.{sa.session_id}" in _presence_keys(server.url), "hosta's presence is still there"


def _presence_keys(url: str) -> list[str]:
    async def keys(nc: Any, _errors: list[str]) -> list[str]:
        kv = await nc.jetstream(timeout=2).key_value(subjects.BUCKET)
        try:
            return [k for k in await kv.keys() if k.startswith("hosta.")]
        except Exception:
            return []

    return list(_as_host(url, "admin", keys))


def test_a_record_that_lies_about_its_host_is_refused_and_never_written(
    hosts: tuple[Host, Host], server: NatsServer
) -> None:
    a, b = hosts
    sa = a.session("Wes")
    forged = a.world.tmp / "forged"
    # A real record of hostb's, re-labelled as hosta's: hostb may publish it only under its own subject.
    name = "1700000000.M000001P1Q1R0badf00d.hosta"
    record = (
        f"Attend-Version: 2\nMessage-ID: <{name}@attend.invalid>\nDate: Tue, 14 Nov 2023 22:13:20 +0000\n"
        "From: Mallory <mallory@attend.invalid>\nTo: #open <open@room.attend.invalid>\nSubject: hi\n"
        "From-Kind: agent\nFrom-Id: mallory\nAttend-To: *\nRoom: open\nOrigin: /x\n\nforged body"
    ).encode()
    forged.write_bytes(record)

    async def publish(nc: Any, _errors: list[str]) -> bool:
        ack = await nc.jetstream(timeout=3).publish(
            "attend.from.hostb.to.all.open", record, headers={"Nats-Msg-Id": name, "Attend-From-Host": "hostb"}
        )
        return bool(ack.seq)

    assert _as_host(server.url, "hostb", publish)
    a.send(sa, "a later real one")  # the relay has handled the forged one before this one's own broadcast
    b.send(b.session("Xan"), "real from hostb")
    wait_until(lambda: "real from hostb" in a.bodies(sa.session_id), "a real record after the forged one")
    # Nor may another host mint a mailbox here for a human who never used the bus on this host.
    mint = name.replace("0badf00d.hosta", "0badcafe.hostb")
    record2 = (
        record.decode()
        .replace(name, mint)
        .replace("Room: open", "Room: h-nobody@hosta")
        .replace("Attend-To: *", "Attend-To: nobody@hosta")
    ).encode()

    async def mint_mailbox(nc: Any, _errors: list[str]) -> bool:
        ack = await nc.jetstream(timeout=3).publish(
            "attend.from.hostb.to.hosta.human", record2, headers={"Nats-Msg-Id": mint, "Attend-From-Host": "hostb"}
        )
        return bool(ack.seq)

    assert _as_host(server.url, "hostb", mint_mailbox)
    b.send(b.session("Yan"), "second real from hostb")
    wait_until(lambda: "second real from hostb" in a.bodies(sa.session_id), "a real record after the mint")
    assert not (a.world.spool_root / "humans" / "nobody").exists()
    assert "forged body" not in a.bodies(sa.session_id)
    rooms_open = a.world.spool_root / "rooms" / "open" / "new"
    assert not any(b"forged body" in f.read_bytes() for f in rooms_open.iterdir())
    assert "refused" in a.said()


# ---------------------------------------------------------------------- nkeys, .creds and TLS


class TlsBus(NamedTuple):
    server: NatsServer
    ca: Path  # the CA that signed the server's certificate
    seeds: dict[str, str]  # each host's nkey seed (the server knows its public key)


@pytest.fixture
def tls_bus(tmp_path: Path) -> Iterator[TlsBus]:
    """A server that speaks only TLS, under a certificate of the test's own CA, and knows hosta and
    hostb by their public nkeys: relay.md's own example."""
    ca_key, ca_cert, ca = make_ca(tmp_path / "pki", "bus-ca")
    keys = {host: new_nkey() for host in ("hosta", "hostb")}
    srv = NatsServer(
        tmp_path,
        nkey_users={host: public for host, (_, public) in keys.items()},
        tls=server_certificate(tmp_path / "pki", ca_key, ca_cert),
    )
    srv.start()
    try:
        provision(tmp_path, [srv.url], tls_ca=ca)
        yield TlsBus(srv, ca, {host: seed for host, (seed, _) in keys.items()})
    finally:
        srv.stop(signal.SIGKILL)


def test_hosts_with_an_nkey_over_tls_pass_check_and_carry_a_message(tmp_path: Path, tls_bus: TlsBus) -> None:
    url = tls_bus.server.url
    assert url.startswith("tls://")
    a, b = Host(tmp_path, "hosta", [url]), Host(tmp_path, "hostb", [url], user="bob")
    try:
        for h in (a, b):
            key_config(h.world, [url], "nkey_seed", tls_bus.seeds[h.host] + "\n", tls_bus.ca)
        r = a.world.attend("relay", "--check")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "problem:" not in r.stdout and "relay for host hosta: ok" in r.stdout, r.stdout
        a.start_relay()
        b.start_relay()
        crosses(a, b, "signed with an nkey, over TLS")
    finally:
        a.close()
        b.close()


def test_a_wrong_ca_or_a_seed_the_server_does_not_know_is_one_line_in_check(tmp_path: Path, tls_bus: TlsBus) -> None:
    url = tls_bus.server.url
    h = Host(tmp_path, "hosta", [url])
    try:
        _, _, other_ca = make_ca(tmp_path / "elsewhere", "other-ca")
        key_config(h.world, [url], "nkey_seed", tls_bus.seeds["hosta"], other_ca)
        r = h.world.attend("relay", "--check")
        assert r.returncode == 1, r.stdout + r.stderr
        lines = r.stdout.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"problem: cannot connect to {url}: "), lines
        assert "CERTIFICATE_VERIFY_FAILED" in lines[0], lines
        r = h.run("relay")  # the relay itself: no retry makes the CA vouch for the server; exit 2, one line
        assert r.returncode == 2, r.stdout + r.stderr
        assert len(r.stderr.splitlines()) == 1 and "relay.tls_ca" in r.stderr, r.stderr
        assert not (h.world.spool_root / "relay" / "enabled").exists(), "its sends are not queued"

        key_config(h.world, [url], "nkey_seed", new_nkey()[0], tls_bus.ca)  # a seed of no user the server has
        r = h.world.attend("relay", "--check")
        assert r.returncode == 1, r.stdout + r.stderr
        lines = r.stdout.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"problem: cannot connect to {url}: "), lines
        assert "authorization violation" in lines[0].lower(), lines
        r = h.run("relay")  # the relay itself: refused at connect, exit 2, one line
        assert r.returncode == 2, r.stdout + r.stderr
        assert len(r.stderr.splitlines()) == 1 and "the server refused hosta" in r.stderr, r.stderr
    finally:
        h.close()


def test_check_with_another_hosts_key_says_so_at_once_not_that_the_stream_is_missing(
    tmp_path: Path, tls_bus: TlsBus
) -> None:
    """hostb's config with hosta's seed: the server knows the key, and refuses it hostb's inbox, where
    every answer would come back. One line naming that, before any step waits for an answer."""
    url = tls_bus.server.url
    h = Host(tmp_path, "hostb", [url])
    try:
        key_config(h.world, [url], "nkey_seed", tls_bus.seeds["hosta"], tls_bus.ca)
        r = h.world.attend("relay", "--check")
        assert r.returncode == 1, r.stdout + r.stderr
        lines = r.stdout.splitlines()
        assert len(lines) == 1, lines
        assert "refused host hostb's replies (_INBOX_hostb.>)" in lines[0] and "another host's?" in lines[0]
        assert "missing" not in r.stdout and "stream" not in r.stdout, r.stdout
    finally:
        h.close()


def test_a_creds_file_is_read_and_a_server_without_operator_jwts_refuses_it_in_one_line(
    tmp_path: Path, tls_bus: TlsBus
) -> None:
    """A .creds file carries a user JWT that only a server in operator mode (accounts resolved from
    JWTs) accepts; this server knows its users by nkey, as relay.md configures one. So the file is read
    and sent (its seed signs the server's nonce) and the server's refusal is one line, exit 2."""
    url = tls_bus.server.url
    h = Host(tmp_path, "hosta", [url])
    jwt = "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.eyJzdWIiOiJVIn0.c2ln"  # no operator signed it
    creds = (
        f"-----BEGIN NATS USER JWT-----\n{jwt}\n------END NATS USER JWT------\n\n"
        f"-----BEGIN USER NKEY SEED-----\n{tls_bus.seeds['hosta']}\n------END USER NKEY SEED------\n"
    )
    try:
        key_config(h.world, [url], "creds", creds, tls_bus.ca)
        r = h.world.attend("relay", "--check")
        assert r.returncode == 1, r.stdout + r.stderr
        lines = r.stdout.splitlines()
        assert len(lines) == 1 and "authorization violation" in lines[0].lower(), lines
        r = h.run("relay")
        assert r.returncode == 2, r.stdout + r.stderr
        assert len(r.stderr.splitlines()) == 1 and "the server refused hosta" in r.stderr, r.stderr
    finally:
        h.close()


def _server_version() -> tuple[int, ...]:
    out = subprocess.run([str(NATS_SERVER), "--version"], capture_output=True, text=True).stdout
    return tuple(int(x) for x in out.strip().rpartition("v")[2].split(".")[:3])


def test_check_reports_each_problem_on_one_line(tmp_path: Path, server: NatsServer) -> None:
    h = Host(tmp_path, "hosta", [server.url])
    try:
        r = h.world.attend("relay", "--check")  # nothing provisioned yet
        assert r.returncode == 1, r.stdout + r.stderr
        lines = r.stdout.splitlines()
        assert [line.split(":", 2)[1].strip() for line in lines if line.startswith("problem:")] == [
            "stream ATTEND",
            "consumer hosta-direct",
            "consumer hosta-bcast",
            "presence bucket attend-presence",
        ], lines
        version = _server_version()
        notes = [line for line in lines if line.startswith("note:")]
        if version < (2, 10):  # Debian's 2.9.10, as CI runs: what it lacks is said, with its version
            assert notes == [
                f"note: server {'.'.join(map(str, version))}: older than 2.10" + notes[0].split("2.10", 1)[1]
            ]
            assert "one filter per consumer" in notes[0]
        else:
            assert notes == [], notes
        provision(tmp_path, [server.url])
        r = h.world.attend("relay", "--check")
        assert r.returncode == 0, r.stdout + r.stderr
        assert "relay for host hosta: ok" in r.stdout
        relay_config(h.world, "hosta", [server.url], user="hostb")  # the wrong identity for this host
        r = h.world.attend("relay", "--check")
        problems = [line for line in r.stdout.splitlines() if line.startswith("problem:")]
        assert r.returncode == 1, r.stdout
        # One line, before any step waits on an answer that could never come back to this host's inbox.
        assert problems == [
            "problem: the server refused host hosta's replies (_INBOX_hosta.>): these credentials are not host "
            "hosta's (another host's?); use the ones provisioned for hosta, or set relay.host to the host they "
            "are for"
        ], problems
    finally:
        h.close()


def test_check_names_each_permission_the_server_withholds_on_one_line(tmp_path: Path) -> None:
    withheld = [
        "$JS.API.CONSUMER.MSG.NEXT.ATTEND.hosta-bcast",
        "$JS.ACK.ATTEND.hosta-direct.>",
        "$KV.attend-presence.hosta.>",
    ]
    perms = subjects.permissions("hosta")
    perms["publish"]["allow"] = [p for p in perms["publish"]["allow"] if p not in withheld]
    srv = NatsServer(tmp_path, permissions={"hosta": perms})
    srv.start()
    h = Host(tmp_path, "hosta", [srv.url])
    try:
        provision(tmp_path, [srv.url])
        r = h.world.attend("relay", "--check")
        assert r.returncode == 1, r.stdout + r.stderr
        problems = [line for line in r.stdout.splitlines() if line.startswith("problem:")]
        assert [p.split(": the server refused", 1)[0] for p in problems] == [
            "problem: cannot acknowledge hosta-direct's records",
            "problem: cannot pull from consumer hosta-bcast",
            "problem: cannot put this host's presence (hosta.* in attend-presence)",
        ], problems
        assert all("permissions violation" in p.lower() for p in problems), problems
    finally:
        h.close()
        srv.stop(signal.SIGKILL)


def _remake_consumer(url: str, durable: str, **config: Any) -> str | None:
    """As an admin: ``durable`` made again with this config; the filter the server says it has."""
    from nats.js.api import AckPolicy, ConsumerConfig

    async def act(nc: Any, _errors: list[str]) -> str | None:
        js = nc.jetstream(timeout=5)
        await js.delete_consumer(subjects.STREAM, durable)
        await js.add_consumer(
            subjects.STREAM, ConsumerConfig(durable_name=durable, ack_policy=AckPolicy.EXPLICIT, **config)
        )
        return (await js.consumer_info(subjects.STREAM, durable)).config.filter_subject

    return _as_host(url, "admin", act)  # type: ignore[no-any-return]


def test_check_and_the_relay_refuse_a_consumer_whose_filter_is_widened_or_wrong(
    tmp_path: Path, server: NatsServer
) -> None:
    provision(tmp_path, [server.url])
    h = Host(tmp_path, "hosta", [server.url])
    try:
        # A list of filters: 2.9 drops it and makes a consumer that delivers every host's records.
        got = _remake_consumer(server.url, "hosta-direct", filter_subjects=["attend.from.*.to.hosta.>", "attend.x"])
        if _server_version() < (2, 10):
            assert not got, f"a 2.9 server widened the list to no filter, not {got!r}"
        _remake_consumer(server.url, "hosta-bcast", filter_subject="attend.>")
        r = h.world.attend("relay", "--check")
        assert r.returncode == 1, r.stdout + r.stderr
        problems = [line for line in r.stdout.splitlines() if line.startswith("problem:")]
        assert len(problems) == 2, problems
        assert problems[0].startswith(f"problem: consumer hosta-direct filters {got!r}, not 'attend.from.*.to.hosta.>'")
        assert problems[1].startswith("problem: consumer hosta-bcast filters 'attend.>', not 'attend.from.*.to.all.>'")
        r = h.run("relay")  # the relay itself will not start on it
        assert r.returncode == 1, r.stdout + r.stderr
        assert "consumer hosta-direct filters" in r.stderr and "deliver others' records" in r.stderr, r.stderr
        assert not any((h.world.spool_root / "relay" / "seen").iterdir()), "nothing was taken from it"
    finally:
        h.close()


def test_a_second_relay_on_the_same_spool_exits_1_and_the_first_goes_on(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    r = a.run("relay")
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stderr.strip().splitlines() == [f"attend relay: another relay already serves {a.world.spool_root}"]
    assert a.relay is not None and a.relay.poll() is None and a.state() == "connected"
    sb = b.session("Ula")
    a.send(a.session("Tam"), "still carried")
    wait_until(lambda: "still carried" in b.bodies(sb.session_id), "a message through the first relay")


def test_a_relay_of_another_spool_under_a_host_name_already_live_is_refused_and_a_restart_is_not(
    tmp_path: Path, hosts: tuple[Host, Host]
) -> None:
    """Spools are per OS user: a second user on hosta's machine who left ATTEND_HOST alone would relay
    as hosta too. Its relay is refused while hosta's presence is live; hosta's own relay, killed and
    started again at once, is not."""
    a, b = hosts
    wait_until(lambda: any(k == "hosta.relay" for k in _presence_keys(a.servers[0])), "hosta's relay key")
    other = Host(tmp_path, "hosta", a.servers, user="carol", world=World(tmp_path / "hosta-carol"))
    try:
        r = other.run("relay")
        assert r.returncode == 1, r.stdout + r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "another relay already publishes as host hosta" in lines[0], lines
        assert "ATTEND_HOST" in lines[0], lines
        assert not (other.world.spool_root / "relay" / "enabled").exists(), "its sends are not queued"
        a.stop_relay(signal.SIGKILL)  # its presence stays in the bucket until the TTL
        a.start_relay()
        crosses(a, b, "after the restart")
    finally:
        other.close()


def test_the_relay_exits_2_when_the_server_refuses_its_credentials_or_its_permissions(
    tmp_path: Path, server: NatsServer
) -> None:
    provision(tmp_path, [server.url])
    h = Host(tmp_path, "hosta", [server.url])
    try:
        (Path(layout.config_root(h.world.env)) / "relay.password").write_text("not-the-password\n")
        r = h.run("relay")  # refused at connect: trying again cannot help
        assert r.returncode == 2, r.stdout + r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "the server refused hosta" in lines[0] and "Authorization" in lines[0], lines
        relay_config(h.world, "hosta", [server.url], user="hostb")  # hostb's identity: not hosta's consumers
        r = h.run("relay")
        assert r.returncode == 2, r.stdout + r.stderr
        assert "permissions violation" in r.stderr.lower() and "hosta-direct" in r.stderr, r.stderr
    finally:
        h.close()


def test_doctor_reports_the_relay_running_and_then_not_running(hosts: tuple[Host, Host]) -> None:
    a, _b = hosts

    def relay_check() -> dict[str, str]:
        r = a.world.attend("doctor", "--json")
        return next(c for c in json.loads(r.stdout)["checks"] if c["name"] == "relay")

    assert relay_check()["status"] == "ok"
    a.stop_relay()
    found = relay_check()
    assert found["status"] == "warn" and "not running" in found["detail"], found


def test_the_documented_server_config_is_the_one_the_tests_run() -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "architecture" / "relay.md").read_text()
    block = "\n".join("   " + line for line in subjects.server_accounts(["laptop", "devbox"]).splitlines())
    assert block in doc, "docs/architecture/relay.md's accounts block is stale: paste subjects.server_accounts()"


# ---------------------------------------------------------------------- the send path


def test_a_send_with_a_relay_configured_imports_nothing_of_nats(hosts: tuple[Host, Host]) -> None:
    a, _b = hosts
    sa = a.session("Yul")
    box = a.world.spool_root / "relay" / "outbox"

    def queued() -> set[str]:
        return {n for sub in ("new", "cur") if (box / sub).is_dir() for n in os.listdir(box / sub)}

    before = queued()
    r = sa.run([sys.executable, "-X", "importtime", "-m", "attend", "send", "plain"], env=a.world.env)
    assert r.rc == 0, r.stderr
    assert " nats" not in r.stderr and "attend.relay" not in r.stderr
    assert len(queued() - before) == 1, "queued for the relay (still waiting, or already published)"


# ---------------------------------------------------------------------- the real client


@pytest.mark.e2e
def test_the_real_claude_code_on_one_host_replies_to_a_human_on_another(tmp_path: Path, server: NatsServer) -> None:
    from tests.e2e.fake_api import Reply, Request, bash, done
    from tests.e2e.harness import E2EWorld, claude_bin

    claude_bin()  # skips (or fails in CI) when the pinned client is not installed
    provision(tmp_path, [server.url])
    e2e = E2EWorld(tmp_path / "hosta")
    a = Host(tmp_path, "hosta", [server.url], world=e2e)
    b = Host(tmp_path, "hostb", [server.url], user="bob")
    try:
        a.start_relay()
        b.start_relay()
        assert b.run("inbox").returncode == 0  # bob used the bus on hostb

        def mail_for(sid: str) -> Path | None:
            base = e2e.spool_root / "sessions" / sid
            for sub in ("new", "claimed", "cur"):
                for f in sorted((base / sub).glob("*")) if (base / sub).is_dir() else []:
                    if b"hi from bob" in f.read_bytes():
                        return f
            return None

        def answer(req: Request) -> Reply:
            # The model answers once bob's message is in its maildir: it replies to it by id.
            sid = str(json.loads(e2e.attend("peers", "--json").stdout)["peers"][0]["session_id"])
            found = wait_until(lambda: mail_for(sid), "bob's message in the session's maildir", 120)
            assert isinstance(found, Path)
            return bash(f"attend reply --re {found.name.split(':')[0]} 'hello bob, from Claude on hosta'")

        claude = e2e.start([bash("attend join crew"), answer, done()], allowed_tools=["Bash(attend:*)"])
        peer = wait_until(
            lambda: next((p for p in b.peers()["peers"] if p.get("host") == "hosta"), None),
            lambda: f"hostb to see the Claude session on hosta: {b.peers()}",
            120,
        )
        assert isinstance(peer, dict)
        r = b.run("send", "--to", f"{peer['session_id']}@hosta", "hi from bob")
        assert r.returncode == 0, r.stderr
        run = claude.wait()
        assert run.rc == 0, run.explain()
        wait_until(
            lambda: "hello bob, from Claude on hosta" in b.human_bodies("bob"), "Claude's reply in bob's mailbox"
        )
        time.sleep(1)
        assert b.human_bodies("bob").count("hello bob, from Claude on hosta") == 1
    finally:
        a.close()
        b.close()


# ---------------------------------------------------------------------- addressing, without a server


def _mirror(world: World, *entries: dict[str, object], same_humans: bool = False) -> None:
    """What a relay would have written: this spool served by a relay, and other hosts' presence."""
    from attend.domain.messages import remote

    spool = world.spool
    spool.make_dir("relay")
    spool.write_state(b"{}", "relay", "enabled")
    now = time.time()
    remote.write(spool, "vm", same_humans, 45.0, [{**e, "seen": now} for e in entries])


def _human(user: str, host: str) -> dict[str, object]:
    return {"host": host, "kind": "human", "id": user, "name": user, "project": "", "status": "", "channels": []}


def test_a_human_name_on_two_hosts_is_refused_unless_config_says_they_are_one_person(world: World) -> None:
    env = {"USER": "alice"}
    assert world.attend("inbox", env=env).returncode == 0  # alice has a mailbox here
    _mirror(world, _human("alice", "devbox"))
    r = world.attend("send", "--to", "alice", "which alice?", env=env)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "alice@devbox" in r.stderr and "say which" in r.stderr
    r = world.attend("send", "--json", "--to", "alice@devbox", "the other one", env=env)
    assert r.returncode == 0, r.stderr
    sent = json.loads(r.stdout)
    assert sent["room"] == "h-alice@devbox"
    outbox = world.spool_root / "relay" / "outbox" / "new"
    assert [p.name for p in outbox.iterdir()] == [sent["id"]]  # queued for the relay, durably, before return
    assert not (world.spool_root / "humans" / "alice" / "new").exists() or not any(
        (world.spool_root / "humans" / "alice" / "new").iterdir()
    )  # never delivered to the alice of this host

    _mirror(world, _human("alice", "devbox"), same_humans=True)
    r = world.attend("send", "--json", "--to", "alice", "one person", env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["room"] == "h-alice"


def test_a_name_on_an_unknown_host_is_refused_and_relay_off_stops_the_queue(world: World) -> None:
    _mirror(world, _human("carol", "devbox"))
    r = world.attend("send", "--to", "carol@laptop", "hello")
    assert r.returncode == 1 and "on host laptop" in r.stderr, r.stderr
    assert world.attend("send", "to everyone").returncode == 0
    outbox = world.spool_root / "relay" / "outbox" / "new"
    assert len(list(outbox.iterdir())) == 1
    assert world.attend("relay", "--off").returncode == 0
    assert world.attend("send", "to everyone again").returncode == 0
    assert len(list(outbox.iterdir())) == 1  # no longer queued for other hosts


def new_nkey() -> tuple[str, str]:
    """A fresh user nkey: (seed, public key), as `nk -gen user` makes them."""
    import importlib

    nkeys: Any = importlib.import_module("nkeys")
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    return seed.decode(), nkeys.from_seed(bytearray(seed)).public_key.decode()


def _secret(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    path.chmod(0o600)
    return path


@pytest.mark.parametrize(
    ("key", "content", "says"),
    [
        ("nkey_seed", None, "an nkey login needs the nkeys package"),
        ("nkey_seed", "SUnot-a-seed\n", "holds no valid nkey seed"),
        ("creds", "-----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n", "holds no user JWT"),
        ("tls_ca", "not a certificate\n", "holds no CA certificate"),
    ],
)
def test_a_missing_nkeys_module_or_unusable_credentials_refuse_the_relay_at_start_in_one_line(
    world: World, tmp_path: Path, key: str, content: str | None, says: str
) -> None:
    folder = Path(layout.config_root(world.env))
    folder.mkdir(parents=True, exist_ok=True)
    seed, _ = new_nkey()
    env = {}
    lines = "relay:\n  servers: [tls://127.0.0.1:1]\n"
    if content is None:  # nats-py imports nkeys only when it connects: without it, it failed at every try
        shim = tmp_path / "shim" / "nkeys"
        shim.mkdir(parents=True)
        (shim / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'nkeys'\", name='nkeys')\n")
        env["PYTHONPATH"] = str(shim.parent)
        lines += f"  nkey_seed: {_secret(folder, 'relay.nk', seed)}\n"
    elif key == "tls_ca":
        lines += f"  nkey_seed: {_secret(folder, 'relay.nk', seed)}\n  tls_ca: {_secret(folder, 'ca.pem', content)}\n"
    else:
        lines += f"  {key}: {_secret(folder, 'relay.' + key, content.format(seed=seed))}\n"
    (folder / "config.yaml").write_text(lines)
    r = world.attend("relay", env=env, timeout=20)  # it used to retry for ever, saying nothing
    assert r.returncode == 2, r.stdout + r.stderr
    out = r.stdout.splitlines()
    assert len(out) == 1 and out[0].startswith(f"problem: {folder / 'config.yaml'}:1: relay.{key}: "), out
    assert says in out[0], out
    assert not (world.spool_root / "relay" / "enabled").exists(), "sends are not queued for a relay that cannot run"
    r = world.attend("relay", "--check", env=env, timeout=20)
    assert r.returncode == 1 and [line for line in r.stdout.splitlines() if line.startswith("problem:")] == out


def test_after_relay_off_a_name_on_another_host_is_refused_though_its_presence_is_recent(world: World) -> None:
    _mirror(world, _human("carol", "devbox"))  # heard of a moment ago: the mirror alone says she is live
    r = world.attend("send", "--json", "--to", "carol@devbox", "while the relay serves")
    assert r.returncode == 0, r.stderr
    assert world.attend("relay", "--off").returncode == 0
    for to in ("carol@devbox", "carol"):
        r = world.attend("send", "--to", to, "after the relay is off")
        assert r.returncode == 1, r.stdout + r.stderr
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "no relay serves this spool" in world.attend("send", "--to", "carol@devbox", "x").stderr
    box = world.spool_root / "rooms" / "h-carol@devbox" / "new"
    assert len(list(box.iterdir())) == 1, "nothing more was written into a room no relay carries"


def test_after_relay_off_a_reply_to_a_relayed_direct_message_is_refused(world: World) -> None:
    from attend.domain.core import envelope
    from attend.domain.core.envelope import Signal
    from attend.relay import daemon, settings

    env = {"USER": "alice"}
    assert world.attend("inbox", env=env).returncode == 0  # alice has a mailbox here
    me = layout.host()
    name = layout.unique_name().rpartition(".")[0] + ".hostz"
    sig = Signal("", "Zed", "agent", AGENT, f"alice@{me}", f"h-alice@{me}", "/p", "for alice", 0.0)
    data = envelope.render(sig.with_id(name, layout.name_time(name)))
    headers = {"Nats-Msg-Id": name, "Attend-From-Host": "hostz"}
    relay = daemon.Relay(world.spool, settings.parse({"servers": ["nats://127.0.0.1:1"]}), str(world.home), print)
    assert relay._write_batch([(f"attend.from.hostz.to.{me}.human", headers, data)]) == ["stored"]
    _mirror(world)  # a relay serves this spool
    mail = next((world.spool_root / "humans" / "alice" / "new").iterdir()).name.split(":")[0]
    r = world.attend("reply", "--to", mail, "while the relay serves", env=env)
    assert r.returncode == 0, r.stderr
    assert world.attend("relay", "--off").returncode == 0
    r = world.attend("reply", "--to", mail, "after the relay is off", env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "no relay serves this spool" in r.stderr, r.stderr
    box = world.spool_root / "rooms" / f"d-{AGENT}@hostz" / "new"
    assert len(list(box.iterdir())) == 1, "nothing more was written into a room no relay carries"


# ---------------------------------------------------------------------- the relay's own files, without a server


def _arrival(host: str, body: str) -> tuple[str, dict[str, str], bytes]:
    """(subject, headers, record) as host ``host``'s relay publishes a record of its own to #open."""
    from attend.domain.core import envelope
    from attend.domain.core.envelope import Signal

    name = layout.unique_name().rpartition(".")[0] + f".{host}"
    sig = Signal("", "Zed", "agent", "0" * 8 + "-0000-4000-8000-" + "0" * 12, "*", "open", "/p", body, 0.0)
    data = envelope.render(sig.with_id(name, layout.name_time(name)))
    return f"attend.from.{host}.to.all.open", {"Nats-Msg-Id": name, "Attend-From-Host": host}, data


def test_an_arrival_batch_is_acknowledged_only_once_its_index_entries_are_on_disk_before_its_records(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    from attend.relay import daemon, settings

    spool = world.spool
    s = settings.parse({"servers": ["nats://127.0.0.1:1"]})
    relay = daemon.Relay(spool, s, str(world.home / ".claude" / "sessions"), lambda _line: None)
    spool.make_dir("relay", "seen")
    batch = [_arrival("hostz", f"batched {i}") for i in range(3)]
    seen_dir = spool.path("relay", "seen")
    room = world.spool_root / "rooms" / "open" / "new"
    synced: list[str] = []
    in_room_at_seen_sync: list[int] = []
    real = os.fsync

    def spy(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        if path == seen_dir:
            in_room_at_seen_sync.append(len(os.listdir(room)) if room.is_dir() else 0)
        real(fd)
        synced.append(path)

    monkeypatch.setattr(os, "fsync", spy)
    assert relay._write_batch(batch) == ["stored"] * 3
    ids = [h["Nats-Msg-Id"] for _, h, _ in batch]
    assert all(os.path.join(seen_dir, i) in synced for i in ids), synced
    assert synced.count(seen_dir) == 1, "one sync of the index's folder for the batch"
    assert in_room_at_seen_sync == [0], "the index is durable before any record of the batch is in its room"
    assert synced.count(str(room)) == 1
    # A redelivery of the batch is a duplicate, written nowhere again.
    assert relay._write_batch(batch) == ["duplicate"] * 3
    assert len(os.listdir(room)) == 3


def test_a_record_the_stream_holds_twice_in_one_batch_is_written_once(world: World) -> None:
    from attend.relay import daemon, settings

    spool = world.spool
    relay = daemon.Relay(spool, settings.parse({"servers": ["nats://127.0.0.1:1"]}), str(world.home), print)
    one = _arrival("hostz", "twice in a batch")
    assert relay._write_batch([one, one]) == ["stored", "duplicate"]
    assert len(os.listdir(world.spool_root / "rooms" / "open" / "new")) == 1


def test_a_redelivered_arrival_is_not_written_again_after_retention_removed_its_local_copy(world: World) -> None:
    """The index dedupes on the original id by itself: a record the stream delivers again (an ack lost
    in a reconnect, a consumer reset) after cleanup's max_per_room took the room's copy is a duplicate."""
    from attend.relay import daemon, settings

    relay = daemon.Relay(world.spool, settings.parse({"servers": ["nats://127.0.0.1:1"]}), str(world.home), print)
    first, second = _arrival("hostz", "landed once"), _arrival("hostz", "landed after it")
    assert relay._write_batch([first]) == ["stored"]
    assert relay._write_batch([second]) == ["stored"]
    folder = Path(layout.config_root(world.env))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text("retention:\n  max_per_room: 1\n")
    r = world.attend("cleanup")
    assert r.returncode == 0, r.stdout + r.stderr
    room = world.spool_root / "rooms" / "open" / "new"
    assert [f.read_bytes().partition(b"\n\n")[2] for f in room.iterdir()] == [b"landed after it"]
    assert relay._write_batch([first]) == ["duplicate"]
    assert [f.read_bytes().partition(b"\n\n")[2] for f in room.iterdir()] == [b"landed after it"]


def test_prune_drops_index_and_published_entries_past_their_keep_and_keeps_the_rest(world: World) -> None:
    from attend.relay import store

    spool = world.spool
    now = time.time()

    def name_at(t: float) -> str:  # unique_name never goes back in time within a process
        return layout.cutoff_name(t) + f"P1Q1R{os.urandom(4).hex()}.hostz"

    old_seen, new_seen = name_at(now - store.SEEN_KEEP - 60), name_at(now - store.SEEN_KEEP + 3600)
    old_sent, new_sent = name_at(now - store.OUTBOX_KEEP - 60), name_at(now - 60)
    waiting = name_at(now - store.OUTBOX_KEEP - 120)  # not published yet: never pruned
    for name in (old_seen, new_seen):
        spool.write_state(b"x open\n", "relay", "seen", name)
        spool.write_state(b"", "relay", "landed", name)
    for name in (old_sent, new_sent):
        spool.write_state(b"record", "relay", "outbox", "cur", name)
    spool.write_state(b"record", "relay", "outbox", "new", waiting)
    spool.write_state(b"record", "relay", "outbox", "aside", old_seen)  # set aside: kept as long as the index
    spool.write_state(b"record", "relay", "outbox", "aside", new_seen)
    assert store.prune(spool, now) == 4
    relay_dir = world.spool_root / "relay"
    assert os.listdir(relay_dir / "seen") == [new_seen]
    assert os.listdir(relay_dir / "landed") == [new_seen]
    assert os.listdir(relay_dir / "outbox" / "cur") == [new_sent]
    assert os.listdir(relay_dir / "outbox" / "new") == [waiting]
    assert os.listdir(relay_dir / "outbox" / "aside") == [new_seen]


@pytest.mark.parametrize(
    ("section", "says"),
    [
        (["nats://x:4222"], "relay: must be a mapping"),
        ({"servers": ["nats://x:4222"], "colour": "red"}, "relay.colour: unknown key"),
        ({}, "relay.servers: give a list of server URLs"),
        ({"servers": []}, "relay.servers: give a list of server URLs"),
        ({"servers": ["http://x:4222"]}, "'http://x:4222' is not a nats://, tls:// or ws:// URL"),
        ({"servers": "nats://x:4222", "host": "a_b"}, "relay.host: 'a_b' must be letters, digits and '-'"),
        ({"servers": "nats://x:4222", "host": "all"}, "relay.host: 'all' must be letters"),
        ({"servers": "nats://x:4222", "host": "elsewhere"}, "relay.host: elsewhere is not the name this machine"),
        ({"servers": "nats://x:4222", "nkey_seed": ""}, "relay.nkey_seed: give a file path"),
        ({"servers": "nats://x:4222", "creds": "/nonexistent/x.creds"}, "relay.creds: no file at /nonexistent"),
        ({"servers": "nats://x:4222", "nkey_seed": "{open}"}, "is readable by others; chmod 600 it"),
        ({"servers": "nats://x:4222", "user": ""}, "relay.user: give the user name"),
        ({"servers": "nats://x:4222", "user": "u", "nkey_seed": "{secret}"}, "give one of nkey_seed, creds or user"),
        ({"servers": "nats://x:4222", "same_humans": "yes"}, "relay.same_humans: true or false"),
        ({"servers": "nats://x:4222", "heartbeat": 0}, "relay.heartbeat: seconds between 1 and 60"),
        ({"servers": "nats://x:4222", "heartbeat": True}, "relay.heartbeat: seconds between 1 and 60"),
    ],
)
def test_each_problem_in_the_relay_section_is_one_line_naming_its_key(
    tmp_path: Path, section: object, says: str
) -> None:
    from attend.relay import settings

    open_file, secret = tmp_path / "open.nk", tmp_path / "secret.nk"
    open_file.write_text("SU")
    open_file.chmod(0o644)
    secret.write_text("SU")
    secret.chmod(0o600)
    if isinstance(section, dict):
        section = {k: v.format(open=open_file, secret=secret) if isinstance(v, str) else v for k, v in section.items()}
    got = settings.parse(section, "config.yaml:3")
    assert len(got.problems) == 1, got.problems
    assert got.problems[0].startswith("config.yaml:3: ") and "\n" not in got.problems[0]
    assert says in got.problems[0], got.problems[0]


def test_a_relay_section_with_a_problem_is_refused_in_one_line_and_changes_nothing(world: World) -> None:
    folder = Path(layout.config_root(world.env))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text("relay:\n  servers: [http://bus:4222]\n")
    r = world.attend("relay")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout.splitlines() == [
        f"problem: {folder / 'config.yaml'}:1: relay.servers: 'http://bus:4222' is not a nats://, tls:// or ws:// URL"
    ], r.stdout
    assert not (world.spool_root / "relay").exists(), "nothing queued, no relay marked as running"
    r = world.attend("relay", "--check")
    assert r.returncode == 1 and r.stdout.count("problem:") == 1, r.stdout


AGENT = f"{'0' * 8}-0000-4000-8000-{'0' * 12}"


@pytest.mark.parametrize(
    ("sender", "from_id"),
    [
        ("Hana-beta@laptop", f"{AGENT}@laptop"),
        ("Al Bo@hz", f"{AGENT}@hz"),
        ("x_y+z@h1", f"{AGENT}@h1"),
        ("alice@build-host-7", "alice@build-host-7"),
    ],
)
def test_a_relayed_sender_is_written_and_read_as_the_email_package_would_without_it(sender: str, from_id: str) -> None:
    """Every arrival is written again under its sender's ``name@host``: the plain header path takes it
    (the email package costs about a millisecond a record) and must write exactly what the package does."""
    from attend.domain.core import envelope
    from attend.domain.core.envelope import Signal

    name = "1700000000.M000000P1Q1R0000abcd.hostb"
    kind = "agent" if from_id.startswith(AGENT) else "human"
    sig = Signal(name, sender, kind, from_id, "*", "open", "laptop:/p", "hi", layout.name_time(name))
    plain = envelope.plain_headers(sig)
    assert plain is not None and plain == envelope.email_headers(sig), plain
    data = envelope.render(sig)
    headers, _ = envelope.parse_headers(data)
    assert envelope.sender_label(headers) == sender
    assert envelope.parse(data) == sig


# ---------------------------------------------------------------------- nothing lost without a word
# Issue 32, findings 6, 7 and 8: the host name belongs to the spool once a relay has run; a record the
# relay cannot publish is shown by doctor, relay --check and its sender's next send; doctor compares
# the relay's host name with the spool's; a reply across hosts reaches the human's mailbox; local
# names first; the relay without its extra is one line; a stop prints no traceback.


def relay_check(h: Host) -> dict[str, str]:
    r = h.world.attend("doctor", "--json")
    return next(c for c in json.loads(r.stdout)["checks"] if c["name"] == "relay")


def test_a_send_whose_environment_names_another_host_goes_out_under_the_spools_host(
    hosts: tuple[Host, Host],
) -> None:
    a, b = hosts
    sb = b.session("Bea")
    r = a.world.attend("send", "--json", "from a shell without the relay's ATTEND_HOST", env={"ATTEND_HOST": "vm"})
    assert r.returncode == 0, r.stderr
    sent = json.loads(r.stdout)["id"]
    assert sent.endswith(".hosta"), sent  # the spool's host, not the environment's
    body = "from a shell without the relay's ATTEND_HOST"
    wait_until(lambda: body in b.bodies(sb.session_id), "the message on hostb")
    assert not a.outbox()
    assert not (a.world.spool_root / "relay" / "outbox" / "aside").exists()
    found = relay_check(a)
    assert found["status"] == "ok" and "running for host hosta" in found["detail"], found


def test_the_relay_started_under_another_name_relays_as_the_spools_host_and_says_so(
    hosts: tuple[Host, Host],
) -> None:
    a, b = hosts
    a.stop_relay()
    a.world.env["ATTEND_HOST"] = "vm"
    a.start_relay()
    assert "this spool's host is hosta" in a.said() and "not vm" in a.said(), a.said()
    sb = b.session("Bea")
    r = a.world.attend("send", "--json", "still hosta")
    assert r.returncode == 0 and json.loads(r.stdout)["id"].endswith(".hosta"), r.stdout + r.stderr
    wait_until(lambda: "still hosta" in b.bodies(sb.session_id), "the message on hostb")


def test_a_record_the_relay_sets_aside_shows_in_doctor_check_and_the_senders_next_send(
    hosts: tuple[Host, Host],
) -> None:
    a, _b = hosts
    s = a.session("Ada")
    a.stop_relay()
    # A record queued under another host's name (an attend before the spool kept its host name): the
    # relay cannot publish it as hosta.
    from attend.domain.core import envelope
    from attend.domain.core.envelope import Signal
    from attend.domain.messages import delivery

    saved = layout._HOST
    layout._HOST = "vm"
    try:
        sig = Signal("", "Ada", "agent", s.session_id, "*", "open", "/p", "lost in silence before", 0.0)
        name = layout.unique_name()
        a.world.spool.publish(["open"], envelope.render(sig.with_id(name, layout.name_time(name))), name, outbox=True)
    finally:
        layout._HOST = saved
    assert delivery.crosses_hosts(a.world.spool, ["open"])
    a.start_relay()
    aside = a.world.spool_root / "relay" / "outbox" / "aside"
    wait_until(lambda: aside.is_dir() and [p.name for p in aside.iterdir()] == [name], "the record set aside")
    found = relay_check(a)
    assert found["status"] == "warn" and "1 record(s) set aside" in found["detail"] and name in found["detail"], found
    r = a.world.attend("relay", "--check")
    assert "1 record(s) set aside" in r.stdout and name in r.stdout, r.stdout + r.stderr
    r = s.attend("send", "next one")
    assert r.rc == 0, r.stderr
    assert f"your message {name} did not reach other hosts" in r.stderr and "host vm" in r.stderr, r.stderr
    r = s.attend("send", "and the one after")
    assert "did not reach other hosts" not in r.stderr  # said once


def test_doctor_fails_a_relay_that_runs_under_another_name_than_the_spools(hosts: tuple[Host, Host]) -> None:
    a, _b = hosts
    (a.world.spool_root / "relay" / "enabled").write_text(json.dumps({"host": "devbox"}))
    found = relay_check(a)
    assert found["status"] == "fail" and "runs as host hosta" in found["detail"] and "devbox" in found["detail"]


def test_a_reply_on_another_host_to_a_humans_channel_message_reaches_the_humans_mailbox(
    hosts: tuple[Host, Host],
) -> None:
    a, b = hosts
    a.session("Ada")  # hosta has a member of #crew too
    sb = b.session("Bea")
    r = a.world.attend("send", "--to", "#crew", "who is on call tonight?")
    assert r.returncode == 0, r.stderr
    wait_until(lambda: "who is on call tonight?" in b.bodies(sb.session_id), "the question on hostb")
    here = b.records(sb.session_id, "who is on call tonight?")[0].decode()
    local = next(line.split(": ", 1)[1] for line in here.splitlines() if line.startswith("Message-ID"))
    r = sb.attend("reply", "--re", local.strip("<>").split("@")[0], "I am")
    assert r.rc == 0, r.stderr
    wait_until(lambda: "I am" in a.human_bodies("fixture-human"), "the reply in the human's mailbox on hosta")
    time.sleep(1)
    assert a.human_bodies("fixture-human").count("I am") == 1
    mail = [
        f.read_text()
        for d in ("new", "cur")
        if (a.world.spool_root / "humans" / "fixture-human" / d).is_dir()
        for f in (a.world.spool_root / "humans" / "fixture-human" / d).iterdir()
    ]
    reply = next(m for m in mail if m.endswith("I am"))
    assert f"From-Id: {sb.session_id}@hostb" in reply and "Room: @crew" in reply


def test_a_bare_name_of_a_session_here_addresses_it_whatever_another_hosts_presence_says(world: World) -> None:
    s = world.session("proj", name="Sam")
    assert s.attend("join", "crew").rc == 0
    world.spool.make_dir("relay")
    world.spool.write_state(b"{}", "relay", "enabled")
    other = "1" * 8 + "-0000-4000-8000-" + "1" * 12
    entry = {"host": "devbox", "kind": "agent", "id": other, "name": "Sam", "project": "/p", "status": "", "seen": 0}
    entry["seen"] = time.time()
    doc = {"host": "vm", "same_humans": False, "ttl": 45.0, "peers": [entry]}
    world.spool.write_state(json.dumps(doc).encode(), "relay", "peers.json")
    r = world.attend("send", "--json", "--to", "Sam", "for the one here")
    assert r.returncode == 0, r.stderr
    sent = json.loads(r.stdout)
    assert sent["room"] == f"d-{s.session_id}"
    assert "'Sam' is a session here; Sam@devbox on another host shares the name (say Sam@devbox)" in sent["warnings"]
    r = world.attend("send", "--json", "--to", "Sam@devbox", "for the other")
    assert r.returncode == 0 and json.loads(r.stdout)["room"] == f"d-{other}@devbox", r.stdout + r.stderr


def test_the_relay_without_its_extra_says_what_to_install_in_one_line(world: World, tmp_path: Path) -> None:
    hidden = tmp_path / "no-nats"
    (hidden / "nats").mkdir(parents=True)
    (hidden / "nats" / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'nats'\")\n")
    (world.home / ".config" / "attend").mkdir(parents=True)
    (world.home / ".config" / "attend" / "config.yaml").write_text("relay:\n  servers: [nats://127.0.0.1:4222]\n")
    for args in (("relay",), ("relay", "--check")):
        r = world.attend(*args, env={"PYTHONPATH": str(hidden)})
        assert r.returncode == 1, r.stdout + r.stderr
        assert r.stderr == "attend relay needs the relay extra: pip install '.[relay]'\n", r.stderr


def test_a_clean_stop_of_the_relay_prints_no_traceback(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    sb = b.session("Bea")
    a.world.attend("send", "while the relays run")
    wait_until(lambda: "while the relays run" in b.bodies(sb.session_id), "the message on hostb")
    assert a.stop_relay(signal.SIGTERM) == 0  # connected, watching presence, fetching
    assert b.stop_relay(signal.SIGINT) == 0
    a.start_relay()
    a.world.attend("send", "queued while the server is gone")
    assert a.stop_relay(signal.SIGTERM) == 0
    for h in (a, b):
        said = h.said()
        assert "Traceback" not in said and "CancelledError" not in said and "never retrieved" not in said, said
    assert os.path.exists(a.log)


# ---------------------------------------------------------------------- outcomes and the inbound rule across hosts


def remote_rule(h: Host, name: str, other: str) -> str:
    """The inbound rule for other hosts that ``h``'s mirror holds for session ``name`` of host ``other``."""
    mirror = json.loads((h.world.spool_root / "relay" / "peers.json").read_text())
    found = [p for p in mirror["peers"] if p.get("host") == other and p.get("name") == name]
    return str(found[0].get("inbound", "")) if found else ""


def test_a_relayed_recipients_outcome_hold_accept_decline_refuse_and_all_refused(hosts: tuple[Host, Host]) -> None:
    a, b = hosts
    sa, sb = a.session("Ada"), b.session("Bea")
    wait_until(lambda: remote_rule(a, "Bea", "hostb") == "accept", lambda: f"hosta to see Bea: {a.peers()}")

    def send(body: str) -> dict[str, Any]:
        r = sa.attend("send", "--json", "--to", "Bea", body)
        assert r.rc == 0, r.stderr
        return dict(json.loads(r.stdout))

    assert [x["outcome"] for x in send("plain")["recipients"]] == ["delivered"]
    wait_until(lambda: "plain" in b.bodies(sb.session_id), "the plain one on hostb")

    # Bea holds what comes from other hosts: the sender is told so, and hostb's conduits show nothing.
    assert sb.attend("inbound", "hold", "--from", "hosts").rc == 0
    wait_until(lambda: remote_rule(a, "Bea", "hostb") == "hold", "hosta to learn Bea's rule")
    held = send("held one")
    assert [(x["name"], x["id"], x["kind"], x["outcome"]) for x in held["recipients"]] == [
        ("Bea@hostb", f"{sb.session_id}@hostb", "agent", "held")
    ]
    declined = send("declined one")
    held_dir = b.world.spool_root / "sessions" / sb.session_id / "held"

    def held_bodies() -> list[str]:
        return [f.read_bytes().partition(b"\n\n")[2].decode() for f in held_dir.iterdir()] if held_dir.is_dir() else []

    wait_until(lambda: sorted(held_bodies()) == ["declined one", "held one"], "both held on hostb")
    assert "held one" not in b.bodies(sb.session_id)  # no conduit sees held/
    waiting = {w["subject"]: w for w in json.loads(b.run("inbound", "--json").stdout)["waiting"]}
    assert waiting["held one"]["sender_class"] == "hosts" and waiting["held one"]["sender"] == "Ada@hosta"
    # The human of hostb accepts one and declines the other.
    assert b.run("inbound", "accept", waiting["held one"]["id"]).returncode == 0
    assert b.run("inbound", "decline", waiting["declined one"]["id"]).returncode == 0
    assert b.bodies(sb.session_id).count("held one") == 1 and "declined one" not in b.bodies(sb.session_id)
    assert declined["recipients"][0]["outcome"] == "held"

    # Bea refuses other hosts: a send to her alone is refused at the sender, exit 1, nothing relayed.
    assert sb.attend("inbound", "refuse", "--from", "hosts").rc == 0
    wait_until(lambda: remote_rule(a, "Bea", "hostb") == "refuse", "hosta to learn the refusal")
    r = sa.attend("send", "--to", "Bea", "nobody hears this")
    assert r.rc == 1 and "refuses" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    written = [p for p in (a.world.spool_root / "rooms").rglob("*") if p.is_file()]
    assert not any(b"nobody hears this" in p.read_bytes() for p in written)
    # A channel message still crosses, and hostb's fan-out keeps it from her (its rule decides there too).
    a.cli_send(sa, "to the crew, refused by Bea", "--to", "#crew")
    sc = b.session("Cal")
    a.cli_send(sa, "to the crew again", "--to", "#crew")
    wait_until(lambda: "to the crew again" in b.bodies(sc.session_id), "the crew message for Cal on hostb")
    assert "to the crew again" not in b.bodies(sb.session_id) and "to the crew again" not in held_bodies()
