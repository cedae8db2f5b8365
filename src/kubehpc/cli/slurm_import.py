"""``kubehpc import slurm --conf slurm.conf [--gres gres.conf] [--topology topology.conf]``.

Writes, into ``--output-dir`` (default ``slurm-import``): ``cluster.yaml`` (the ClusterConfig
for ``kubehpc up --cluster``), ``queues.yaml`` (Kueue ResourceFlavors, ClusterQueues and
LocalQueues, and PriorityClasses, for ``kubehpc apply -f``), ``slurm-mapping.yaml`` (for
sbatch: copy it to ``$KUBEHPC_HOME/slurm-mapping.yaml`` or pass ``--mapping``) and
``import-report.txt`` (what has no equivalent, also printed on stderr).

``kubehpc import sacct FILE [--mapping M] [--workload OUT]``: Slurm accounting (``sacct -P``
or ``sacct --json`` output) -> the simulator's workload file (default ``slurm-workload.yaml``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import yaml

from kubehpc.api.cluster_config import ClusterConfigError, parse_cluster_config
from kubehpc.cli.session import CliError, Session
from kubehpc.cli.slurm_common import mapping_for
from kubehpc.slurm.accounting import AccountingError, convert_sacct
from kubehpc.slurm.conf import Conf, ConfError, parse_conf
from kubehpc.slurm.importer import import_slurm, parse_qos_table
from kubehpc.slurm.mapping import mapping_document


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("import", help="import another scheduler's configuration (slurm)")
    p.add_argument("source", choices=("slurm", "sacct"))
    p.add_argument("input", nargs="?", default="", help="sacct: the sacct -P or --json output")
    p.add_argument("--conf", default="", help="slurm: slurm.conf")
    p.add_argument("--gres", default="", help="gres.conf")
    p.add_argument("--topology", default="", help="topology.conf")
    p.add_argument("--gpu-model", action="append", default=[], metavar="TYPE=MODEL", help="GPU type -> model")
    p.add_argument("--qos", default="", help="output of `sacctmgr show qos format=Name,Priority -P`")
    p.add_argument("--queue-namespace", default="default", help="namespace of the LocalQueues")
    p.add_argument("-o", "--output-dir", default="slurm-import")
    p.add_argument("--mapping", default="", help="sacct: SlurmMapping for partition -> queue")
    p.add_argument("--workload", default="slurm-workload.yaml", help="sacct: the workload file to write")
    p.set_defaults(run=run)


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise CliError(f"{path}: cannot read: {exc.strerror}") from None


def _conf(path: str) -> Conf | None:
    if not path:
        return None
    try:
        return parse_conf(_read(path), path)
    except ConfError as exc:
        raise CliError(str(exc)) from None


def run_sacct(session: Session, args: argparse.Namespace) -> int:
    if not args.input:
        raise CliError("import sacct: give the file with sacct -P or sacct --json output")
    try:
        workload, report = convert_sacct(
            _read(args.input), args.input, mapping_for(session, args.mapping or None)
        )
    except AccountingError as exc:
        raise CliError(str(exc)) from None
    Path(args.workload).write_text(yaml.safe_dump(workload, sort_keys=False))
    for line in report:
        print(f"import: {line}", file=session.stderr)
    print(f"Wrote {len(workload['spec']['jobs'])} jobs to {args.workload}", file=session.stdout)
    return 0


def run(session: Session, args: argparse.Namespace) -> int:
    if args.source == "sacct":
        return run_sacct(session, args)
    if not args.conf:
        raise CliError("import slurm: --conf slurm.conf is required")
    models: dict[str, str] = {}
    for item in args.gpu_model:
        gtype, eq, model = item.partition("=")
        if not eq or not gtype or not model:
            raise CliError(f'--gpu-model "{item}": use TYPE=MODEL')
        models[gtype] = model
    try:
        qos = parse_qos_table(_read(args.qos), args.qos) if args.qos else None
        slurm = _conf(args.conf)
        assert slurm is not None
        result = import_slurm(
            slurm, _conf(args.gres), _conf(args.topology), models, qos, args.queue_namespace
        )
        parse_cluster_config(result.cluster_config, "cluster.yaml")
    except (ValueError, ClusterConfigError) as exc:
        raise CliError(str(exc)) from None
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cluster.yaml").write_text(yaml.safe_dump(result.cluster_config, sort_keys=False))
    (out / "queues.yaml").write_text(yaml.safe_dump_all(result.queues, sort_keys=False))
    (out / "slurm-mapping.yaml").write_text(yaml.safe_dump(mapping_document(result.mapping), sort_keys=False))
    (out / "import-report.txt").write_text("".join(line + "\n" for line in result.report))
    for line in result.report:
        print(f"import: {line}", file=session.stderr)
    pools = result.cluster_config["spec"]["nodePools"]
    nodes = sum(p["count"] for p in pools)
    print(
        f"Imported {nodes} nodes in {len(pools)} pools and {len(result.mapping.partitions)} partitions "
        f"into {out}/ (cluster.yaml, queues.yaml, slurm-mapping.yaml, import-report.txt)",
        file=session.stdout,
    )
    return 0
