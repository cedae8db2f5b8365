"""``kubehpc wait``: block until objects meet a condition, are deleted, or a field has a value.

Messages and exit codes are kubectl's: ``job.batch/pi condition met`` and 0, or
``error: timed out waiting for the condition on jobs/pi`` and 1.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Any

from kubehpc.api.errors import NotFound
from kubehpc.cli import jsonpath
from kubehpc.cli.session import CliError, Session
from kubehpc.cli.targets import parse_targets
from kubehpc.cli.waiting import Progress, parse_duration
from kubehpc.kube.rest import ResourceInfo, RestClient
from kubehpc.store.client import ListOptions

POLL_S = 0.1


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("wait", parents=[common], help="wait for a condition on resources")
    p.add_argument("resource", nargs="+", metavar="TYPE[/NAME] [NAME...]")
    p.add_argument(
        "--for",
        dest="condition",
        required=True,
        help="condition=NAME[=VALUE] | delete | create | jsonpath='{.status.phase}'=VALUE",
    )
    p.add_argument("--timeout", default="30s", help="give up after this long (default 30s; 0: check once)")
    p.add_argument("-l", "--selector", default="", help="wait for every object matching this label selector")
    p.add_argument("--all", action="store_true", help="wait for every object of the type in the namespace")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="with -l or --all: every namespace")
    p.set_defaults(run=run)


@dataclass(frozen=True)
class Condition:
    kind: str  # condition | delete | create | jsonpath
    name: str = ""
    value: str | None = None

    def met(self, obj: dict[str, Any] | None) -> bool:
        if self.kind == "delete":
            return obj is None
        if obj is None:
            return False
        if self.kind == "create":
            return True
        if self.kind == "condition":
            want = (self.value or "True").lower()
            for c in (obj.get("status") or {}).get("conditions") or []:
                if str(c.get("type", "")).lower() == self.name.lower():
                    return str(c.get("status", "")).lower() == want
            return False
        found = jsonpath.evaluate(self.name, obj)
        if self.value is None:
            return bool(found)
        return any(jsonpath.render("{.}", v) == self.value for v in found)


def parse_condition(text: str) -> Condition:
    kind, sep, rest = text.partition("=")
    kind = kind.lower()
    if kind in ("delete", "create") and not sep:
        return Condition(kind)
    if kind == "condition" and rest:
        name, eq, value = rest.partition("=")
        return Condition("condition", name, value if eq else None)
    if kind == "jsonpath" and rest:
        expr = rest.strip("'")
        if not expr.startswith("{"):
            raise CliError("jsonpath wait format must be --for=jsonpath='{.field}'=VALUE")
        close = expr.find("}")
        if close < 0:
            raise CliError(f"unclosed {{ in --for={text}")
        path, tail = expr[1:close], expr[close + 1 :]
        if tail and not tail.startswith("="):
            raise CliError(f"unexpected {tail!r} after the jsonpath in --for={text}")
        return Condition("jsonpath", path, tail[1:].strip("'\"") if tail else None)
    raise CliError(
        f"unrecognized condition: {text!r}; "
        "use condition=NAME[=VALUE], delete, create or jsonpath='{...}'=VALUE"
    )


@dataclass
class _Waiter:
    client: RestClient
    info: ResourceInfo
    name: str
    namespace: str | None
    uid: str = ""

    def current(self) -> dict[str, Any] | None:
        try:
            obj = self.client.get(self.info.api_version, self.info.kind, self.name, self.namespace)
        except NotFound:
            return None
        # An object deleted and created again under the same name counts as deleted.
        if self.uid and (obj.get("metadata") or {}).get("uid") != self.uid:
            return None
        return obj


def _waiters(
    session: Session, args: argparse.Namespace, client: RestClient, cond: Condition
) -> list[_Waiter]:
    waiters = []
    for target in parse_targets(args.resource):
        info = client.resolve(target.type)
        ns = session.namespace() if info.namespaced else None
        if target.names:
            for name in target.names:
                w = _Waiter(client, info, name, ns)
                if cond.kind not in ("delete", "create"):
                    obj = w.current()
                    if obj is None:
                        raise NotFound(
                            f'{info.group_resource} "{name}" not found', name=name, kind=info.plural
                        )
                waiters.append(w)
            continue
        if not (args.selector or args.all):
            raise CliError("resource name may not be empty (give NAME, -l SELECTOR or --all)")
        list_ns = None if args.all_namespaces else ns
        listed = client.list(
            info.api_version, info.kind, ListOptions(namespace=list_ns, label_selector=args.selector)
        )
        for item in listed.items:
            meta = item.get("metadata") or {}
            waiters.append(
                _Waiter(client, info, meta["name"], meta.get("namespace"), str(meta.get("uid", "")))
            )
    if not waiters:
        raise CliError("no matching resources found")
    return waiters


def run(session: Session, args: argparse.Namespace) -> int:
    cond = parse_condition(args.condition)
    timeout = parse_duration(args.timeout)
    client = session.client()
    waiters = _waiters(session, args, client, cond)
    deadline = time.monotonic() + timeout
    for w in waiters:
        label = f"{w.info.type_name}/{w.name}"
        with Progress(session.err, f"waiting for {label} ({args.condition})") as progress:
            while not cond.met(w.current()):
                if time.monotonic() >= deadline:
                    progress.stop()
                    print(
                        f"error: timed out waiting for the condition on {w.info.plural}/{w.name}",
                        file=session.stderr,
                    )
                    return 1
                progress.tick()
                time.sleep(min(POLL_S, max(deadline - time.monotonic(), 0.0)))
        print(f"{label} condition met", file=session.stdout, flush=True)
    return 0
