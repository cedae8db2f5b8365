"""``kubehpc up``: run the local control plane, in the foreground or as a daemon (-d)."""

from __future__ import annotations

import argparse
import gc
import shutil
import signal
from collections.abc import Callable
from typing import Any

from kubehpc.cli import daemon
from kubehpc.cli.session import CliError, Session
from kubehpc.store.home import Home


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "up",
        parents=[common],
        help="start the local control plane (API server and store)",
        description="Start the local control plane: the durable store under the home directory and "
        "the Kubernetes-compatible API server. Writes HOME/kubeconfig for kubectl and kubehpc.",
    )
    p.add_argument("-d", "--detach", action="store_true", help="run in the background (pidfile in the home)")
    p.add_argument(
        "--cluster",
        default="",
        metavar="FILE",
        help="ClusterConfig describing the virtual nodes; it is checked and kept in the home now, "
        "the nodes themselves come with the node runtime",
    )
    p.add_argument(
        "--kueue-config",
        default="",
        metavar="FILE",
        help="Kueue's Configuration (config.kueue.x-k8s.io, or the kueue-manager-config ConfigMap "
        "holding it): fairSharing is honoured; it is checked and kept in the home",
    )
    p.add_argument(
        "--event-ttl",
        default="1h",
        metavar="DURATION",
        help="how long an Event is kept after its last write, as kube-apiserver's --event-ttl (default 1h)",
    )
    p.add_argument("--host", default=daemon.DEFAULT_HOST, help="address to listen on (default 127.0.0.1)")
    p.add_argument(
        "--port",
        type=int,
        default=None,
        help=f"port to listen on (default: {daemon.DEFAULT_PORT}, or any free port when that one is taken)",
    )
    p.set_defaults(run=run)


def server_url(host: str, port: int, scheme: str = "https") -> str:
    # A wildcard bind is reached locally through the loopback address.
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"


def _keep_cluster_file(home: Home, path: str) -> None:
    from kubehpc.api.cluster_config import ClusterConfigError, load_cluster_config

    try:
        load_cluster_config(path)
    except ClusterConfigError as exc:
        raise CliError(str(exc)) from None
    home.ensure()
    # The file may already be the home's own copy (``--cluster HOME/cluster.yaml``): keep it.
    if home.cluster_path.exists() and home.cluster_path.samefile(path):
        return
    shutil.copyfile(path, home.cluster_path)


def _keep_kueue_config(home: Home, path: str) -> None:
    from kubehpc.controllers.kueue.configuration import ConfigurationError, read_configuration

    try:
        read_configuration(path)
    except ConfigurationError as exc:
        raise CliError(f"--kueue-config {exc}") from None
    home.ensure()
    if home.kueue_config_path.exists() and home.kueue_config_path.samefile(path):
        return
    shutil.copyfile(path, home.kueue_config_path)


def _print_ready(session: Session, home: Home, pid: int, url: str) -> None:
    print(f"kubehpc control plane running (pid {pid}) at {url}", file=session.stdout)
    print(f"kubeconfig: {home.kubeconfig_path}", file=session.stdout)
    print(f"  export KUBECONFIG={home.kubeconfig_path}", file=session.stdout, flush=True)


def _already_running(session: Session, home: Home, pid: int) -> int:
    print(f"kubehpc control plane already running (pid {pid}, home {home.root})", file=session.stdout)
    print(f"kubeconfig: {home.kubeconfig_path}", file=session.stdout, flush=True)
    return 0


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(0)


def tune_gc() -> None:
    """The store keeps every object decoded, so the heap holds ~100 long-lived objects per stored pod,
    and controllers allocate fast (each list decodes copies): with CPython's default thresholds
    (700, 10, 10) full collections over that heap took 40% of the control plane's CPU on a
    1,000-pod Job. Freeze what start-up made (registry, schemas) and collect less often.

    Almost nothing the plane allocates is cyclic garbage (a collection finds a few thousand
    objects in a million), so the young generation is collected only after two million new
    objects. The store's decoded trees are untracked as it takes them (store/_untrack.c), which
    made each collection cheaper (twenty-fifth pass); with that, two million mean one pause
    instead of three in a burst of 15,000 queued Jobs, each as long (0.3-0.6 s), and half the
    time in collections (0.4-0.6 s instead of 0.8-1.1 s). The run's CPU and rate did not move
    with it (docs/performance.md, eleventh and twenty-sixth passes): the pauses are the gain."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(2_000_000, 2, 100)


def run_control_plane(
    home: Home,
    host: str,
    port: int,
    on_ready: Callable[[int], None],
    event_ttl_s: float,
) -> None:
    """Run the control plane of ``home`` (store and controllers) and serve its API until
    SIGTERM/SIGINT."""
    from kubehpc.runtime.controlplane import ControlPlane
    from kubehpc.server.bootstrap import ensure_token
    from kubehpc.server.serve import serve
    from kubehpc.server.tls import ensure_tls

    token = ensure_token(home)
    # TLS is not optional: kubectl sends the kubeconfig's bearer token only over https.
    tls = ensure_tls(home, (host,))
    # uvicorn stops on SIGTERM and then raises the signal again; with the default action that
    # would end the process before the store and controllers are closed. As an exception it
    # unwinds through the cleanup below instead.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    control_plane = ControlPlane(home, event_ttl_s=event_ttl_s).start()
    tune_gc()
    try:
        serve(
            control_plane.store,
            control_plane.registry,
            home,
            host,
            port,
            token=token,
            tls=tls,
            on_ready=on_ready,
            metrics=control_plane.metrics,
        )
    finally:
        control_plane.stop()


def run(session: Session, args: argparse.Namespace) -> int:
    home = session.home
    pid = daemon.running_pid(home)
    if pid is not None:
        return _already_running(session, home, pid)
    if args.cluster:
        _keep_cluster_file(home, args.cluster)
    if args.kueue_config:
        _keep_kueue_config(home, args.kueue_config)
    event_ttl_s = _event_ttl_s(args.event_ttl)
    port = daemon.choose_port(args.host, args.port)
    if args.detach:
        pid = daemon.start_daemon(home, args.host, port, event_ttl=args.event_ttl)
        client = daemon.local_client(home)
        url = client.config.server if client is not None else "?"
        if client is not None:
            client.close()
        _print_ready(session, home, pid, url)
        return 0
    return _run_foreground(session, home, args.host, port, event_ttl_s)


def _event_ttl_s(text: str) -> float:
    from kubehpc.cli.waiting import parse_duration

    try:
        seconds = parse_duration(text)
    except CliError as exc:
        raise CliError(f"--event-ttl: {exc}") from None
    if seconds <= 0:
        raise CliError(f'--event-ttl: "{text}" must be more than zero')
    return seconds


def _run_foreground(session: Session, home: Home, host: str, port: int, event_ttl_s: float) -> int:
    import os

    from kubehpc.server.bootstrap import ensure_token, write_kubeconfig
    from kubehpc.server.tls import ensure_tls

    home.ensure()
    lock = daemon.PidLock(home.pid_path)
    if not lock.acquire():
        return _already_running(session, home, daemon.running_pid(home) or 0)
    try:
        # A kubeconfig left by an earlier run names a dead port; whoever waits for this start
        # (up -d) must only see the new one, written once the server listens.
        home.kubeconfig_path.unlink(missing_ok=True)

        def ready(bound: int) -> None:
            url = server_url(host, bound)
            write_kubeconfig(home, url, ensure_token(home), ensure_tls(home, (host,)).ca_pem)
            _print_ready(session, home, os.getpid(), url)

        run_control_plane(home, host, port, ready, event_ttl_s)
    finally:
        lock.release()
    return 0
