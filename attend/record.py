"""``Record``: ``typing.NamedTuple``'s class syntax without importing ``typing`` or ``dataclasses``.

The hot paths (`attend send`, the drain) are held to a few interpreter starts, and ``dataclasses``
(which imports ``inspect``) costs more than the rest of the send path together, each class another
0.4 ms; ``typing`` ~3 ms. The value types those paths build (an identity, a signal, an enrollment)
are immutable, so a named tuple made by ``collections.namedtuple`` (already loaded by ``re``) serves:
mypy reads ``Record`` as ``typing.NamedTuple``; at run time this 20-line metaclass does what
``typing``'s does. ``record._replace(field=…)`` is ``dataclasses.replace``.
"""

from __future__ import annotations

import collections

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple as Record
else:

    class _RecordMeta(type):
        def __new__(mcls, name, bases, ns):
            if not bases:
                return super().__new__(mcls, name, bases, ns)
            fields = list(ns.get("__annotations__", {}))
            defaults = [ns[f] for f in fields if f in ns]
            cls = collections.namedtuple(name, fields, defaults=defaults, module=ns["__module__"])
            for key, value in ns.items():  # methods, properties, class constants and the docstring
                if key not in fields and key not in ("__annotations__", "__module__", "__qualname__"):
                    setattr(cls, key, value)
            cls.__qualname__ = ns["__qualname__"]
            return cls

    class Record(metaclass=_RecordMeta):
        __slots__ = ()


__all__ = ["Record"]
