"""A lane's governor: a cooldown between two lines and a cap per sliding window, as the original.

The message lane is permissive (3 s, 30 per 60 s), the event lane strict (15 s, 3 per 120 s): what
the event lane holds back accumulates and comes out as one line when the governor allows.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from attend.domain.settings.config import Config


@dataclass
class Governor:
    cooldown: float
    max_per_window: int
    window: float
    sent: deque[float] = field(default_factory=deque)  # monotonic times of the lines in the window

    @classmethod
    def from_config(cls, cfg: Config, lane: str) -> Governor:
        k = f"governor.{lane}."
        return cls(float(cfg.get(k + "cooldown")), int(cfg.get(k + "max_per_window")), float(cfg.get(k + "window")))

    def _trim(self, now: float) -> None:
        while self.sent and self.sent[0] <= now - self.window:
            self.sent.popleft()

    def next_allowed(self, now: float) -> float:
        """The earliest time a line may go out (``now`` when it may go now)."""
        self._trim(now)
        at = now
        if self.sent:
            at = max(at, self.sent[-1] + self.cooldown)
        if len(self.sent) >= self.max_per_window:
            at = max(at, self.sent[len(self.sent) - self.max_per_window] + self.window)
        return at

    def allows(self, now: float) -> bool:
        return self.next_allowed(now) <= now

    def record(self, now: float) -> None:
        self.sent.append(now)
