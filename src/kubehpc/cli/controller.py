"""``kubehpc controller``: the scheduler and Kueue controllers against a real Kubernetes cluster."""

from __future__ import annotations

import argparse
from typing import Any

from kubehpc.cli import cluster_common
from kubehpc.cli.session import CliError, Session
from kubehpc.kube.controller import (
    COMPONENTS,
    OPTIONAL_COMPONENTS,
    SCHEDULER_NAME,
    ClusterController,
    ClusterOptions,
    default_identity,
)
from kubehpc.kube.leader import LeaseConfig


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "controller",
        parents=[common],
        help="run kubehpc's scheduler and controllers in a Kubernetes cluster",
        description="Schedule pods with spec.schedulerName=kubehpc and run Kueue admission for "
        "queue-labelled Jobs on a real API server (--kubeconfig, or --in-cluster). Installs the "
        "CustomResourceDefinitions of kubehpc's kinds; replicas elect a leader through a Lease.",
    )
    cluster_common.add_connection_flags(p)
    p.add_argument("--scheduler-name", default=SCHEDULER_NAME, help="schedulerName of the pods to schedule")
    p.add_argument(
        "--components",
        default=",".join(COMPONENTS),
        help=f"comma-separated subset of {','.join(COMPONENTS)} (default: all), plus on request "
        f"{','.join(OPTIONAL_COMPONENTS)} (the MPI Operator's and KubeRay's controllers)",
    )
    p.add_argument(
        "--kueue-config",
        default="",
        metavar="FILE",
        help="Kueue's Configuration (config.kueue.x-k8s.io, or the kueue-manager-config ConfigMap "
        "holding it): fairSharing is honoured",
    )
    p.add_argument("--no-install-crds", action="store_true", help="do not install the CRDs")
    p.add_argument("--leader-elect", default="true", choices=("true", "false"), help="elect a leader")
    p.add_argument("--lease-namespace", default="kube-system")
    p.add_argument("--lease-name", default="kubehpc-controller")
    p.add_argument("--identity", default="", help="this replica's name in the Lease (default host_pid)")
    p.set_defaults(run=run)


def options(args: argparse.Namespace) -> ClusterOptions:
    kueue_config = None
    if args.kueue_config:
        from kubehpc.controllers.kueue.configuration import (
            ConfigurationError,
            admission_config,
            read_configuration,
        )

        try:
            kueue_config = admission_config(read_configuration(args.kueue_config))
        except ConfigurationError as exc:
            raise CliError(f"--kueue-config {exc}") from None
    try:
        lease = LeaseConfig(
            name=args.lease_name, namespace=args.lease_namespace, identity=args.identity or default_identity()
        )
        return ClusterOptions(
            scheduler_name=args.scheduler_name,
            components=tuple(c.strip() for c in args.components.split(",") if c.strip()),
            install_crds=not args.no_install_crds,
            leader_elect=args.leader_elect == "true",
            lease=lease,
            kueue_config=kueue_config,
        )
    except ValueError as err:
        raise CliError(str(err)) from None


def run(session: Session, args: argparse.Namespace) -> int:
    opts = options(args)
    cluster_common.setup_logging(args.verbose)
    stop = cluster_common.stop_on_signals()
    with cluster_common.connect(args) as client:
        ClusterController(client, opts).run(stop)
    return 0
