"""The sensor interface: what every sense of the loop is, and what a poll may look at."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from attend.domain.settings.config import Config
from attend.identity import Identity
from attend.spool import Spool

TYPE_CHECKING = False  # typing only for mypy: every sensor loop imports this module
if TYPE_CHECKING:
    from typing import Any

MESSAGE = "message"  # peers, keepwarm: the permissive governor
EVENT = "event"  # everything else: the strict governor, held observations folded into one line
BUILT_IN = "built-in"
SCRIPT = "script"
PRIORITIES = ("low", "medium", "high")


@dataclass(frozen=True)
class Observation:
    text: str  # one line's worth; the host folds it to one line whatever it holds
    priority: str = "medium"  # low | medium | high


@dataclass
class Probe:
    """What a poll may look at, built by the host at each tick: the session, its config, the clock."""

    spool: Spool
    who: Identity
    env: Mapping[str, str]
    config: Config
    now: float  # wall clock, epoch seconds (transcripts and arm files are in wall time)
    state: dict[str, Any] = field(default_factory=dict)  # this sensor's remembered state (sensors.json)

    @property
    def sid(self) -> str:
        return self.who.id


class Sensor:
    """One sense. Subclasses set the class attributes and override ``poll``; the host schedules it
    every ``interval`` seconds (``next_interval`` may stretch that: a failing script backs off)."""

    name = ""
    kind = BUILT_IN
    lane = EVENT
    interval = 60.0
    min_interval = 1.0  # config may not set an interval below this (``config lint`` says so)
    description = ""
    source = "built-in"  # where it is defined: built-in, or the config file
    passive = False  # served by the loop itself (peers): listed, never polled

    def poll(self, probe: Probe) -> list[Observation]:
        return []

    def next_interval(self) -> float:
        return self.interval

    def state(self) -> tuple[str, str]:
        """(on | off | failing | missing script | untrusted, why): what ``attend sensors`` shows."""
        return ("on", "")

    def observe(self, event: str, probe: Probe) -> bool:
        """A loop event: ``message`` when a message was shown. True asks the host to poll this sensor
        now rather than at its interval. The disclosure sensor (first message, then once per stretch)
        listens here; most sensors ignore it."""
        return False

    def close(self) -> None:
        """The loop is ending: stop anything the sensor started."""


class Off(Sensor):
    """A sensor config turned off: listed, never polled."""

    passive = True

    def __init__(self, of: Sensor, source: str) -> None:
        self.name, self.kind, self.lane = of.name, of.kind, of.lane
        self.interval, self.min_interval, self.description = of.interval, of.min_interval, of.description
        self.source = source

    def state(self) -> tuple[str, str]:
        return ("off", "")
