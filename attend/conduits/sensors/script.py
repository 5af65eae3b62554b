"""Script sensors: ``sensors: {+name: {script: …, interval: 30}}`` runs a command each interval; each
line it prints is one observation (event lane).

- The command is an argv (a list, or one line split into words by shlex): no shell ever sees it,
  so nothing in it, in its output or in the spool is expanded or run.
- The loop never waits on it: the process is started at one tick and collected at later ones
  (``POLL_RUNNING`` apart), its output read without blocking and capped.
- One that fails (exit status), hangs (past its timeout: its process group is killed) or floods
  (more than MAX_LINES lines or MAX_BYTES bytes) is reported once, as one observation and a log line,
  then backed off, doubling up to BACKOFF_CAP; one good run resets it.
- A project overlay's script runs only once the user approved it (``attend sensors trust``): the
  file's text, the exact argv and the bytes of every project file the argv names
  (attend.domain.settings.trust). Each run checks them first; a change makes it untrusted again, said in one
  line. Until approved, and while the command is missing, it is listed and never run.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Mapping

from attend.conduits.sensors.base import EVENT, SCRIPT, Observation, Probe, Sensor
from attend.domain.settings import trust
from attend.domain.settings.config import MIN_SCRIPT_INTERVAL, SensorSetting

TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from typing import IO

# subprocess and shutil (which brings zlib, bz2 and lzma) are imported only where a script sensor is
# resolved or run: every sensor loop imports this module, and most configure no script (~2 MB each).

MAX_LINES = 10  # observations one run may make; more is a flood
MAX_BYTES = 16 * 1024
POLL_RUNNING = 0.5  # seconds between looks at a running script
BACKOFF_CAP = 1800.0
STDERR_SHOWN = 120  # characters of a failing script's stderr quoted in its report


def resolve(argv: tuple[str, ...], base: str, env: Mapping[str, str]) -> str | None:
    """The executable argv[0] names: a path (relative to the file that defines the sensor) or a
    command on PATH; None when there is none."""
    import shutil

    first = argv[0]
    if "/" in first:
        path = first if os.path.isabs(first) else os.path.join(base, first)
        return shutil.which(path)
    return shutil.which(first, path=env.get("PATH") or os.defpath)


def _drain(stream: IO[bytes] | None, limit: int) -> bytes:
    got = b""
    while stream is not None and len(got) < limit:
        try:
            chunk = os.read(stream.fileno(), 4096)  # the raw pipe: a buffered read would hide "no data yet"
        except BlockingIOError:
            break
        if not chunk:
            break
        got += chunk
    return got


class Script(Sensor):
    kind = SCRIPT
    lane = EVENT
    min_interval = MIN_SCRIPT_INTERVAL

    def __init__(
        self, setting: SensorSetting, untrusted: str | None, env: Mapping[str, str], config_sha: str = ""
    ) -> None:
        """``untrusted``: why the sensor may not run (trust.verdict), None when it may."""
        assert setting.script is not None
        self.name = setting.name
        self.setting = setting
        self.argv = setting.script
        self.interval = setting.interval or 30.0
        self.timeout = setting.timeout
        self.description = setting.description or " ".join(self.argv)
        self.source = setting.source
        self.trusted = untrusted is None
        self.untrusted = untrusted or ""
        self.config_sha = config_sha  # the text of the file that defines it, as the loop read it
        self.executable = resolve(self.argv, setting.base, env)
        self.passive = not self.trusted or self.executable is None  # never run: listed only
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0
        self.out = b""
        self.err = b""
        self.failures = 0
        self.why = ""  # the cause of the current failure, reported once

    def state(self) -> tuple[str, str]:
        if not self.trusted:
            return ("untrusted", self.untrusted)
        if self.executable is None:
            return ("missing script", f"{self.argv[0]} is not an executable file or a command on PATH")
        if self.why:
            return ("failing", self.why)
        return ("on", "")

    def next_interval(self) -> float:
        if self.proc is not None:
            return POLL_RUNNING
        if self.failures:
            return min(BACKOFF_CAP, self.interval * 2.0**self.failures)
        return self.interval

    def poll(self, probe: Probe) -> list[Observation]:
        if self.proc is None:
            return self._start(probe)
        self._read()
        if len(self.out) > MAX_BYTES or self.out.count(b"\n") > MAX_LINES:
            self._kill()
            return self._failed(probe, f"flooded (more than {MAX_LINES} lines or {MAX_BYTES} bytes in one run)")
        code = self.proc.poll()
        if code is None:
            if time.monotonic() - self.started > self.timeout:
                self._kill()
                return self._failed(probe, f"hung (still running after {self.timeout:g}s; killed)")
            return []
        self._read()
        err = self.err
        self._reap()
        if code != 0:
            detail = " ".join(err.decode("utf-8", "replace").split())[:STDERR_SHOWN]
            return self._failed(probe, f"exit status {code}" + (f": {detail}" if detail else ""))
        lines = [ln.strip() for ln in self.out.decode("utf-8", "replace").splitlines() if ln.strip()]
        if len(lines) > MAX_LINES:
            return self._failed(probe, f"flooded (more than {MAX_LINES} lines in one run)")
        if self.why:
            probe.spool.log(f"sensor {self.name}: recovered")
        self.failures, self.why = 0, ""
        probe.state.pop("failing", None)
        return [Observation(line, "medium") for line in lines]

    def _start(self, probe: Probe) -> list[Observation]:
        import subprocess

        assert self.executable is not None
        if self.setting.project:  # the bytes that run are the ones approved, checked at every run
            why = trust.verdict(probe.env, self.setting, self.config_sha)
            if why is not None:
                self.trusted, self.passive, self.untrusted = False, True, why
                probe.spool.log(f"sensor {self.name}: not run: {why}")
                return [Observation(f"script sensor {self.name} not run: {why}", "low")]
        env = dict(probe.env)
        env.update(ATTEND_SENSOR=self.name, ATTEND_SESSION_ID=probe.sid)
        if self.setting.project:  # the module that runs is the pinned source, never a planted cache
            key, value = trust.NO_BYTECODE.split("=", 1)
            env[key] = value
        self.out = self.err = b""
        self.started = time.monotonic()
        try:
            self.proc = subprocess.Popen(  # an argv, never a shell line
                [self.executable, *self.argv[1:]],
                cwd=probe.who.origin,  # the session's project, whichever file defined the sensor
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,  # its own process group: a hung script is killed with its children
            )
        except OSError as e:
            return self._failed(probe, f"cannot start: {e.strerror or e}")
        for stream in (self.proc.stdout, self.proc.stderr):
            assert stream is not None
            os.set_blocking(stream.fileno(), False)
        return []

    def _read(self) -> None:
        """What the script wrote so far, without blocking; stderr is drained too (a full pipe would
        hang the script), and both are capped."""
        if self.proc is None:
            return
        self.out += _drain(self.proc.stdout, MAX_BYTES + 1 - len(self.out))
        self.err = (self.err + _drain(self.proc.stderr, MAX_BYTES))[-STDERR_SHOWN * 4 :]

    def _failed(self, probe: Probe, why: str) -> list[Observation]:
        self.failures += 1
        first = self.why != why
        self.why = why
        probe.state["failing"] = why
        if not first:
            return []  # reported once; `attend sensors` shows it until a good run
        wait = min(BACKOFF_CAP, self.interval * 2.0**self.failures)
        probe.spool.log(f"sensor {self.name}: {why}")
        return [Observation(f"script sensor {self.name} {why}; next try in {wait:g}s (attend sensors)", "low")]

    def _kill(self) -> None:
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self._reap()

    def _reap(self) -> None:
        if self.proc is None:
            return
        import subprocess  # loaded already: a process was started

        proc, self.proc = self.proc, None
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()

    def close(self) -> None:
        self._kill()
