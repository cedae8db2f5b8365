"""``kubehpc node``: the node agent as a virtual kubelet of a real Kubernetes cluster."""

from __future__ import annotations

import argparse
from typing import Any

from kubehpc.api.cluster_config import (
    ClusterConfigError,
    load_cluster_config,
    resolve_nodes,
    this_machine_config,
)
from kubehpc.cli import cluster_common
from kubehpc.cli.session import CliError, Session
from kubehpc.kube.stopping import wait_until_set
from kubehpc.node.agent import NodeAgent
from kubehpc.node.nvml import host_facts


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "node",
        parents=[common],
        help="register virtual nodes with a Kubernetes cluster and run their pods here",
        description="Register the nodes of a ClusterConfig (default: this machine as one node) "
        "with a real API server and run the pods bound to them as local processes, reporting "
        "their status as a kubelet does.",
    )
    cluster_common.add_connection_flags(p)
    p.add_argument("--cluster", default="", metavar="FILE", help="ClusterConfig of the nodes to register")
    p.add_argument("--heartbeat", type=float, default=10.0, help="seconds between node lease renewals")
    p.set_defaults(run=run)


def run(session: Session, args: argparse.Namespace) -> int:
    try:
        cluster = load_cluster_config(args.cluster) if args.cluster else this_machine_config()
    except ClusterConfigError as err:
        raise CliError(str(err)) from None
    cluster_common.setup_logging(args.verbose)
    stop = cluster_common.stop_on_signals()
    home = session.home.ensure()
    with cluster_common.connect(args) as client:
        if not cluster_common.wait_for_api(client, stop, "registering nodes"):
            return 0
        agent = NodeAgent(
            client, cluster, resolve_nodes(cluster, host_facts()), home, heartbeat_s=args.heartbeat
        )
        agent.start()
        try:
            wait_until_set(stop)  # timed waits: a signal handler sets it (kube/stopping.py)
        finally:
            agent.stop()
    return 0
