"""``kubehpc logs POD [-c C] [-f] [--tail N]``: a container's output, followed if asked."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kubehpc.cli.session import CliError, Session
from kubehpc.kube.rest import RestClient
from kubehpc.store.client import ListOptions


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("logs", parents=[common], help="print a container's log")
    p.add_argument(
        "pod", metavar="POD | TYPE/NAME", help="a pod, or an object whose pods to pick from (job/pi)"
    )
    p.add_argument("container_arg", nargs="?", metavar="CONTAINER", help="same as -c")
    p.add_argument("-c", "--container", default="", help="container (default: the pod's only container)")
    p.add_argument("-f", "--follow", action="store_true", help="keep streaming until the container ends")
    p.add_argument("--tail", type=int, default=-1, help="only the last N lines (-1: all)")
    p.add_argument("-p", "--previous", action="store_true", help="the previous run of the container")
    p.add_argument("--timestamps", action="store_true", help="prefix each line with its time")
    p.set_defaults(run=run)


def _pod_of(session: Session, client: RestClient, kind: str, name: str, namespace: str) -> str:
    """The pod ``kubectl logs job/NAME`` would show: the oldest one the object selects."""
    info = client.resolve(kind)
    obj = client.get(info.api_version, info.kind, name, namespace)
    match = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    if not match:
        raise CliError(
            f"cannot find the pods of {info.type_name}/{name}: it has no spec.selector.matchLabels"
        )
    selector = ",".join(f"{k}={v}" for k, v in sorted(match.items()))
    pods = client.list("v1", "Pod", ListOptions(namespace=namespace, label_selector=selector)).items
    if not pods:
        raise CliError(f"no pods found for {info.type_name}/{name}")
    pods.sort(key=lambda p: (p["metadata"].get("creationTimestamp", ""), p["metadata"]["name"]))
    chosen = str(pods[0]["metadata"]["name"])
    if len(pods) > 1:
        print(f"Found {len(pods)} pods, using pod/{chosen}", file=session.stderr)
    return chosen


def run(session: Session, args: argparse.Namespace) -> int:
    client = session.client()
    namespace = session.namespace()
    kind, sep, name = args.pod.partition("/")
    if not sep or kind.lower() in ("pod", "pods", "po"):
        pod = name if sep else args.pod
    else:
        pod = _pod_of(session, client, kind, name, namespace)
    out = session.stdout
    binary = getattr(out, "buffer", None) if out is sys.stdout else None
    for chunk in client.stream_log(
        namespace,
        pod,
        container=args.container or args.container_arg or "",
        follow=args.follow,
        tail_lines=args.tail if args.tail >= 0 else None,
        previous=args.previous,
        timestamps=args.timestamps,
    ):
        if binary is not None:
            binary.write(chunk)
            binary.flush()
        else:
            out.write(chunk.decode("utf-8", errors="replace"))
            out.flush()
    return 0
