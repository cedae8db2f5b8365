"""``kubehpc version``: this command's version and, when reachable, the server's."""

from __future__ import annotations

import argparse
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as package_version
from typing import Any

from kubehpc.api.errors import ApiError
from kubehpc.cli.session import CliError, Session


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("version", parents=[common], help="print the client and server versions")
    p.add_argument("--client", action="store_true", help="only the client version (no server needed)")
    p.set_defaults(run=run)


def client_version() -> str:
    try:
        return package_version("kubehpc")
    except PackageNotFoundError:
        return "unknown"


def run(session: Session, args: argparse.Namespace) -> int:
    print(f"Client Version: kubehpc {client_version()}", file=session.stdout)
    if args.client:
        return 0
    try:
        info = session.client().server_version()
    except (ApiError, CliError) as exc:
        print(f"Server Version: unavailable ({exc})", file=session.stdout)
        return 1
    print(f"Server Version: {info.get('gitVersion', '?')}", file=session.stdout)
    return 0
