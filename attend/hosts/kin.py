"""What ties a process to a session once its parent has gone, and whether a person sits at its terminal.

The ancestry walk (each host's ``find``) ends where a process was handed to another parent: a shell
idiom such as ``setsid -f``, ``nohup … & disown`` or a double fork leaves a session's tool with init
(or a user service manager) for its parent, and ``env -i`` clears its environment. Every client attend
serves starts its shell tool the same way (measured with the pinned clients: Claude Code 2.1.332, Codex
CLI 0.171, Gemini CLI 0.61): in a session of its own (``setsid``), with no controlling terminal, stdin
``/dev/null``, and stdout and stderr a pipe, a socket pair or a file in a folder the client holds
open. So two things outlive the parent (docs/architecture/sessions.md, "Processes that outlive their
parent"):

- **the process group** (``/proc/<pid>/stat``): a process that did not call ``setsid`` itself keeps
  its tool's; a live member of it (the tool's shell, while it runs) still has the client among its
  ancestors;
- **the open files** it inherited: the other end of its stdout pipe or socket, or the folder its
  output file lies in, is held open by the client's own process.

``base.adopted`` says whether the caller's own session was orphaned (on every resolution that would
otherwise be the human, so it lives there, on the send path, and reuses the walk's reads); here,
``relatives`` and ``inherited``/``held`` gather the evidence above for the identity rule to weigh,
imported only for a process left without its parent. ``confirm`` asks a person at the controlling
terminal (``/dev/tty``), never stdin. Standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from attend.hosts.base import Parent, full_stat, num, stat_of

UNIX_DIAG_PEER = 2  # the netlink attribute naming a unix socket's peer inode
MAX_SCAN = 1 << 15  # processes looked at for the members of a process group, at most


def chain_to(pid: int, top: int, parent: Parent) -> list[int]:
    """``pid`` and its parents up to ``top`` (included)."""
    out = [pid]
    while out[-1] != top and len(out) < 64:
        up = parent(out[-1])
        if up is None or up <= 0:
            break
        out.append(up)
    return out


def relatives(chain: list[int], parent: Parent) -> list[int]:
    """The live processes of the caller's process group (its ``chain``'s, that is: the group its tool's
    shell made), outside the chain and not started by it: the group's leader first, then every other
    member. A process that a process of the chain started is the caller's own doing, never its tie."""
    groups = {num(got[1], 2) for p in chain if (got := stat_of(parent, p)) is not None} - {0, 1, *chain}
    try:
        pids = [int(n) for n in os.listdir("/proc") if n.isdigit()][:MAX_SCAN]
    except OSError:
        pids = []
    members = [p for p in pids if p > 1 and p not in chain and (got := full_stat(p)) and num(got[1], 2) in groups]
    ordered = sorted(members, key=lambda p: (p not in groups, p))
    return [p for p in ordered if not descends(p, chain, parent)]


def descends(pid: int, chain: list[int], parent: Parent) -> bool:
    """Whether ``pid`` was started by a process of ``chain`` (one of them is among its ancestors)."""
    seen = set(chain)
    current: int | None = pid
    for _ in range(64):
        current = parent(current) if current is not None else None
        if current is None or current <= 1:
            return False
        if current in seen:
            return True
    return False


# ---------------------------------------------------------------------- open files


def held(pid: int) -> set[tuple[int, int]]:
    """What process ``pid`` holds open, as (device, inode) pairs; a unix socket also as its peer's
    inode (device 0), so the two ends of a socket pair meet."""
    out: set[tuple[int, int]] = set()
    for _fd, st in _fds(pid):
        out.add((st.st_dev, st.st_ino))
    return out


def inherited(pid: int) -> set[tuple[int, int]]:
    """What ``pid`` holds open that another process may hold the other end of: each pipe and socket,
    a unix socket's peer, and each regular file's folder (Claude Code's tool output lies in a folder
    the client holds open). Terminals and ``/dev/null`` are left out: every process may share them."""
    import stat

    out: set[tuple[int, int]] = set()
    for target, st in _fds(pid):
        if stat.S_ISFIFO(st.st_mode):
            out.add((st.st_dev, st.st_ino))
        elif stat.S_ISSOCK(st.st_mode):
            out.add((st.st_dev, st.st_ino))
            peer = unix_peer(st.st_ino)
            if peer:
                out.add((st.st_dev, peer))
        elif stat.S_ISREG(st.st_mode) and target.startswith("/"):
            try:
                folder = os.stat(os.path.dirname(target.removesuffix(" (deleted)")))
            except OSError:
                continue
            out.add((folder.st_dev, folder.st_ino))
    return out


def _fds(pid: int) -> Iterable[tuple[str, os.stat_result]]:
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return
    for name in names[:4096]:
        path = f"/proc/{pid}/fd/{name}"
        try:
            target = os.readlink(path)
            st = os.stat(path)
        except OSError:
            continue
        yield target, st


def unix_peer(inode: int) -> int | None:
    """The inode of the other end of the unix socket ``inode`` (the kernel's sock_diag), or None."""
    import socket
    import struct

    try:
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 4)  # NETLINK_SOCK_DIAG
    except (OSError, AttributeError):
        return None
    try:
        s.settimeout(1)
        # unix_diag_req: this inode exactly (no cookie), its peer shown
        req = struct.pack("=BBHIIIII", socket.AF_UNIX, 0, 0, 0xFFFFFFFF, inode, 4, 0xFFFFFFFF, 0xFFFFFFFF)
        s.sendto(struct.pack("=IHHII", 16 + len(req), 20, 1, 1, 0) + req, (0, 0))  # SOCK_DIAG_BY_FAMILY
        data = s.recv(8192)
    except OSError:
        return None
    finally:
        s.close()
    if len(data) < 32:
        return None
    length, kind = struct.unpack_from("=IH", data)
    if kind != 20:
        return None
    off = 32  # the message header, then unix_diag_msg
    while off + 8 <= min(length, len(data)):
        alen, atype = struct.unpack_from("=HH", data, off)
        if alen < 4:
            return None
        if atype == UNIX_DIAG_PEER:
            peer: int = struct.unpack_from("=I", data, off + 4)[0]
            return peer or None
        off += (alen + 3) & ~3
    return None


# ---------------------------------------------------------------------- a person at the terminal


def confirm(question: str) -> bool | None:
    """Ask ``question`` at the controlling terminal and read the answer typed there (``/dev/tty``,
    never stdin): True for "y" or "yes", False for anything else, None when there is no terminal to ask."""
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return None
    try:
        os.write(fd, f"{question} [y/N] ".encode())
        answer = b""
        while not answer.endswith(b"\n") and len(answer) < 64:
            chunk = os.read(fd, 64)
            if not chunk:
                break
            answer += chunk
    except OSError:
        return None
    finally:
        os.close(fd)
    return answer.strip().lower() in (b"yes", b"y")
