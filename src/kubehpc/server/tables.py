"""Server-side printing: meta.k8s.io Tables, as ``kubectl get`` asks for them.

Columns come from the registry's printer columns. A kind without any gets the API server's
default table, NAME and AGE. Cells of ``date`` columns hold timestamps in the registry and are
rendered here as the API server renders ages ("5s", "3m20s", "4h", "2d"), so a watch event
printed now shows the age as of now.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from kubehpc.api.errors import BadRequest
from kubehpc.api.registry import PrinterColumn, ResourceType, VersionSpec

Obj = dict[str, Any]

_NAME_COLUMN = PrinterColumn(
    name="Name",
    type="string",
    format="name",
    json_path=".metadata.name",
    description="Name must be unique within a namespace.",
)
_AGE_COLUMN = PrinterColumn(
    name="Age",
    type="date",
    json_path=".metadata.creationTimestamp",
    description="CreationTimestamp is a timestamp representing the server time when this object was created.",
)
_TOKEN_RE = re.compile(
    r"""\.([\w-]+)|\[(\d+)\]|\[\?\(@\.([\w.-]+)\s*==\s*["']([^"']*)["']\)\]|\['([^']+)'\]"""
)


def human_duration(seconds: float) -> str:
    """k8s.io/apimachinery's duration.HumanDuration, which the API server uses for ages."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if days == 0 else f"{years}y{days}d"
    return f"{hours // 24 // 365}y"


def age(timestamp: Any, now: datetime | None = None) -> str:
    if not isinstance(timestamp, str) or not timestamp:
        return "<unknown>"
    try:
        then = datetime.fromisoformat(timestamp)
    except ValueError:
        return "<unknown>"
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return human_duration(((now or datetime.now(UTC)) - then).total_seconds())


def _is_timestamp(value: Any) -> bool:
    if not isinstance(value, str) or len(value) < 20 or value[4:5] != "-":
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def json_path_value(obj: Obj, path: str) -> Any:
    """Evaluate the simple JSONPath subset printer columns use: ``.a.b``, ``[0]``, ``['k']``,
    ``[?(@.type=="Ready")]`` (first match)."""
    cur: Any = obj
    pos = 0
    path = path.strip().removeprefix("{").removesuffix("}").strip()
    if path.startswith("$"):
        path = path[1:]
    while pos < len(path) and cur is not None:
        m = _TOKEN_RE.match(path, pos)
        if m is None:
            return None
        pos = m.end()
        key, index, filter_key, filter_value, quoted = m.groups()
        if key is not None or quoted is not None:
            cur = cur.get(key if key is not None else quoted) if isinstance(cur, dict) else None
        elif index is not None:
            i = int(index)
            cur = cur[i] if isinstance(cur, list) and i < len(cur) else None
        else:
            items = cur if isinstance(cur, list) else []
            wanted = f".{filter_key}"
            cur = next(
                (i for i in items if isinstance(i, dict) and str(json_path_value(i, wanted)) == filter_value),
                None,
            )
    return cur


class TableMaker:
    """Turns objects of one kind and version into Table rows."""

    def __init__(self, rt: ResourceType, vs: VersionSpec) -> None:
        columns = list(vs.printer_columns)
        if not columns:
            columns = [_AGE_COLUMN]
        if not any(c.name.lower() == "name" for c in columns):
            columns.insert(0, _NAME_COLUMN)
        self.columns = tuple(columns)
        self.definitions = [
            {
                "name": c.name,
                "type": c.type,
                "format": c.format,
                "description": c.description,
                "priority": c.priority,
            }
            for c in self.columns
        ]

    def cells(self, obj: Obj, now: datetime) -> list[Any]:
        out = []
        for c in self.columns:
            value = c.value(obj) if c.value is not None else json_path_value(obj, c.json_path)
            if c.type == "date" and value is not None:
                value = age(value, now)
            elif c.format == "duration-since" and _is_timestamp(value):
                # A running Job's DURATION: the start time, rendered as time elapsed since.
                value = age(value, now)
            out.append(value)
        return out

    def row(self, obj: Obj, include: str, now: datetime) -> Obj:
        row: Obj = {"cells": self.cells(obj, now)}
        if include == "Metadata":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata", {}),
            }
        elif include == "Object":
            row["object"] = obj
        return row

    def table(
        self,
        objs: list[Obj],
        include: str,
        metadata: Obj,
        table_version: str = "v1",
        with_definitions: bool = True,
    ) -> Obj:
        now = datetime.now(UTC)
        return {
            "kind": "Table",
            "apiVersion": f"meta.k8s.io/{table_version}",
            "metadata": metadata,
            "columnDefinitions": self.definitions if with_definitions else [],
            "rows": [self.row(o, include, now) for o in objs],
        }


def include_object(value: str | None) -> str:
    """The includeObject query parameter (Metadata by default, as on the API server)."""
    if value is None or value == "":
        return "Metadata"
    if value not in ("None", "Metadata", "Object"):
        raise BadRequest(f'invalid value for includeObject: "{value}" (allowed: None, Metadata, Object)')
    return value


def table_version(accept: str) -> str:
    """meta.k8s.io version of the first Table representation the client accepts."""
    for part in accept.split(","):
        if "as=Table" in part:
            return "v1beta1" if "v=v1beta1" in part else "v1"
    return "v1"
