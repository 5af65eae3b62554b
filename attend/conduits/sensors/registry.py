"""Which sensors a session has: the built-ins, then the script sensors config adds, each as the last
file that names it says (a project's ``-name:`` turns one off). Used by the loop and ``attend sensors``."""

from __future__ import annotations

from collections.abc import Mapping

from attend.conduits.sensors.base import Off, Sensor
from attend.conduits.sensors.builtin import Context, Disclosure, Keepwarm, Peers
from attend.conduits.sensors.script import Script
from attend.domain.settings import config, trust
from attend.domain.settings.config import Config


def built_ins() -> list[Sensor]:
    return [Peers(), Context(), Keepwarm(), Disclosure()]


def build(cfg: Config, env: Mapping[str, str]) -> list[Sensor]:
    out: list[Sensor] = []
    for sensor in built_ins():
        setting = cfg.sensors.get(sensor.name)
        if setting is not None and not setting.enabled:
            out.append(Off(sensor, setting.source))
            continue
        if setting is not None and setting.interval is not None:
            sensor.interval = max(sensor.min_interval, setting.interval)
            sensor.source = setting.source
        out.append(sensor)
    for name, setting in cfg.sensors.items():
        if name in config.BUILT_IN_SENSORS:
            continue
        if setting.script is None:  # a `-name:` that turned off a user's script sensor
            continue
        sha = cfg.digests.get(setting.source, "")
        script = Script(setting, trust.verdict(env, setting, sha), env, sha)
        if not setting.enabled:
            out.append(Off(script, setting.source))
        else:
            out.append(script)
    return out
