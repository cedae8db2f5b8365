"""``kubehpc sbatch [options] script [args...]``: submit a Slurm batch script unchanged.

Options are sbatch's (see :mod:`kubehpc.slurm.options`), plus kubehpc's own, given before the
script: ``--dry-run[=yaml|json]`` prints the objects instead of creating them (no server
needed; with ``--dry-run``, ``-o yaml`` / ``-o json`` on the command line choose the format, as
with kubectl; a ``#SBATCH -o`` stays the job's output file), ``--mapping FILE`` (the admin's
SlurmMapping), ``--kubeconfig``, ``--context``, ``--home``, ``--namespace``. Without a script
argument or ``--wrap`` the script is read from stdin, as sbatch does.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import socket
from datetime import UTC, datetime
from typing import Any

import yaml

from kubehpc.api.errors import ApiError, NotFound
from kubehpc.api.quantity import resource_units
from kubehpc.cli.session import CliError, Session
from kubehpc.cli.slurm_common import mapping_for
from kubehpc.sched.podspec import pod_requests
from kubehpc.slurm import translate
from kubehpc.slurm.jobids import allocate_ids
from kubehpc.slurm.options import value_follows
from kubehpc.slurm.request import JobRequest, SbatchError, Submission, build_request, parse_command_line
from kubehpc.store.client import PatchType

KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"

DRY_RUN_ID = 1
_OWN_FLAGS = ("--kubeconfig", "--context", "--home", "--namespace", "--mapping")


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings (the script, the runner) as ``|`` blocks, readable in the output."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str)


def dump_yaml(objs: list[dict[str, Any]]) -> str:
    return yaml.dump_all(objs, Dumper=_BlockDumper, sort_keys=False, default_flow_style=False)


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    # sbatch's options are read by kubehpc.slurm, not argparse: "+" as the prefix makes every
    # word (including "-N 2") a positional argument here.
    p = sub.add_parser(
        "sbatch",
        prefix_chars="+",
        add_help=False,
        help="submit a Slurm batch script (sbatch options; --dry-run prints the objects)",
    )
    p.add_argument("argv", nargs="*")
    p.set_defaults(run=run)


def split_own_flags(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """kubehpc's flags (before the script) apart from sbatch's."""
    own: dict[str, str] = {}
    rest: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        name, eq, value = tok.partition("=")
        if name in _OWN_FLAGS:
            if not eq:
                if i + 1 >= len(argv):
                    raise CliError(f"{name} requires a value")
                value = argv[i + 1]
                i += 1
            own[name[2:]] = value
        elif name == "--dry-run":
            own["dry-run"] = value if eq else "yaml"
        elif not tok.startswith("-") or tok == "--":
            rest.extend(argv[i:])
            break
        else:
            rest.append(tok)
            if value_follows(tok) and i + 1 < len(argv):
                rest.append(argv[i + 1])
                i += 1
        i += 1
    if "dry-run" in own:
        rest = _take_format(own, rest)
        if own["dry-run"] not in ("yaml", "json", "client"):
            raise CliError(f'--dry-run: unknown format "{own["dry-run"]}"; use yaml or json')
        if own["dry-run"] == "client":
            own["dry-run"] = "yaml"
    return own, rest


def _take_format(own: dict[str, str], argv: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if not tok.startswith("-") or tok == "--":
            out.extend(argv[i:])
            break
        if tok in ("-o", "--output") and i + 1 < len(argv) and argv[i + 1] in ("yaml", "json"):
            own["dry-run"] = argv[i + 1]
            i += 2
            continue
        if tok in ("-oyaml", "-ojson", "--output=yaml", "--output=json"):
            own["dry-run"] = tok.rsplit("=", 1)[-1].removeprefix("-o")
            i += 1
            continue
        out.append(tok)
        if value_follows(tok) and i + 1 < len(argv):
            out.append(argv[i + 1])
            i += 1
        i += 1
    return out


def _submission(argv: list[str]) -> Submission:
    return Submission(
        argv=argv,
        environ=dict(os.environ),
        cwd=os.getcwd(),
        user=getpass.getuser(),
        submit_host=socket.gethostname().split(".")[0],
        now=datetime.now().astimezone(),
    )


def read_request(session: Session, argv: list[str], mapping_path: str | None) -> JobRequest:
    sub = _submission(argv)
    try:
        cmd = parse_command_line(argv)
        wrap = any(g.spec.long == "wrap" for g in cmd.given)
        text: str | None = None
        name = "--wrap"
        if not wrap:
            if cmd.positional:
                name = cmd.positional[0]
                try:
                    with open(name, encoding="utf-8") as fh:
                        text = fh.read()
                except (OSError, UnicodeDecodeError) as exc:
                    raise CliError(f"{name}: cannot read the batch script: {exc}") from None
            else:
                text, name = session.stdin.read(), "<stdin>"
                sub = Submission([*argv, name], sub.environ, sub.cwd, sub.user, sub.submit_host, sub.now)
        return build_request(sub, text, name, mapping_for(session, mapping_path))
    except SbatchError as exc:
        raise CliError(str(exc)) from None


def report(session: Session, req: JobRequest) -> None:
    for w in req.warnings:
        print(f"sbatch: warning: {w}", file=session.stderr)
    for r in req.recorded:
        value = f"={r.value}" if r.value else ""
        print(f"sbatch: note: {r.where}: --{r.option}{value}: {r.why}", file=session.stderr)


USAGE = """usage: kubehpc sbatch [--dry-run[=yaml|json]] [--mapping FILE] [--namespace NS] [sbatch options]
                      script [args...]
       kubehpc sbatch [options] --wrap COMMAND

Submits a Slurm batch script as Kubernetes objects (a ConfigMap with the script, a batch/v1
Job, and a headless Service for multi-node jobs) and prints "Submitted batch job ID".
--dry-run prints the objects instead (-o yaml|json picks the format). sbatch's options work in
#SBATCH lines and on the command line; options kubehpc cannot honour are listed on stderr.
"""


def _warn_if_no_queue(session: Session, client: Any, queue: str, namespace: str, partition: str) -> None:
    """Slurm refuses a partition it does not know. Here a partition is a Kueue LocalQueue,
    which may be made after the job, so the job is taken; but without this line it would sit
    in squeue as pending with nothing saying why."""
    try:
        client.get(KUEUE_API_VERSION, "LocalQueue", queue, namespace)
    except NotFound:
        print(
            f"sbatch: warning: partition {partition}: namespace {namespace} has no LocalQueue {queue}; "
            "the job waits until one is made (sinfo lists the partitions)",
            file=session.stderr,
        )


def _unsatisfiable(client: Any, job: dict[str, Any]) -> str:
    """Why no node could ever hold one of the job's pods, or "" — Slurm refuses such a job at
    submit instead of leaving it pending for ever. No nodes at all (not registered yet) refuses
    nothing. The node count is not checked: on one machine, a job's pods share its one node."""
    try:
        nodes = client.list("v1", "Node").items
    except ApiError:
        return ""
    if not nodes:
        return ""
    wanted = pod_requests(job["spec"]["template"]["spec"])
    most: dict[str, int] = {}
    for node in nodes:
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        have = {r: resource_units(r, allocatable[r]) for r in wanted if r in allocatable}
        for r in wanted:
            most[r] = max(most.get(r, 0), have.get(r, 0))
    short = [r for r, amount in sorted(wanted.items()) if most.get(r, 0) < amount]
    if short:
        r = short[0]
        return f"each node needs {wanted[r]} {r}, the most any node has is {most.get(r, 0)}"
    return ""


def run(session: Session, args: argparse.Namespace) -> int:
    if args.argv[:1] in (["--help"], ["-h"], ["--usage"]):
        session.stdout.write(USAGE)
        return 0
    own, argv = split_own_flags(list(args.argv))
    for key in ("kubeconfig", "context", "home", "namespace"):
        if key in own:
            setattr(args, key, own[key])
    req = read_request(session, argv, own.get("mapping"))
    report(session, req)
    mapping = mapping_for(session, own.get("mapping"))
    now_iso = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if "dry-run" in own:
        namespace = getattr(args, "namespace", None)
        objs = translate.build_objects(req, req.job_id or DRY_RUN_ID, mapping, namespace, now_iso)
        if own["dry-run"] == "json":
            json.dump({"apiVersion": "v1", "kind": "List", "items": objs}, session.stdout, indent=2)
            print(file=session.stdout)
        else:
            session.stdout.write(dump_yaml(objs))
        return 0
    client = session.client(start_if_needed=True)
    namespace = session.namespace()
    job_id = req.job_id or allocate_ids(client, req.array.count if req.array else 1)
    objs = translate.build_objects(req, job_id, mapping, namespace, now_iso)
    config_map, job, *rest = objs
    why = _unsatisfiable(client, job)
    if why:
        # Slurm's own words first, so scripts that grep for them keep working.
        raise CliError(f"Batch job submission failed: Requested node configuration is not available: {why}")
    queue = (job["metadata"].get("labels") or {}).get(translate.QUEUE_LABEL)
    if queue:
        _warn_if_no_queue(session, client, queue, namespace, req.partition)
    client.create(config_map)
    try:
        created = client.create(job)
    except ApiError:
        # Nothing half-done: without its Job, the script's ConfigMap would only be litter.
        client.delete("v1", "ConfigMap", config_map["metadata"]["name"], namespace)
        raise
    owner = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": created["metadata"]["name"],
        "uid": created["metadata"]["uid"],
        "controller": False,
        "blockOwnerDeletion": True,
    }
    for obj in rest:
        obj["metadata"]["ownerReferences"] = [owner]
        client.create(obj)
    try:
        client.patch(
            "v1",
            "ConfigMap",
            config_map["metadata"]["name"],
            {"metadata": {"ownerReferences": [owner]}},
            PatchType.MERGE,
            namespace,
        )
    except ApiError as exc:  # the job runs anyway; only garbage collection of the script is lost
        print(f"sbatch: warning: the script's ConfigMap has no owner: {exc.message}", file=session.stderr)
    if req.parsable:
        print(job_id, file=session.stdout)
    else:
        print(f"Submitted batch job {job_id}", file=session.stdout)
    return 0
