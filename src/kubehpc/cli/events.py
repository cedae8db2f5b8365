"""``kubehpc events``: the Events of a namespace, or of one object, as ``kubectl events`` lists them."""

from __future__ import annotations

import argparse
from typing import Any

from kubehpc.cli import printers
from kubehpc.cli.describe import event_time
from kubehpc.cli.session import CliError, Session
from kubehpc.store.client import ListOptions


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("events", parents=[common], help="list events, oldest first")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="events of every namespace")
    p.add_argument(
        "--for", dest="for_object", default="", metavar="TYPE/NAME", help="only events about this object"
    )
    p.add_argument("--types", default="", help="only these types, comma separated (Normal,Warning)")
    p.add_argument("-w", "--watch", action="store_true", help="after listing, watch for new events")
    p.set_defaults(run=run)


def _row(event: dict[str, Any], all_ns: bool) -> list[str]:
    involved = event.get("involvedObject") or {}
    last = printers.age(event_time(event))
    row = [
        last,
        str(event.get("type", "")),
        str(event.get("reason", "")),
        f"{involved.get('kind', '')}/{involved.get('name', '')}",
        str(event.get("message", "")).strip(),
    ]
    if all_ns:
        row.insert(0, str((event.get("metadata") or {}).get("namespace", "")))
    return row


def run(session: Session, args: argparse.Namespace) -> int:
    client = session.client()
    namespace = None if args.all_namespaces else session.namespace()
    selector = ""
    if args.for_object:
        kind, sep, name = args.for_object.partition("/")
        if not sep or not name:
            raise CliError("--for must be TYPE/NAME, e.g. --for pod/pi-abc12")
        info = client.resolve(kind)
        selector = f"involvedObject.kind={info.kind},involvedObject.name={name}"
    types = {t.strip().lower() for t in args.types.split(",") if t.strip()}
    listed = client.list("v1", "Event", ListOptions(namespace=namespace, field_selector=selector))
    events = [e for e in listed.items if not types or str(e.get("type", "")).lower() in types]
    events.sort(key=event_time)
    headers = ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    if args.all_namespaces:
        headers.insert(0, "NAMESPACE")
    if events:
        printers.print_table(session.out, headers, [_row(e, args.all_namespaces) for e in events])
    elif not args.watch:
        where = f" in {namespace} namespace" if namespace else ""
        print(f"No events found{where}.", file=session.stderr)
    if not args.watch:
        return 0
    show_header = not events
    opts = ListOptions(namespace=namespace, field_selector=selector, resource_version=listed.resource_version)
    for ev in client.watch("v1", "Event", opts):
        if ev.type not in ("ADDED", "MODIFIED"):
            continue
        if types and str(ev.object.get("type", "")).lower() not in types:
            continue
        printers.print_table(session.out, headers, [_row(ev.object, args.all_namespaces)], show_header)
        show_header = False
    return 0
