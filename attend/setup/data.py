"""The data shipped in the wheel: ``settings/``, ``hooks/`` and ``skills/``.

The wheel force-includes the repository's ``settings/``, ``hooks/`` and ``skills/`` as
``attend/_data/…``; an editable install has no ``_data``, so the repository root next to the
package is the fallback. Both are read the same way, as plain files.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def data_dir(name: str) -> Path:
    """The shipped folder ``name`` (``settings``, ``hooks`` or ``skills``)."""
    packaged = Path(str(resources.files("attend"))) / "_data" / name
    if packaged.is_dir():
        return packaged
    source = Path(__file__).resolve().parents[2] / name  # attend/setup/data.py -> the repository
    if source.is_dir():
        return source
    raise FileNotFoundError(f"attend's shipped data folder {name!r} is missing; reinstall attend")


def data_file(*parts: str) -> Path:
    return data_dir(parts[0]).joinpath(*parts[1:])
