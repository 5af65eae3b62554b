"""Output schemas for the MCP tools, derived from the verbs' result dataclasses.

The verbs stay free of pydantic and mcp: their results are plain dataclasses, and the CLI's ``--json``
is ``dataclasses.asdict`` of them. Here each result class becomes a pydantic model with the same
fields plus the optional ``notifications`` trailer (docs/architecture/mcp.md), so the published outputSchema and
the ``--json`` document are one shape by construction. Only ``attend.mcp.server`` imports this.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model


class NotifyItem(BaseModel):
    """One nudge: enough to decide whether to read the record, never the record itself."""

    source: str  # "attention" | "subscription"
    kind: str
    id: str
    project_id: str | None = None
    title: str
    at: str


class Notifications(BaseModel):
    pending: list[NotifyItem]


def result_model(cls: type[Any]) -> type[BaseModel]:
    """A pydantic model with the dataclass's fields, and ``notifications`` as an optional member."""
    hints = typing.get_type_hints(cls)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            fields[f.name] = (hints[f.name], f.default)
        elif f.default_factory is not dataclasses.MISSING:
            fields[f.name] = (hints[f.name], Field(default_factory=f.default_factory))
        else:
            fields[f.name] = (hints[f.name], ...)
    # The CLI's --json adds an empty warnings list to a result that lacks one; so does the schema.
    fields.setdefault("warnings", (list[str], Field(default_factory=list)))
    fields["notifications"] = (Notifications | None, None)
    model: type[BaseModel] = create_model(cls.__name__, __config__=ConfigDict(extra="forbid"), __doc__=None, **fields)
    return model
