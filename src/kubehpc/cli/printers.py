"""Output formats shared by the verbs: -o yaml|json|name|jsonpath=..., server Tables, ages."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import IO, Any

import yaml
from rich.console import Console
from rich.table import Table

from kubehpc.cli import jsonpath
from kubehpc.cli.session import CliError
from kubehpc.kube.rest import ResourceInfo

OBJECT_FORMATS = ("yaml", "json", "name")
# The annotation client-side apply keeps; describe hides it, as kubectl does.
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def check_output_format(output: str | None, allowed: Sequence[str]) -> None:
    if not output:
        return
    name = output.partition("=")[0]
    if name not in allowed:
        raise CliError(
            f'unable to match a printer suitable for the output format "{output}", '
            f"allowed formats are: {','.join(allowed)}"
        )


class _Dumper(yaml.SafeDumper):
    pass


def _str_presenter(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # Multi-line strings (scripts, last-applied JSON) read best as literal blocks.
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str_presenter)


def to_yaml(obj: Any) -> str:
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=True, default_flow_style=False, allow_unicode=True)


def to_json(obj: Any) -> str:
    return json.dumps(obj, indent=4, ensure_ascii=False)


def as_list(items: list[dict[str, Any]]) -> dict[str, Any]:
    """kubectl's wrapper for several objects under -o yaml/json."""
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def object_name(info: ResourceInfo, obj: dict[str, Any]) -> str:
    """``job.batch/pi``: the -o name form, also used in apply/wait messages."""
    return f"{info.type_name}/{(obj.get('metadata') or {}).get('name', '')}"


def print_objects(
    stream: IO[str], output: str, info: ResourceInfo, objs: list[dict[str, Any]], single: bool
) -> None:
    """Print objects in an object format; ``single`` prints one object bare, not in a List."""
    for obj in objs:
        obj.setdefault("apiVersion", info.api_version)
        obj.setdefault("kind", info.kind)
    doc: Any = objs[0] if single and len(objs) == 1 else as_list(objs)
    if output == "yaml":
        stream.write(to_yaml(doc))
    elif output == "json":
        stream.write(to_json(doc) + "\n")
    elif output == "name":
        for obj in objs:
            stream.write(object_name(info, obj) + "\n")
    elif output.startswith("jsonpath="):
        template = output[len("jsonpath=") :]
        try:
            stream.write(jsonpath.render(template, doc))
        except jsonpath.JsonPathError as exc:
            raise CliError(f"error executing jsonpath {template!r}: {exc}") from None
    else:
        raise CliError(f"unknown output format {output!r}")
    stream.flush()


def age(timestamp: str, now: datetime | None = None) -> str:
    """Kubernetes' short human duration since ``timestamp`` (5s, 3m2s, 4h, 2d3h, 400d)."""
    if not timestamp:
        return "<unknown>"
    try:
        then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return "<invalid>"
    seconds = int(((now or datetime.now(UTC)) - then).total_seconds())
    return human_duration(seconds)


def human_duration(seconds: int) -> str:
    if seconds < 0:
        return "<invalid>"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    return f"{days // 365}y{days % 365}d" if days < 365 * 8 else f"{days // 365}y"


def plain_table(headers: Sequence[str], rows: Sequence[Sequence[str]], show_header: bool = True) -> Table:
    """A table that prints like kubectl's: no borders, columns three spaces apart."""
    table = Table(
        box=None, show_header=show_header, pad_edge=False, padding=(0, 3, 0, 0), header_style="bold"
    )
    for h in headers:
        table.add_column(h, no_wrap=True, overflow="ignore")
    for row in rows:
        table.add_row(*row)
    return table


def cell_text(value: Any) -> str:
    if value is None:
        return "<none>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def labels_text(obj: dict[str, Any] | None) -> str:
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>"


def table_rows(
    table: dict[str, Any],
    wide: bool,
    namespace_column: bool = False,
    show_labels: bool = False,
    kind_prefix: str = "",
) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of a server Table: priority-0 columns (all with -o wide), a NAMESPACE
    column first with -A and LABELS last with --show-labels, as kubectl adds them."""
    columns = table.get("columnDefinitions") or []
    keep = [i for i, c in enumerate(columns) if wide or int(c.get("priority", 0) or 0) == 0]
    headers = [str(columns[i].get("name", "")).upper() for i in keep]
    if namespace_column:
        headers.insert(0, "NAMESPACE")
    if show_labels:
        headers.append("LABELS")
    rows = []
    for row in table.get("rows") or []:
        cells = row.get("cells") or []
        values = [cell_text(cells[i]) if i < len(cells) else "" for i in keep]
        if kind_prefix and values:
            values[0] = f"{kind_prefix}/{values[0]}"
        obj = row.get("object") or {}
        if namespace_column:
            values.insert(0, str((obj.get("metadata") or {}).get("namespace", "")))
        if show_labels:
            values.append(labels_text(obj))
        rows.append(values)
    return headers, rows


def print_table(
    console: Console, headers: Sequence[str], rows: Sequence[Sequence[str]], show_header: bool = True
) -> None:
    table = plain_table(headers, rows, show_header)
    if console.is_terminal:
        console.print(table, crop=False)
        return
    # Off a terminal: plain text without the cell padding rich leaves at line ends.
    with console.capture() as captured:
        console.print(table, crop=False)
    text = "\n".join(line.rstrip() for line in captured.get().splitlines())
    console.file.write(text + "\n")
    console.file.flush()
