"""``kubehpc get``: tables the server prints (Table responses), or objects as YAML/JSON/names."""

from __future__ import annotations

import argparse
from typing import Any

from kubehpc.api.errors import ApiError
from kubehpc.cli import printers
from kubehpc.cli.session import Session
from kubehpc.cli.targets import Target, parse_targets
from kubehpc.kube.rest import ResourceInfo, RestClient
from kubehpc.store.client import ListOptions

FORMATS = ("wide", "yaml", "json", "name", "jsonpath")


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("get", parents=[common], help="list or show resources")
    p.add_argument("resource", nargs="+", metavar="TYPE[/NAME] [NAME...]")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="list across all namespaces")
    p.add_argument("-l", "--selector", default="", help="label selector, e.g. app=pi,tier!=web")
    p.add_argument("--field-selector", default="", help="field selector, e.g. status.phase=Running")
    p.add_argument("-o", "--output", default="", help="wide|yaml|json|name|jsonpath=TEMPLATE")
    p.add_argument("-w", "--watch", action="store_true", help="after listing, watch for changes")
    p.add_argument("--show-labels", action="store_true", help="show labels as the last column")
    p.set_defaults(run=run)


def _namespace(session: Session, args: argparse.Namespace, info: ResourceInfo) -> str | None:
    if not info.namespaced or args.all_namespaces:
        return None
    return session.namespace()


def _none_found(session: Session, args: argparse.Namespace, info: ResourceInfo) -> None:
    ns = _namespace(session, args, info)
    where = f" in {ns} namespace" if ns else ""
    print(f"No resources found{where}.", file=session.stderr)


def run(session: Session, args: argparse.Namespace) -> int:
    printers.check_output_format(args.output, FORMATS)
    client = session.client()
    targets = parse_targets(args.resource)
    failed: list[ApiError] = []
    several = len(targets) > 1
    printed = False
    for target in targets:
        info = client.resolve(target.type)
        if args.output and args.output != "wide":
            failed += _print_objects(session, args, client, info, target)
        else:
            more, shown = _print_table(session, args, client, info, target, several, printed)
            failed += more
            printed = printed or shown
    for err in failed:
        print(f"Error from server ({err.reason}): {err.message}", file=session.stderr)
    return 1 if failed else 0


def _print_objects(
    session: Session, args: argparse.Namespace, client: RestClient, info: ResourceInfo, target: Target
) -> list[ApiError]:
    ns = _namespace(session, args, info)
    failed: list[ApiError] = []
    objs: list[dict[str, Any]] = []
    resource_version = ""
    if target.names:
        for name in target.names:
            try:
                objs.append(client.get(info.api_version, info.kind, name, ns or session.namespace()))
            except ApiError as err:
                failed.append(err)
    else:
        listed = client.list(
            info.api_version,
            info.kind,
            ListOptions(namespace=ns, label_selector=args.selector, field_selector=args.field_selector),
        )
        objs, resource_version = listed.items, listed.resource_version
    if objs:
        printers.print_objects(session.stdout, args.output, info, objs, single=bool(target.names))
    elif not target.names and not args.watch:
        _none_found(session, args, info)
    if args.watch:
        _watch_objects(session, args, client, info, target, resource_version)
    return failed


def _watch_objects(
    session: Session,
    args: argparse.Namespace,
    client: RestClient,
    info: ResourceInfo,
    target: Target,
    resource_version: str,
) -> None:
    field_selector = args.field_selector
    if target.names:
        field_selector = f"metadata.name={target.names[0]}"
    watch = client.watch(
        info.api_version,
        info.kind,
        ListOptions(
            namespace=_namespace(session, args, info),
            label_selector=args.selector,
            field_selector=field_selector,
            resource_version=resource_version,
        ),
    )
    for event in watch:
        if event.type in ("ADDED", "MODIFIED", "DELETED"):
            printers.print_objects(session.stdout, args.output, info, [event.object], single=True)


def _print_table(
    session: Session,
    args: argparse.Namespace,
    client: RestClient,
    info: ResourceInfo,
    target: Target,
    several: bool,
    separate: bool,
) -> tuple[list[ApiError], bool]:
    """Print one type's table (after a blank line when ``separate``); returns the failures and
    whether anything was printed."""
    ns = _namespace(session, args, info)
    wide = args.output == "wide"
    all_ns = args.all_namespaces and info.namespaced
    prefix = info.type_name if several or "/" in " ".join(args.resource) else ""
    tables: list[dict[str, Any]] = []
    failed: list[ApiError] = []
    if target.names:
        for name in target.names:
            try:
                tables.append(client.get_table(info, name=name, namespace=ns or session.namespace()))
            except ApiError as err:
                failed.append(err)
    else:
        tables.append(
            client.get_table(
                info, namespace=ns, label_selector=args.selector, field_selector=args.field_selector
            )
        )
    headers: list[str] = []
    rows: list[list[str]] = []
    for table in tables:
        headers, more = printers.table_rows(table, wide, all_ns, args.show_labels, prefix)
        rows += more
    if rows:
        if separate:
            print(file=session.stdout)
        printers.print_table(session.out, headers, rows)
    elif not target.names and not args.watch:
        _none_found(session, args, info)
    if args.watch:
        resource_version = ""
        if tables and not target.names:
            resource_version = str((tables[0].get("metadata") or {}).get("resourceVersion", ""))
        elif tables and tables[0].get("rows"):
            row_obj = tables[0]["rows"][0].get("object") or {}
            resource_version = str((row_obj.get("metadata") or {}).get("resourceVersion", ""))
        _watch_table(session, args, client, info, target, resource_version, show_header=not rows)
    return failed, bool(rows)


def _watch_table(
    session: Session,
    args: argparse.Namespace,
    client: RestClient,
    info: ResourceInfo,
    target: Target,
    resource_version: str,
    show_header: bool,
) -> None:
    watch = client.watch_table(
        info,
        namespace=_namespace(session, args, info),
        label_selector=args.selector,
        field_selector=args.field_selector,
        resource_version=resource_version,
        name=target.names[0] if target.names else "",
    )
    all_ns = args.all_namespaces and info.namespaced
    for event in watch:
        if event.type not in ("ADDED", "MODIFIED", "DELETED"):
            continue
        obj = event.object
        if obj.get("kind") == "Table":
            headers, rows = printers.table_rows(obj, args.output == "wide", all_ns, args.show_labels)
        else:  # a server that does not print watch events as tables: name them at least
            headers, rows = ["NAME"], [[str((obj.get("metadata") or {}).get("name", ""))]]
        if rows:
            printers.print_table(session.out, headers, rows, show_header=show_header)
            show_header = False
