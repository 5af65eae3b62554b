"""State files: small files written whole (tmp + rename, or in place under a lock), markers, moves and
removals, the bounded diagnostic log, and the one file handed to SQLite (the search index's).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time

from attend import layout as L
from attend.errors import SpoolError
from attend.gate.opening import (
    _APPEND,
    _PRIVATE,
    FILE_MODE,
    Handles,
    RefusedEntry,
    _listdir,
    _write_new,
    _writes,
)

TYPE_CHECKING = False  # not typing's: its import would cost the drain's fast path a millisecond
if TYPE_CHECKING:
    import sqlite3


class State(Handles):
    """State files, moves and removals, the log (a part of ``Spool``, attend/spool.py)."""

    # ------------------------------------------------------------------ small state files

    @_writes
    def write_state(self, data: bytes, *parts: str, durable: bool = False) -> None:
        """Replace a small state file atomically (unique tmp + rename in the same folder). Whatever
        was planted under the name is replaced, never followed; a folder there is an error."""
        name = self._leaf(parts)
        tmp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        with self._at(parts[:-1], create=True) as d:
            _write_new(d, tmp, data, sync=durable)
            try:
                os.replace(tmp, name, src_dir_fd=d, dst_dir_fd=d)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=d)
                raise
            if durable:
                os.fsync(d)

    @_writes
    def rewrite_state(self, data: bytes, *parts: str) -> None:
        """Rewrite a small state file in place (pwrite, then truncate): no new inode. For state only
        read under the lock its writer holds, as the governor is under the show lock: a replace costs
        an inode's allocation and the old one's release, ~0.7 ms of CPU on this kind of disk, at every
        line a hundred loops print at once. Anything but the plain, singly linked file the name should
        be (a planted symlink, FIFO or hard link) is replaced, never written through, as write_state does."""
        fd = self._open_state(parts, os.O_WRONLY)
        if fd is None:
            self.write_state(data, *parts)
            return
        try:
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
        finally:
            os.close(fd)

    @_writes
    def append_state(self, line: bytes, *parts: str, limit: int = 16384) -> None:
        """Append one line (``line`` ends in a newline) to a small state file that readers take the
        last line of, without a lock: an append shows whole or not at all (the file's size moves
        after its bytes are in), so no reader sees half of one, and it costs no new inode. Past
        ``limit`` bytes, or on a file not ending in a line, the file is replaced by the line alone."""
        fd = self._open_state(parts, os.O_RDWR | os.O_APPEND)
        if fd is not None:
            try:
                size = os.fstat(fd).st_size
                if size + len(line) <= limit and (size == 0 or os.pread(fd, 1, size - 1) == b"\n"):
                    os.write(fd, line)
                    return
            finally:
                os.close(fd)
        self.write_state(line, *parts)

    def _open_state(self, parts: tuple[str, ...], flags: int) -> int | None:
        """The state file ``parts`` opened to write in place, made if absent; None when what is there
        is not a plain file of one link (it is then replaced whole, never written through)."""
        with self._at(parts[:-1], create=True) as d:
            try:
                fd = os.open(
                    self._leaf(parts),
                    flags | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                    FILE_MODE,
                    dir_fd=d,
                )
            except OSError:  # a symlink (ELOOP), a FIFO with no reader (ENXIO), a folder (EISDIR)
                return None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            os.close(fd)
            return None
        if stat.S_IMODE(st.st_mode) != FILE_MODE:
            os.fchmod(fd, FILE_MODE)
        return fd

    @_writes
    def create_exclusive(self, data: bytes, *parts: str) -> bool:
        """Create a file that must not exist yet; False when it does."""
        with self._at(parts[:-1], create=True) as d:
            try:
                _write_new(d, self._leaf(parts), data, sync=False)
            except FileExistsError:
                return False
        return True

    @_writes
    def create_linked(self, data: bytes, *parts: str) -> bool:
        """Publish a small file whole under a name that must not exist yet (tmp + link); False when it
        does. Unlike ``create_exclusive``, a reader never sees the file half-written."""
        name = self._leaf(parts)
        tmp = f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        with self._at(parts[:-1], create=True) as d:
            _write_new(d, tmp, data, sync=False)
            try:
                os.link(tmp, name, src_dir_fd=d, dst_dir_fd=d, follow_symlinks=False)
            except FileExistsError:
                return False
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=d)
        return True

    @_writes
    def touch(self, *parts: str) -> None:
        """Create or bump the mtime of a marker file (heartbeat); a symlink there is bumped itself."""
        with self._at(parts[:-1], create=True) as d:
            try:
                os.utime(self._leaf(parts), dir_fd=d, follow_symlinks=False)
            except FileNotFoundError:
                with contextlib.suppress(FileExistsError):
                    _write_new(d, self._leaf(parts), b"", sync=False)

    def remove(self, *parts: str) -> bool:
        """Unlink root/parts…; False when absent. A symlink there is removed itself, never followed."""
        try:
            with self._at(parts[:-1]) as d:
                os.unlink(self._leaf(parts), dir_fd=d)
        except FileNotFoundError:
            return False
        return True

    def remove_tree(self, *parts: str) -> None:
        """Remove a folder below the root and everything in it, never following a symlink: one planted
        in its place is unlinked itself, and one inside is removed, not descended into."""
        import shutil  # only cleanup, dissolve and reaping remove trees

        if not parts:
            raise SpoolError("refusing to remove the spool root")
        try:
            with self._at(parts[:-1]) as d:
                try:
                    mode = os.stat(self._leaf(parts), dir_fd=d, follow_symlinks=False).st_mode
                except FileNotFoundError:
                    return
                if not stat.S_ISDIR(mode):
                    os.unlink(self._leaf(parts), dir_fd=d)
                    return

                shutil.rmtree(self._leaf(parts), dir_fd=d, onerror=_missing_is_fine)
        except FileNotFoundError:
            return

    def remove_dir(self, *parts: str) -> bool:
        """Remove an empty folder below the root (a moved session's new/); False when absent or not empty."""
        try:
            with self._at(parts[:-1]) as d:
                os.rmdir(self._leaf(parts), dir_fd=d)
        except OSError:
            return False
        return True

    @_writes
    def move_entry(self, src: tuple[str, ...], dest: tuple[str, ...]) -> bool:
        """Move one spool entry to a name that must not exist yet (link + unlink: never clobbers). When
        the destination exists, the source goes anyway: the destination's copy wins."""
        with self._at(src[:-1]) as s, self._at(dest[:-1], create=True) as d:
            try:
                os.link(self._leaf(src), self._leaf(dest), src_dir_fd=s, dst_dir_fd=d, follow_symlinks=False)
            except FileExistsError:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self._leaf(src), dir_fd=s)
                return False
            except FileNotFoundError:
                return False
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._leaf(src), dir_fd=s)
        return True

    def move_all(self, src: tuple[str, ...], dest: tuple[str, ...]) -> None:
        """Move every entry of one folder into another (a /clear's notify/ and mcp/)."""
        # A symlink in place of the folder raises RefusedEntry: files are never moved out of its target.
        for entry in self.entries(*src) if self._is_dir(src) else []:
            self.move_entry((*src, entry), (*dest, entry))

    @_writes
    def carry_over(self, old: str, new: str) -> bool:
        """Carry the top folder ``old`` over to ``new`` in place: a folder an earlier release named
        otherwise (``layout.RENAMED``), on first use. False when there is none to carry (one ``stat``).

        One rename moves it whole. Where ``new`` already exists (an earlier release's process made
        ``old`` again since), each entry moves by link and unlink, and one ``new`` has wins (it is the
        newer). So an entry is in one folder or both, never neither, and two processes may carry at
        once: a reader that misses in ``new``, carries, and looks in ``new`` again finds it."""
        try:
            root = self._root_fd()
            if not stat.S_ISDIR(os.stat(old, dir_fd=root, follow_symlinks=False).st_mode):
                raise self._refusal(root, old, (old,))
        except FileNotFoundError:
            return False  # no spool yet, or nothing to carry
        try:
            os.stat(new, dir_fd=root, follow_symlinks=False)
        except FileNotFoundError:
            try:
                os.rename(old, new, src_dir_fd=root, dst_dir_fd=root)  # onto an empty ``new`` at most
                return True
            except FileNotFoundError:
                return True  # another process carried it since
            except OSError as e:
                if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
        try:
            src = self._openat(root, old, (old,), False)  # never through the cache: ``old`` goes
        except FileNotFoundError:
            return True
        try:
            dst = self._top_fd(new, True)
            for name in _listdir(src):
                try:
                    os.link(name, name, src_dir_fd=src, dst_dir_fd=dst, follow_symlinks=False)
                except FileExistsError:
                    pass
                except OSError:
                    continue  # moved by another carrier, or not a file: left where it is
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=src)
        finally:
            os.close(src)
        with contextlib.suppress(OSError):  # not empty: something left, for the next carry
            os.rmdir(old, dir_fd=root)
        return True

    def _is_dir(self, parts: tuple[str, ...]) -> bool:
        try:
            os.close(self._open_dir(parts))
        except FileNotFoundError:
            return False
        return True

    # ------------------------------------------------------------------ the diagnostic log

    def log(self, line: str) -> None:
        """Append one line to the bounded diagnostic log (hooks' stderr is swallowed by the client)."""
        record = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} [{os.getpid()}] {line.strip()}\n".encode("utf-8", "replace")
        try:
            with self._at((L.LOG,), create=True) as d:
                with contextlib.suppress(FileNotFoundError):
                    if os.stat(L.LOG_FILE, dir_fd=d, follow_symlinks=False).st_size > L.LOG_LIMIT:
                        os.replace(L.LOG_FILE, L.LOG_OLD, src_dir_fd=d, dst_dir_fd=d)
                fd = os.open(L.LOG_FILE, _APPEND, FILE_MODE, dir_fd=d)  # a FIFO with no reader: ENXIO
                try:
                    if stat.S_ISREG(os.fstat(fd).st_mode):
                        os.write(fd, record)
                finally:
                    os.close(fd)
        except OSError:
            pass  # the log is a diagnostic aid; never fail the caller over it

    # ------------------------------------------------------------------ the search index

    @_writes
    def disposable_database(self, *parts: str, fresh: bool = False) -> sqlite3.Connection:
        """An SQLite connection on root/parts…, a private file that holds only what can be made again
        (``attend search``'s index, attend/search/): 0600, one link, ours, made when absent.

        SQLite opens its file by path (its library takes no descriptor), so the gate readies the path
        for it first, on its own handles: the folders are opened without following a link, as every
        spool path is; then the file itself with ``O_NOFOLLOW | O_NONBLOCK``. Anything but a plain file
        of one link there (a planted symlink, a FIFO, a hard link to another file, a file we may not
        read or write) is removed, never followed or opened, and a fresh empty file made in its place:
        the caller rebuilds it. ``fresh`` starts afresh whatever is there (a corrupt index). The leftover
        or planted side files SQLite would look at (``-journal``, ``-wal``, ``-shm``) are removed: the
        caller keeps its journal in memory, so there are none of its own. After the connection is made
        the name is checked to still be the file readied, so only a writer inside the 0700 folder (the
        user) could swap it in between."""
        import _sqlite3  # the package's C module: ``sqlite3`` itself loads datetime for adapters unused here (~2 ms)

        name = self._leaf(parts)
        with self._at(parts[:-1], create=True) as d:
            for side in (name + "-journal", name + "-wal", name + "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(side, dir_fd=d)
            if fresh:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(name, dir_fd=d)
            fd = self._private_file(d, name, parts)
            try:
                held = os.fstat(fd)
                conn = _sqlite3.connect(self.path(*parts), timeout=10.0, isolation_level=None)
                now = os.stat(name, dir_fd=d, follow_symlinks=False)
                if (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino):
                    conn.close()
                    raise RefusedEntry(errno.ESTALE, f"{self.path(*parts)} was replaced while it was opened; try again")
            finally:
                os.close(fd)
        return conn

    def _private_file(self, d: int, name: str, parts: tuple[str, ...]) -> int:
        """A read-write handle on a plain private file ``name`` of folder ``d``: made when absent, and
        whatever else stands there (see ``disposable_database``) removed first."""
        for _ in range(3):
            try:
                fd = os.open(name, _PRIVATE, FILE_MODE, dir_fd=d)
            except OSError as e:
                if e.errno not in (errno.ELOOP, errno.ENXIO, errno.EACCES, errno.EPERM, errno.EISDIR):
                    raise
            else:
                st = os.fstat(fd)
                if stat.S_ISREG(st.st_mode) and st.st_nlink == 1 and st.st_uid == os.geteuid():
                    if stat.S_IMODE(st.st_mode) != FILE_MODE:
                        os.fchmod(fd, FILE_MODE)
                    return fd
                os.close(fd)
            try:
                os.unlink(name, dir_fd=d)  # the link itself, never its target
            except FileNotFoundError:
                continue
            except OSError:  # a folder planted under the name
                raise RefusedEntry(errno.EISDIR, f"{self.path(*parts)} should be a file; remove it") from None
        raise RefusedEntry(errno.EAGAIN, f"{self.path(*parts)} keeps being replaced; try again")


def _missing_is_fine(_func: object, _path: str, exc_info: tuple[type[BaseException], BaseException, object]) -> None:
    if not isinstance(exc_info[1], FileNotFoundError):  # something else removed part of it: fine
        raise exc_info[1]
