"""The host: schedules each sensor by its interval, passes what it observes through its lane's
governor, and writes the Monitor lines. A sensor that raises is reported once and rescheduled, never
fatal: the loop's messages must go on whatever a sense does.

What the sensors remember across the loop's restarts (Monitor re-arms it every 10 minutes) is one JSON
document per session, ``sessions/<sid>/sensors.json``: {sensor name: its state}; ``attend sensors``
reads a failing sensor's cause from it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from attend import layout, safejson
from attend.conduits import monitor
from attend.conduits.sensors.base import EVENT, MESSAGE, PRIORITIES, Observation, Probe, Sensor
from attend.conduits.sensors.governor import Governor
from attend.domain.settings.config import Config
from attend.errors import AttendError
from attend.identity import Identity
from attend.spool import Spool

TYPE_CHECKING = False  # typing only for mypy: every sensor loop imports this module
if TYPE_CHECKING:
    from typing import Any

HELD_LIMIT = 20  # observations an event lane holds at most; older ones are counted, not kept
LINE_LIMIT = 780  # characters of one folded event line (three Monitor chunks' worth)


@dataclass
class Session:
    spool: Spool
    who: Identity
    env: Mapping[str, str]
    config: Config


def read_states(spool: Spool, sid: str) -> dict[str, dict[str, Any]]:
    raw = spool.read_text(layout.SESSIONS, sid, layout.SENSOR_STATE)
    try:
        data = safejson.loads(raw) if raw else {}
    except ValueError:
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}


class Host:
    def __init__(
        self,
        sensors: list[Sensor],
        governors: dict[str, Governor],
        session: Callable[[], Session],
        write: Callable[[str], None],
        warn: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        align: Callable[[float], float] = float,
    ) -> None:
        self.sensors = sensors
        self.governors = governors
        self.session = session
        self.write = write
        self.warn = warn
        self.clock = clock
        self.wall = wall
        self.align = align  # the loop's: a poll due a tick or more away moves onto its timers' grid
        now = clock()
        self.due = {s.name: now for s in sensors if not s.passive}  # each polls once at start
        self.held: dict[str, list[tuple[str, Observation]]] = {MESSAGE: [], EVENT: []}
        self.dropped = {MESSAGE: 0, EVENT: 0}
        self.failing: dict[str, str] = {}
        self.states: dict[str, dict[str, Any]] | None = None
        self.states_sid = ""

    # ---------------------------------------------------------------- scheduling

    def next_due(self) -> float:
        """When the host next has work: a poll, or a held line its governor will let out."""
        now = self.clock()
        times = list(self.due.values())
        for lane, held in self.held.items():
            if held:
                times.append(self.governors[lane].next_allowed(now))
        return min(times) if times else float("inf")

    def tick(self) -> None:
        now = self.clock()
        ses = self.session()
        states = self._states(ses)
        before = json.dumps(states, sort_keys=True)
        for sensor in self.sensors:
            if sensor.passive or self.due.get(sensor.name, float("inf")) > now:
                continue
            probe = Probe(ses.spool, ses.who, ses.env, ses.config, self.wall(), states.setdefault(sensor.name, {}))
            self._poll(sensor, probe)
            self.due[sensor.name] = self.align(self.clock() + sensor.next_interval())
        self.release()
        if json.dumps(states, sort_keys=True) != before:
            ses.spool.write_state(
                json.dumps(states, sort_keys=True).encode(), layout.SESSIONS, ses.who.id, layout.SENSOR_STATE
            )

    def _states(self, ses: Session) -> dict[str, dict[str, Any]]:
        if self.states is None or self.states_sid != ses.who.id:  # first tick, or after a /clear
            self.states = read_states(ses.spool, ses.who.id)
            self.states_sid = ses.who.id
        return self.states

    def _poll(self, sensor: Sensor, probe: Probe) -> None:
        try:
            found = sensor.poll(probe)
        except (OSError, ValueError, KeyError, TypeError, AttendError) as e:
            cause = f"{type(e).__name__}: {e}"
            if self.failing.get(sensor.name) != cause:  # once per cause, not at every interval
                self.failing[sensor.name] = cause
                line = f"attend run: sensor {sensor.name} failed: {cause}"
                self.warn(line)
                probe.spool.log(line)
            return
        self.failing.pop(sensor.name, None)
        held = self.held[sensor.lane]
        held.extend((sensor.name, o) for o in found)
        if len(held) > HELD_LIMIT:
            self.dropped[sensor.lane] += len(held) - HELD_LIMIT
            del held[: len(held) - HELD_LIMIT]

    # ---------------------------------------------------------------- the lanes

    def release(self) -> None:
        """Let out what the governors allow: message-lane observations one line each, the event
        lane's whole backlog as one line."""
        now = self.clock()
        gov, held = self.governors[MESSAGE], self.held[MESSAGE]
        while held and gov.allows(now):
            name, obs = held.pop(0)
            self.write(monitor.sensor_line(name, obs.priority, obs.text))
            gov.record(now)
        gov, held = self.governors[EVENT], self.held[EVENT]
        if held and gov.allows(now):
            self.write(fold(held, self.dropped[EVENT]))
            gov.record(now)
            held.clear()
            self.dropped[EVENT] = 0

    def observe(self, event: str) -> None:
        ses = self.session()
        states = self._states(ses)
        for sensor in self.sensors:
            if sensor.passive:
                continue
            probe = Probe(ses.spool, ses.who, ses.env, ses.config, self.wall(), states.setdefault(sensor.name, {}))
            if sensor.observe(event, probe):
                self.due[sensor.name] = min(self.due.get(sensor.name, float("inf")), self.clock())

    def close(self) -> None:
        for sensor in self.sensors:
            sensor.close()


def fold(held: list[tuple[str, Observation]], dropped: int = 0) -> str:
    """One line for an event-lane backlog: the highest priority, each observation named by its sensor
    when more than one sensor speaks, cut at LINE_LIMIT with a count of what was left out."""
    names = list(dict.fromkeys(name for name, _ in held))
    priority = max((o.priority for _, o in held), key=lambda p: PRIORITIES.index(p) if p in PRIORITIES else 0)
    texts = [monitor.one_line(o.text) if len(names) == 1 else f"{n}: {monitor.one_line(o.text)}" for n, o in held]
    text = ""
    left = dropped
    for i, t in enumerate(texts):
        candidate = f"{text} · {t}" if text else t
        if len(candidate) > LINE_LIMIT and text:
            left += len(texts) - i
            break
        text = candidate[:LINE_LIMIT]
    if left:
        text += f" (+{left} more held)"
    return monitor.sensor_line("+".join(names), priority, text)


def for_loop(
    cfg: Config,
    env: Mapping[str, str],
    session: Callable[[], Session],
    write: Callable[[str], None],
    warn: Callable[[str], None],
    align: Callable[[float], float] = float,
) -> Host:
    """The loop's host: the sensors config names, and one governor per lane from config."""
    from attend.conduits.sensors import registry

    governors = {lane: Governor.from_config(cfg, lane) for lane in (MESSAGE, EVENT)}
    return Host(registry.build(cfg, env), governors, session, write, warn, align=align)
