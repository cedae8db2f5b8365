"""What ``kubehpc controller`` and ``kubehpc node`` share: reaching a real cluster and running
until a signal."""

from __future__ import annotations

import argparse
import faulthandler
import logging
import signal
import sys
import threading

from kubehpc.api.errors import ApiError
from kubehpc.cli.session import CliError
from kubehpc.kube.controller import explain
from kubehpc.kube.kubeconfig import ClientConfig, KubeconfigError, in_cluster_config, load_client_config
from kubehpc.kube.ratelimit import CONTROLLER_BURST, CONTROLLER_QPS
from kubehpc.kube.rest import RestClient
from kubehpc.store.client import ListOptions


def add_connection_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--in-cluster", action="store_true", help="use the pod's service account instead of a kubeconfig"
    )
    p.add_argument(
        "--kube-api-qps", type=float, default=CONTROLLER_QPS, help="client-side request rate limit (0: none)"
    )
    p.add_argument("--kube-api-burst", type=int, default=CONTROLLER_BURST, help="client-side burst")
    p.add_argument("-v", "--verbose", action="store_true", help="log at debug level")


def client_config(args: argparse.Namespace) -> ClientConfig:
    """The cluster to talk to; a missing or unreadable kubeconfig is a user error, said at once."""
    try:
        if args.in_cluster:
            return in_cluster_config()
        kubeconfig = getattr(args, "kubeconfig", None) or ""
        return load_client_config(kubeconfig, getattr(args, "context", None) or "")
    except KubeconfigError as err:
        raise CliError(f"cannot use the kubeconfig: {err}") from None


def connect(args: argparse.Namespace) -> RestClient:
    return RestClient(
        client_config(args),
        qps=args.kube_api_qps,
        burst=args.kube_api_burst,
        user_agent=f"kubehpc-{args.command}",
        max_connections=64,
    )


def setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpcore").setLevel(logging.WARNING)


def wait_for_api(client: RestClient, stop: threading.Event, what: str) -> bool:
    """Retry, doubling the pause up to 30 s, until the API server answers a list of Nodes
    (reachable, our credentials accepted, RBAC allowing it); False when stopped first."""
    delay = 1.0
    log = logging.getLogger("kubehpc.cli")
    while not stop.is_set():
        try:
            client.list("v1", "Node", ListOptions(limit=1))
            return True
        except ApiError as err:
            log.error(
                "%s: the API server at %s: %s; retrying in %.0fs",
                what,
                client.config.server,
                explain(err),
                delay,
            )
        stop.wait(delay)
        delay = min(delay * 2, 30.0)
    return False


def stop_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT (the process then stops cleanly). SIGUSR1 writes every
    thread's stack to stderr, as a Go binary does on SIGQUIT: how to see why a process does
    not stop, or where it spends its time, without stopping it."""
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    stop = threading.Event()

    def handler(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    return stop
