"""``kubehpc describe TYPE NAME``: an object for people to read, followed by its Events.

The layout follows kubectl's generic describer (the one it uses for custom resources):
metadata first, then every other top-level field as nested "Title Case" fields, conditions
as a table, and the Events that name the object, oldest first.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from rich.markup import escape

from kubehpc.api.errors import ApiError
from kubehpc.cli import printers
from kubehpc.cli.session import CliError, Session
from kubehpc.cli.targets import parse_targets
from kubehpc.kube.rest import RestClient
from kubehpc.store.client import ListOptions

_SKIP_METADATA = {"managedFields", "name", "namespace", "labels", "annotations", "ownerReferences"}
# Maps whose keys are data (label keys, resource names), printed as they are, not title-cased.
_DATA_MAPS = {
    "labels",
    "annotations",
    "matchLabels",
    "nodeSelector",
    "data",
    "binaryData",
    "stringData",
    "limits",
    "requests",
    "capacity",
    "allocatable",
    "hard",
    "used",
    "resources",
}
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("describe", parents=[common], help="show an object in detail, with its events")
    p.add_argument("resource", nargs="+", metavar="TYPE[/NAME] [NAME...]")
    p.add_argument("-l", "--selector", default="", help="describe every object matching this label selector")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="look in every namespace")
    p.set_defaults(run=run)


def title(key: str) -> str:
    """``backoffLimit`` -> ``Backoff Limit``, as kubectl's generic describer prints keys."""
    words = _CAMEL.sub(" ", key).split(" ")
    return " ".join(w[:1].upper() + w[1:] for w in words if w)


def _scalar(value: Any) -> str:
    return printers.cell_text(value) if not isinstance(value, str) else value


def _field_lines(value: Any, indent: int, out: list[str], raw_keys: bool = False) -> None:
    pad = "  " * indent
    if isinstance(value, dict):
        name = (lambda k: k) if raw_keys else title
        width = max((len(name(k)) for k in value), default=0) + 2
        for key, sub in value.items():
            label = f"{name(key)}:"
            if isinstance(sub, dict | list) and sub:
                out.append(f"{pad}{label}")
                _field_lines(sub, indent + 1, out, raw_keys=isinstance(sub, dict) and key in _DATA_MAPS)
            else:
                text = _scalar(sub) if sub not in ({}, []) else "<none>"
                out.extend(_multiline(f"{pad}{label.ljust(width)}", text, pad))
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict | list):
                _field_lines(item, indent, out)
            else:
                out.append(f"{pad}{_scalar(item)}")


def _multiline(head: str, text: str, pad: str) -> list[str]:
    lines = text.splitlines() or [""]
    return [head + lines[0]] + [f"{pad}  {line}" for line in lines[1:]]


def _pad(label: str, width: int) -> str:
    """``label`` padded to ``width``, always followed by at least two spaces."""
    return label + " " * max(width - len(label), 2)


def _map_lines(label: str, mapping: dict[str, Any], width: int) -> list[str]:
    if not mapping:
        return [f"{_pad(label, width)}<none>"]
    out = []
    for i, (k, v) in enumerate(sorted(mapping.items())):
        head = _pad(label, width) if i == 0 else " " * width
        text = str(v).strip()
        out.append(f"{head}{k}={text}" if label == "Labels:" else f"{head}{k}: {text}")
    return out


def describe_lines(obj: dict[str, Any]) -> list[str]:
    """The object part of ``describe``, one string per line."""
    meta = obj.get("metadata") or {}
    width = 14
    lines = [f"{_pad('Name:', width)}{meta.get('name', '')}"]
    if meta.get("namespace"):
        lines.append(f"{_pad('Namespace:', width)}{meta['namespace']}")
    lines += _map_lines("Labels:", meta.get("labels") or {}, width)
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k != printers.LAST_APPLIED}
    lines += _map_lines("Annotations:", annotations, width)
    owner = next((o for o in meta.get("ownerReferences") or [] if o.get("controller")), None)
    if owner:
        lines.append(f"{_pad('Controlled By:', width)}{owner.get('kind')}/{owner.get('name')}")
    lines.append(f"{_pad('API Version:', width)}{obj.get('apiVersion', '')}")
    lines.append(f"{_pad('Kind:', width)}{obj.get('kind', '')}")
    rest_meta = {k: v for k, v in meta.items() if k not in _SKIP_METADATA}
    if rest_meta:
        lines.append("Metadata:")
        _field_lines(rest_meta, 1, lines)
    for key, value in obj.items():
        if key in ("apiVersion", "kind", "metadata"):
            continue
        if key == "status" and isinstance(value, dict) and value.get("conditions"):
            value = {k: v for k, v in value.items() if k != "conditions"}
            lines.append("Status:")
            _field_lines(value, 1, lines)
            lines += conditions_lines(obj["status"]["conditions"])
            continue
        if isinstance(value, dict | list) and value:
            lines.append(f"{title(key)}:")
            _field_lines(value, 1, lines, raw_keys=key in _DATA_MAPS)
        else:
            lines.append(f"{_pad(title(key) + ':', width)}{_scalar(value)}")
    return lines


def _aligned(headers: list[str], rows: list[list[str]], indent: str) -> list[str]:
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    underline = ["-" * len(h) for h in headers]
    out = []
    for row in [headers, underline, *rows]:
        out.append(indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    return out


def conditions_lines(conditions: list[dict[str, Any]]) -> list[str]:
    headers = ["Type", "Status", "Reason", "Message", "Last Transition Time"]
    rows = [
        [
            str(c.get("type", "")),
            str(c.get("status", "")),
            str(c.get("reason", "")),
            str(c.get("message", "")),
            str(c.get("lastTransitionTime", "")),
        ]
        for c in conditions
    ]
    return ["  Conditions:", *_aligned(headers, rows, "    ")]


def events_for(client: RestClient, obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Events whose involvedObject is ``obj``, oldest first."""
    meta = obj.get("metadata") or {}
    name, ns, uid = meta.get("name", ""), meta.get("namespace") or "", meta.get("uid", "")
    selector = f"involvedObject.name={name}"
    if ns:
        selector += f",involvedObject.namespace={ns}"
    try:
        items = client.list("v1", "Event", ListOptions(namespace=ns or None, field_selector=selector)).items
    except ApiError:
        # A server that cannot select events by involvedObject: filter here instead.
        items = client.list("v1", "Event", ListOptions(namespace=ns or None)).items
    kind = obj.get("kind", "")
    mine = [
        e
        for e in items
        if (e.get("involvedObject") or {}).get("name") == name
        and (e.get("involvedObject") or {}).get("kind", kind) == kind
        and (not uid or (e.get("involvedObject") or {}).get("uid", uid) == uid)
    ]
    mine.sort(key=event_time)
    return mine


def event_time(event: dict[str, Any]) -> str:
    return str(
        event.get("lastTimestamp")
        or (event.get("series") or {}).get("lastObservedTime")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or (event.get("metadata") or {}).get("creationTimestamp")
        or ""
    )


def event_age(event: dict[str, Any]) -> str:
    """``5s``, or kubectl's ``5s (x3 over 2m)`` for a repeated event."""
    last = printers.age(event_time(event))
    count = int(event.get("count") or (event.get("series") or {}).get("count") or 1)
    first = event.get("firstTimestamp") or event.get("eventTime")
    if count > 1 and first:
        return f"{last} (x{count} over {printers.age(str(first))})"
    return last


def event_source(event: dict[str, Any]) -> str:
    source = event.get("source") or {}
    parts = [
        source.get("component") or event.get("reportingComponent") or event.get("reportingController") or ""
    ]
    if source.get("host"):
        parts.append(source["host"])
    return ", ".join(p for p in parts if p)


def events_lines(events: list[dict[str, Any]]) -> list[str]:
    if not events:
        return ["Events:  <none>"]
    rows = [
        [
            str(e.get("type", "")),
            str(e.get("reason", "")),
            event_age(e),
            event_source(e),
            str(e.get("message", "")),
        ]
        for e in events
    ]
    return ["Events:", *_aligned(["Type", "Reason", "Age", "From", "Message"], rows, "  ")]


def run(session: Session, args: argparse.Namespace) -> int:
    client = session.client()
    targets = parse_targets(args.resource)
    objs: list[dict[str, Any]] = []
    for target in targets:
        info = client.resolve(target.type)
        ns = None if (args.all_namespaces or not info.namespaced) else session.namespace()
        if target.names:
            for name in target.names:
                objs.append(client.get(info.api_version, info.kind, name, ns or session.namespace()))
        else:
            listed = client.list(
                info.api_version, info.kind, ListOptions(namespace=ns, label_selector=args.selector)
            )
            objs += listed.items
            for obj in listed.items:
                obj.setdefault("kind", info.kind)
                obj.setdefault("apiVersion", info.api_version)
    if not objs:
        raise CliError("no resources found")
    console = session.out
    for i, obj in enumerate(objs):
        if i:
            console.print()
        lines = describe_lines(obj) + events_lines(events_for(client, obj))
        for line in lines:
            head, sep, tail = line.partition(":")
            if sep and not line.startswith(" "):
                console.print(f"[bold]{escape(head)}:[/bold]{escape(tail)}", crop=False, overflow="ignore")
            else:
                console.print(escape(line), crop=False, overflow="ignore")
    return 0
