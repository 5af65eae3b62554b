"""The built-in senses: ``peers`` (served by the loop itself), ``context``, ``keepwarm`` and ``disclosure``."""

from __future__ import annotations

from attend.conduits import monitor
from attend.conduits.sensors.base import MESSAGE, Observation, Probe, Sensor
from attend.domain.attention import disclosure
from attend.domain.attention import keepwarm as warm
from attend.domain.sessions import mcp_markers, transcript
from attend.domain.settings.config import MIN_INTERVAL, Config
from attend.spool import Spool


class Peers(Sensor):
    """Messages and presence: the loop's own inotify path (paced, digests over 8); listed here so
    ``attend sensors`` shows every sense, never polled by the host."""

    name = "peers"
    lane = MESSAGE
    interval = 5.0  # the loop's housekeeping; messages themselves arrive by inotify at once
    min_interval = MIN_INTERVAL["peers"]
    description = "messages to this session, and peers starting and ending"
    passive = True


def session_transcript(probe: Probe) -> str | None:
    return transcript.of_session(probe.env, probe.who)


class Context(Sensor):
    """One line when the session's context crosses ``context.threshold`` percent of its window, once per
    crossing: it speaks again only after the context fell below (a compaction) and rose again."""

    name = "context"
    interval = 60.0
    min_interval = MIN_INTERVAL["context"]
    description = "the session's context nearing its window (compaction ahead)"

    def poll(self, probe: Probe) -> list[Observation]:
        usage = transcript.last_usage(session_transcript(probe))
        if usage is None:
            return []
        threshold = float(probe.config.get("context.threshold"))
        above = usage.percent >= threshold
        said = probe.state.get("said_for") == probe.sid and probe.state.get("above", False)
        probe.state.update(above=above, said_for=probe.sid, percent=usage.percent)
        if above and not said:
            return [Observation(f"context at {usage.percent}% — approaching compaction", "high")]
        return []


class Keepwarm(Sensor):
    """While armed (``attend keepwarm on``), one line ``keepwarm.idle_seconds`` into each idle stretch,
    before the prompt cache lapses (attend/domain/attention/keepwarm.py holds the rules)."""

    name = "keepwarm"
    lane = MESSAGE
    interval = 60.0
    min_interval = MIN_INTERVAL["keepwarm"]
    description = "one wake before the prompt cache lapses, while armed (attend keepwarm on)"

    priority = "medium"

    def poll(self, probe: Probe) -> list[Observation]:
        line = warm.check(probe.spool, probe.sid, session_transcript(probe), probe.config, probe.now)
        return [Observation(line, self.priority)] if line else []


def keepwarm_line(spool: Spool, sid: str, path: str | None, cfg: Config, now: float) -> str | None:
    """The keepwarm sensor's Monitor line when one is due, for the idle waiter, which wakes the session
    with it when no loop is live: the same text and the same once-per-stretch state as the loop's."""
    line = warm.check(spool, sid, path, cfg, now)
    return monitor.sensor_line(Keepwarm.name, Keepwarm.priority, line) if line else None


class Disclosure(Sensor):
    """The reheat (the judgment layer, ``skills/attend/reheat.md``) as one line: at the first message
    shown to the session, then at a message once ``disclosure.stretch`` has passed since it was last
    said, by anyone (attend/domain/attention/disclosure.py holds the rules; after a compaction the SessionStart
    hook says it and stamps it). Worded for MCP or the CLI by the presence marker when printed."""

    name = disclosure.NAME
    interval = 60.0
    min_interval = MIN_INTERVAL["disclosure"]
    description = "the judgment layer again: first message, after a compaction, once per stretch"

    def __init__(self) -> None:
        self.shown = False  # a message was shown since the last poll

    def next_interval(self) -> float:
        return float("inf")  # it speaks only at a message shown (``observe``), never on a timer

    def observe(self, event: str, probe: Probe) -> bool:
        """Asks for a poll only when the reheat is due, or the last decision recorded was to say it:
        a message that owes nothing costs one small read, no poll and no write (a hundred loops
        are woken by one broadcast)."""
        if event != "message":
            return False
        said = disclosure.last(probe.spool, probe.sid)
        if (
            disclosure.due(said, probe.now, disclosure.stretch(probe.config)) is None
            and probe.state.get("said") is False
        ):
            return False
        self.shown = True
        return True

    def poll(self, probe: Probe) -> list[Observation]:
        if not self.shown:
            return []
        self.shown = False
        mcp = mcp_markers.mcp_live(probe.spool, probe.sid)
        line = disclosure.take(probe.spool, probe.sid, probe.config, probe.now, mcp)
        probe.state["said"] = bool(line)  # the last decision, in sensors.json
        return [Observation(line, "low")] if line else []
