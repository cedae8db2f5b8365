"""``kubehpc down``: stop the control plane that ``up -d`` started."""

from __future__ import annotations

import argparse
from typing import Any

from kubehpc.cli import daemon
from kubehpc.cli.session import Session
from kubehpc.cli.waiting import parse_duration


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("down", parents=[common], help="stop the local control plane")
    p.add_argument(
        "--timeout", default="20s", help="wait this long after SIGTERM before SIGKILL (default 20s)"
    )
    p.set_defaults(run=run)


def run(session: Session, args: argparse.Namespace) -> int:
    home = session.home
    stopped = daemon.stop_daemon(home, parse_duration(args.timeout))
    if stopped is None:
        print(f"no kubehpc control plane is running (home {home.root})", file=session.stdout)
        return 0
    pid, killed = stopped
    how = "killed after the timeout" if killed else "stopped"
    print(f"kubehpc control plane {how} (pid {pid})", file=session.stdout)
    return 0
