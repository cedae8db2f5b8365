"""``kubehpc delete``: by type and names, by label selector, or by the objects in files."""

from __future__ import annotations

import argparse
import time
from typing import Any

from kubehpc.api.errors import ApiError, NotFound
from kubehpc.api.loader import ManifestError, load_documents
from kubehpc.cli.session import CliError, Session
from kubehpc.cli.targets import parse_targets
from kubehpc.cli.waiting import parse_duration
from kubehpc.kube.rest import ResourceInfo, RestClient
from kubehpc.store.client import DeleteOptions, ListOptions, Propagation

CASCADE = {
    "background": Propagation.BACKGROUND,
    "true": Propagation.BACKGROUND,
    "foreground": Propagation.FOREGROUND,
    "orphan": Propagation.ORPHAN,
    "false": Propagation.ORPHAN,
}


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("delete", parents=[common], help="delete resources by name, selector or file")
    p.add_argument("resource", nargs="*", metavar="TYPE[/NAME] [NAME...]")
    p.add_argument("-f", "--filename", action="append", default=[], help="delete the objects in these files")
    p.add_argument("-R", "--recursive", action="store_true", help="walk directories given with -f")
    p.add_argument("-l", "--selector", default="", help="delete every object matching this label selector")
    p.add_argument("--all", action="store_true", help="delete every object of the type in the namespace")
    p.add_argument(
        "--cascade",
        default="background",
        choices=sorted(CASCADE),
        help="what happens to dependents: background (default), foreground or orphan",
    )
    p.add_argument(
        "--wait",
        nargs="?",
        const=True,
        default=True,
        type=_bool,
        help="wait until the objects are gone (default true, as kubectl)",
    )
    p.add_argument("--grace-period", type=int, default=-1, help="seconds for pods to stop (-1: the default)")
    p.add_argument("--now", action="store_true", help="same as --grace-period=1")
    p.add_argument("--force", action="store_true", help="with --grace-period=0: delete immediately")
    p.add_argument("--ignore-not-found", action="store_true", help="a missing object is not an error")
    p.add_argument("--timeout", default="0s", help="how long to wait for deletion (0: no limit)")
    p.set_defaults(run=run)


def _delete_options(args: argparse.Namespace) -> DeleteOptions:
    grace: int | None = args.grace_period if args.grace_period >= 0 else None
    if args.now:
        grace = 1
    if args.force and grace is None:
        grace = 0
    return DeleteOptions(propagation_policy=CASCADE[args.cascade], grace_period_seconds=grace)


def _objects(
    session: Session, args: argparse.Namespace, client: RestClient
) -> list[tuple[ResourceInfo, str, str | None]]:
    """(resource, name, namespace) of everything to delete."""
    found: list[tuple[ResourceInfo, str, str | None]] = []
    if args.filename:
        if args.resource:
            raise CliError("give either -f FILE or TYPE NAME, not both")
        try:
            docs = list(load_documents(args.filename, recursive=args.recursive, stdin=session.stdin))
        except ManifestError as exc:
            raise CliError(str(exc)) from None
        for doc in docs:
            info = client.resource_for(str(doc.obj.get("apiVersion", "")), str(doc.obj.get("kind", "")))
            meta = doc.obj.get("metadata") or {}
            ns = (meta.get("namespace") or session.namespace()) if info.namespaced else None
            found.append((info, str(meta.get("name", "")), ns))
        return found
    if not args.resource:
        raise CliError("you must provide one or more resources by argument or filename")
    for target in parse_targets(args.resource):
        info = client.resolve(target.type)
        ns = session.namespace() if info.namespaced else None
        if target.names:
            found += [(info, name, ns) for name in target.names]
        elif args.selector or args.all:
            listed = client.list(
                info.api_version, info.kind, ListOptions(namespace=ns, label_selector=args.selector)
            )
            found += [(info, item["metadata"]["name"], ns) for item in listed.items]
        else:
            raise CliError("resource(s) were provided, but no name was specified (use --all or -l)")
    return found


def _wait_gone(
    client: RestClient, info: ResourceInfo, name: str, ns: str | None, uid: str, deadline: float
) -> bool:
    while True:
        try:
            obj = client.get(info.api_version, info.kind, name, ns)
        except NotFound:
            return True
        if uid and (obj.get("metadata") or {}).get("uid") != uid:
            return True  # deleted and created again under the same name
        if deadline and time.monotonic() > deadline:
            return False
        time.sleep(0.1)


def run(session: Session, args: argparse.Namespace) -> int:
    client = session.client()
    options = _delete_options(args)
    timeout = parse_duration(args.timeout)
    failed = False
    targets = _objects(session, args, client)
    if not targets and not args.filename:
        print(f"No resources found in {session.namespace()} namespace.", file=session.stderr)
    deleted: list[tuple[ResourceInfo, str, str | None, str]] = []
    for info, name, ns in targets:
        try:
            result = client.delete(info.api_version, info.kind, name, ns, options)
        except NotFound as err:
            if not args.ignore_not_found:
                print(f"Error from server (NotFound): {err.message}", file=session.stderr)
                failed = True
            continue
        except ApiError as err:
            print(f"Error from server ({err.reason}): {err.message}", file=session.stderr)
            failed = True
            continue
        uid = str(((result.get("metadata") or {}) if result.get("kind") != "Status" else {}).get("uid", ""))
        print(f'{info.type_name} "{name}" deleted', file=session.stdout, flush=True)
        deleted.append((info, name, ns, uid))
    if args.wait:
        deadline = time.monotonic() + timeout if timeout else 0.0
        for info, name, ns, uid in deleted:
            if not _wait_gone(client, info, name, ns, uid, deadline):
                print(
                    f"error: timed out waiting for the condition on {info.plural}/{name}", file=session.stderr
                )
                failed = True
    return 1 if failed else 0
