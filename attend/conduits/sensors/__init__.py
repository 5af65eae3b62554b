"""The sensor host of ``attend run``: the loop's senses beside peer messages (docs/architecture/sensors.md).

A sensor has a name, a kind (built-in or script), a lane (``message`` or ``event``), an interval and
the least interval config may set, and a poll that returns observations. Each lane has a governor; an
observation becomes a Monitor line ``[attend sensor=<name> priority=<p>] …`` when its lane allows.
"""

from attend.conduits.sensors.base import EVENT, MESSAGE, Observation, Probe, Sensor
from attend.conduits.sensors.governor import Governor
from attend.conduits.sensors.host import Host

__all__ = ["EVENT", "MESSAGE", "Governor", "Host", "Observation", "Probe", "Sensor"]
