"""The console entry of the launch agent and of the ``srun`` shim (``python -m kubehpc.cli.launch``).

``kubehpc-launch [--namespace NS] [--container NAME] [ssh options] HOST COMMAND...`` runs a
command in a pod of the embedded cluster (:mod:`kubehpc.node.launch`); ``--srun [srun
options] COMMAND...`` starts a job step's tasks across the pods of the batch job it is called
from (:mod:`kubehpc.slurm.srun`). Both reach the API with the home's kubeconfig
(``$KUBEHPC_HOME``, set by the shims :func:`kubehpc.node.launch.install_shims` writes).
Failures to launch exit 255, as ssh does, with the reason on stderr.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import IO

from kubehpc.api.errors import ApiError
from kubehpc.kube.kubeconfig import KubeconfigError, load_client_config
from kubehpc.kube.rest import RestClient
from kubehpc.node import launch
from kubehpc.node.runner import CONTAINER_ID_ENV
from kubehpc.slurm import srun
from kubehpc.store.client import Client, ListOptions
from kubehpc.store.home import Home


def connect(home: Home) -> RestClient:
    path = home.kubeconfig_path
    if not path.exists():
        raise launch.LaunchError(f"no kubeconfig at {path}: is the embedded control plane running?")
    return RestClient(load_client_config(str(path)), retries=2)


def run_srun(client: Client, home: Home, argv: Sequence[str], environ: Mapping[str, str]) -> int:
    """One job step: every task through the launch agent, in the pod of its node."""
    opts = srun.parse(argv)
    for option in opts.ignored:
        print(f"srun: warning: {option} ignored by kubehpc", file=sys.stderr)
    tasks = srun.layout(opts, srun.job_nodes(environ), srun.job_ntasks(environ))
    namespace = launch.caller_namespace(client, environ)
    pods = client.list("v1", "Pod", ListOptions(namespace=namespace)).items
    # The script's own changes to its environment reach every task (srun's --export=ALL);
    # what it did not change stays as each task's pod has it (devices, host name).
    own_uid = environ.get(CONTAINER_ID_ENV, "").partition("/")[0]
    own_pod = next((p for p in pods if p["metadata"].get("uid") == own_uid), None)
    own_env = launch.enter(home, own_pod).env if own_pod is not None else {}
    exported = {k: v for k, v in environ.items() if own_env.get(k) != v and k != "KUBEHPC_HOME"}
    hosts = sorted({t.host for t in tasks})
    targets = launch.enter_when_running(client, home, hosts, namespace, wait_s=launch.wait_seconds(environ))
    cwd = os.getcwd()
    started = []
    copiers = []
    for task in tasks:
        target = targets[task.host]
        env = {**exported, **srun.task_environment(task, tasks, opts), "SLURM_TOPOLOGY_ADDR": task.host}
        pipe = subprocess.PIPE if opts.label else None
        proc = launch.spawn(target, opts.command, env, cwd=cwd, stdout=pipe)
        started.append((proc, target))
        if proc.stdout is not None:
            copier = threading.Thread(target=_labelled, args=(proc.stdout, task.rank), daemon=True)
            copier.start()
            copiers.append(copier)
    code = launch.supervise(started)
    for copier in copiers:
        copier.join(5)
    return code


_OUTPUT_LOCK = threading.Lock()


def _labelled(stream: IO[bytes], rank: int) -> None:
    """``srun -l``: every output line of a task prefixed with its rank."""
    prefix = f"{rank}: ".encode()
    for line in stream:
        with _OUTPUT_LOCK:
            sys.stdout.buffer.write(prefix + line)
            sys.stdout.buffer.flush()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    launch.set_parent_death_signal()
    home = Home.from_env()
    prog = "srun" if args[:1] == ["--srun"] else "kubehpc-launch"
    try:
        client = connect(home)
        try:
            if prog == "srun":
                return run_srun(client, home, args[1:], os.environ)
            return launch.launch(client, home, launch.parse_args(args), os.environ)
        finally:
            client.close()
    except (launch.LaunchError, srun.SrunError, ApiError, KubeconfigError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return launch.EXIT_LAUNCH_FAILED


if __name__ == "__main__":
    sys.exit(main())
