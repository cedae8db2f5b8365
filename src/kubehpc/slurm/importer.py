"""``kubehpc import slurm``: slurm.conf (+ gres.conf, topology.conf) -> a kubehpc ClusterConfig,
Kueue queues, PriorityClasses and a SlurmMapping, with a report of what has no equivalent.

* Nodes: every ``NodeName`` line's nodes become node pools (split where partitions, topology or
  GPUs differ), with the Slurm host names, CPUs (``CPUs``, else boards x sockets x cores x
  threads), memory (``RealMemory``), features as ``feature.slurm.kubehpc.io/<f>`` labels,
  partition membership as ``partition.slurm.kubehpc.io/<p>`` labels, the GPU type as
  ``slurm.kubehpc.io/gpu-type``.
* GPUs: ``Gres=gpu[:type]:N`` on the node line, else the node's gres.conf ``Name=gpu`` lines. A
  type becomes a catalogue model by ``--gpu-model TYPE=MODEL`` or by its own name (``a100``,
  ``h100``...); a type with no model is left out (reported), since a virtual node needs a
  model to fake.
* Topology: tree — a node's leaf switch is its ``rack``, the switch above it its ``block``
  (higher levels are reported); block — ``BlockName`` is the ``block``.
* Partitions: one ResourceFlavor (``nodeLabels`` = the partition label), ClusterQueue (quota =
  the partition's nodes' CPUs, memory and GPUs; all in one cohort named after the cluster) and
  LocalQueue (in ``namespace``) each. ``Default=YES``, ``MaxTime``, ``DefaultTime`` and
  ``DefMemPerCPU`` go to the SlurmMapping, which sbatch reads.
* QOS: every QOS a partition names (or ``--qos`` lists, from ``sacctmgr show qos
  format=Name,Priority -P``) becomes a PriorityClass of that name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubehpc.api import gpus as catalogue
from kubehpc.api.cluster_config import API_VERSION as CLUSTER_API_VERSION
from kubehpc.slurm import hostlist
from kubehpc.slurm.conf import Conf, Record
from kubehpc.slurm.mapping import (
    FEATURE_LABEL_PREFIX,
    GPU_TYPE_LABEL,
    PartitionMapping,
    QosMapping,
    SlurmMapping,
)
from kubehpc.slurm.nodes import PARTITION_LABEL_PREFIX
from kubehpc.slurm.specs import parse_gres
from kubehpc.slurm.timefmt import TimeFormatError, parse_time_limit

Obj = dict[str, Any]
KUEUE = "kueue.x-k8s.io/v1beta2"

# Daemon-local settings (paths, ports, logging, timeouts, plugins of the node daemons): they
# describe how Slurm runs, not what the cluster is, so one report line covers them.
_DAEMON_KEYS = re.compile(
    r"^(slurm(ctld|d|dbd)?(host|addr|port|pidfile|spooldir|logfile|debug|timeout|user|parameters|"
    r"syslogdebug)|statesavelocation|.*pidfile|.*logfile|.*debug|authtype|credtype|cryptotype|"
    r"proctracktype|tasktype|taskplugin|mpidefault|switchtype|returntoservice|inactivelimit|killwait|"
    r"waittime|minjobage|jobacctgather.*|jobcomp.*|accountingstorage.*|acctgather.*|"
    r"controlmachine|backupcontroller|controladdr|mailprog|epilog.*|prolog.*|plugindir|"
    r"slurmschedlogfile|slurmschedloglevel|messagetimeout|tcptimeout)$",
    re.IGNORECASE,
)
_EXPLAINED = {
    "schedulertype": "kubehpc's scheduler core queues and backfills with its own policy",
    "selecttype": "resources are allocated per pod from requests (like cons_tres)",
    "selecttypeparameters": "CPU and memory are always both tracked",
    "prioritytype": "priority comes from PriorityClasses and Kueue, not Slurm's multifactor plugin",
    "preempttype": "preemption is Kueue's (ClusterQueue preemption policies)",
    "preemptmode": "preemption is Kueue's (ClusterQueue preemption policies)",
    "topologyplugin": "topology comes from topology.conf as block and rack labels",
    "gresTypes".lower(): "only GPUs are modelled",
    "include": "included files are not read; import them separately",
}
_NODE_KEYS_USED = {
    "nodename",
    "cpus",
    "boards",
    "socketsperboard",
    "sockets",
    "corespersocket",
    "threadspercore",
    "realmemory",
    "features",
    "availablefeatures",
    "activefeatures",
    "gres",
    "state",
}
# Global keys carried over (DefMemPerCPU: into every partition without its own).
_GLOBAL_KEYS_USED = {"clustername", "defmempercpu"}
_PART_KEYS_USED = {
    "partitionname",
    "nodes",
    "default",
    "maxtime",
    "defaulttime",
    "defmempercpu",
    "state",
    "qos",
    "allowqos",
}


@dataclass
class _Node:
    name: str
    line: int
    cpus: int
    memory_mb: int | None
    features: list[str]
    gpu_type: str = ""
    gpu_count: int = 0
    partitions: list[str] = field(default_factory=list)
    block: str | None = None
    rack: str | None = None


@dataclass
class ImportResult:
    cluster_config: Obj
    queues: list[Obj]
    mapping: SlurmMapping
    report: list[str]


def _dns(name: str) -> str:
    out = re.sub(r"[^a-z0-9.-]", "-", name.lower()).strip("-.")
    return out[:63] or "x"


def _int(rec: Record, key: str, default: int) -> int:
    text = rec.get(key)
    return int(text) if text.isdigit() else default


def _minutes(text: str, where: str, report: list[str]) -> int | None:
    if not text:
        return None
    try:
        seconds = parse_time_limit(text)
    except TimeFormatError as exc:
        report.append(f"{where}: {exc}; ignored")
        return None
    return None if seconds is None else seconds // 60


def _nodes(conf: Conf, report: list[str]) -> list[_Node]:
    nodes: list[_Node] = []
    for rec in conf.of("nodename"):
        where = f"{conf.source}: line {rec.line}: NodeName={rec.name}"
        try:
            hosts = hostlist.expand(rec.name)
        except hostlist.HostlistError as exc:
            report.append(f"{where}: {exc}; skipped")
            continue
        cpus = _int(rec, "cpus", 0) or (
            _int(rec, "boards", 1)
            * (_int(rec, "socketsperboard", 0) or _int(rec, "sockets", 1))
            * _int(rec, "corespersocket", 1)
            * _int(rec, "threadspercore", 1)
        )
        mem = _int(rec, "realmemory", 0) or None
        if mem is None:
            report.append(
                f"{where}: no RealMemory (Slurm assumes 1 MB); the pool gets kubehpc's default memory"
            )
        features = [f for f in re.split(r"[,&|]", rec.get("features") or rec.get("availablefeatures")) if f]
        gpu_type, gpu_count = "", 0
        for g in parse_gres(rec.get("gres")) if rec.get("gres") else []:
            if g.name == "gpu":
                gpu_type, gpu_count = g.type, g.count
            else:
                report.append(f'{where}: Gres "{g.name}" has no equivalent; left out')
        extra = sorted(rec.spelled.get(k, k) for k in set(rec.values) - _NODE_KEYS_USED)
        if extra:
            report.append(f"{where}: no equivalent for {', '.join(extra)}")
        if rec.get("state").upper() in ("DOWN", "DRAIN", "FAIL", "FUTURE"):
            report.append(f"{where}: State={rec.get('state')} is not carried over; the nodes start ready")
        for h in hosts:
            nodes.append(_Node(h, rec.line, cpus, mem, features, gpu_type, gpu_count))
    return nodes


def _apply_gres_conf(nodes: list[_Node], gres: Conf | None, report: list[str]) -> None:
    if gres is None:
        return
    if gres.value("autodetect"):
        report.append(
            f"{gres.source}: AutoDetect={gres.value('autodetect')}: virtual nodes get the GPUs listed; "
            "a pool with model auto finds real GPUs with NVML"
        )
    per_node: dict[str, dict[str, int]] = {}
    names = [n.name for n in nodes]
    other: dict[str, list[int]] = {}
    for rec in gres.of("name"):
        if rec.name != "gpu":
            other.setdefault(rec.name, []).append(rec.line)
            continue
        count = _int(rec, "count", 0)
        if not count:
            files = rec.get("file")
            count = len(hostlist.expand(files)) if files else 1
        targets = hostlist.expand(rec.get("nodename")) if rec.get("nodename") else names
        for t in targets:
            types = per_node.setdefault(t, {})
            types[rec.get("type")] = types.get(rec.get("type"), 0) + count
    for name, lines in other.items():
        where = ", ".join(str(n) for n in lines)
        word = "lines" if len(lines) > 1 else "line"
        report.append(
            f"{gres.source}: {word} {where}: Name={name} has no equivalent (only GPUs are modelled)"
        )
    mixed: dict[str, list[str]] = {}
    for n in nodes:
        found = per_node.get(n.name)
        if not found:
            continue
        types = found
        if n.gpu_count and n.gpu_type:
            continue
        best = max(types.items(), key=lambda kv: kv[1])
        if len(types) > 1:
            listed = ", ".join(f"{t or 'untyped'} x{c}" for t, c in types.items())
            message = (
                f"GPUs of several types ({listed}); a kubehpc node has one GPU model, "
                f"so they get {best[0] or 'untyped'} x{best[1]}"
            )
            mixed.setdefault(message, []).append(n.name)
        n.gpu_type = n.gpu_type or best[0]
        n.gpu_count = n.gpu_count or best[1]
    for message, names_ in mixed.items():
        report.append(f"nodes {hostlist.compress(names_)}: {message}")


def _apply_topology(nodes: list[_Node], topo: Conf | None, report: list[str]) -> None:
    if topo is None:
        return
    by_name = {n.name: n for n in nodes}
    unknown: list[str] = []
    switches = topo.of("switchname")
    parent: dict[str, str] = {}
    for sw in switches:
        for child in hostlist.expand(sw.get("switches")) if sw.get("switches") else []:
            parent[child] = sw.name
    deepest = 0
    for sw in switches:
        if not sw.get("nodes"):
            continue
        depth, up = 0, sw.name
        while up in parent:
            up, depth = parent[up], depth + 1
        deepest = max(deepest, depth)
        for h in hostlist.expand(sw.get("nodes")):
            node = by_name.get(h)
            if node is None:
                unknown.append(h)
                continue
            node.rack = sw.name
            node.block = parent.get(sw.name)
    if deepest > 1:
        report.append(
            f"{topo.source}: the switch tree has {deepest + 1} levels; kubehpc keeps two "
            "(leaf switch = rack, the switch above = block); higher levels are left out"
        )
    for blk in topo.of("blockname"):
        for h in hostlist.expand(blk.get("nodes")) if blk.get("nodes") else []:
            node = by_name.get(h)
            if node is None:
                unknown.append(h)
            else:
                node.block = blk.name
    if topo.value("blocksizes"):
        report.append(
            f"{topo.source}: BlockSizes={topo.value('blocksizes')} has no equivalent; jobs ask for a block "
            "with Kueue topology requests instead"
        )
    if unknown:
        report.append(
            f"{topo.source}: {len(unknown)} nodes not in slurm.conf ({hostlist.compress(unknown)}); ignored"
        )


def _partitions(
    conf: Conf, nodes: list[_Node], report: list[str]
) -> tuple[dict[str, PartitionMapping], str | None, list[str]]:
    parts: dict[str, PartitionMapping] = {}
    default: str | None = None
    qos_names: list[str] = []
    names = [n.name for n in nodes]
    # A global DefMemPerCPU is every partition's default unless the partition sets its own.
    global_mem = conf.value("defmempercpu")
    global_mem_per_cpu = int(global_mem) if global_mem.isdigit() else None
    for rec in conf.of("partitionname"):
        where = f"{conf.source}: line {rec.line}: PartitionName={rec.name}"
        spec = rec.get("nodes", "")
        members = names if spec.upper() == "ALL" or not spec else hostlist.expand(spec)
        missing = [m for m in members if m not in names]
        if missing:
            report.append(f"{where}: nodes not defined ({hostlist.compress(missing)}); ignored")
        member_set = set(members)
        for n in nodes:
            if n.name in member_set:
                n.partitions.append(rec.name)
        if rec.get("default").upper() == "YES":
            default = rec.name
        parts[rec.name] = PartitionMapping(
            local_queue=_dns(rec.name),
            max_time=_minutes(rec.get("maxtime"), where, report),
            default_time=_minutes(rec.get("defaulttime"), where, report),
            def_mem_per_cpu=_int(rec, "defmempercpu", 0) or global_mem_per_cpu,
        )
        for key in ("qos", "allowqos"):
            for q in rec.get(key).split(","):
                if q and q.upper() != "ALL" and q not in qos_names:
                    qos_names.append(q)
        extra = sorted(rec.spelled.get(k, k) for k in set(rec.values) - _PART_KEYS_USED)
        if extra:
            report.append(f"{where}: no equivalent for {', '.join(extra)}")
        if rec.get("state") and rec.get("state").upper() != "UP":
            report.append(f"{where}: State={rec.get('state')}: the queue is created open")
    return parts, default, qos_names


def _pools(nodes: list[_Node], models: Mapping[str, str], report: list[str]) -> list[Obj]:
    pools: dict[tuple[Any, ...], list[_Node]] = {}
    for n in nodes:
        key = (
            n.line,
            tuple(sorted(n.partitions)),
            n.block,
            n.rack,
            n.gpu_type,
            n.gpu_count,
            tuple(n.features),
        )
        pools.setdefault(key, []).append(n)
    out: list[Obj] = []
    used: set[str] = set()
    missing_models: set[str] = set()
    for members in pools.values():
        first = members[0]
        base = _dns(re.sub(r"[\d_-]+$", "", first.name) or "nodes")
        name = base if not first.rack else _dns(f"{base}-{first.rack}")
        candidate, i = name, 2
        while candidate in used:
            candidate, i = f"{name}-{i}", i + 1
        used.add(candidate)
        hostnames = [_dns(m.name) for m in members]
        renamed = [m.name for m in members if _dns(m.name) != m.name]
        if renamed:
            report.append(
                f"nodes {hostlist.compress(renamed)}: renamed to valid Kubernetes names (lower case)"
            )
        labels = {PARTITION_LABEL_PREFIX + p: "true" for p in first.partitions}
        labels.update({FEATURE_LABEL_PREFIX + f: "true" for f in first.features})
        pool: Obj = {"name": candidate, "count": len(members), "cpu": str(max(first.cpus, 1))}
        if first.memory_mb:
            pool["memory"] = f"{first.memory_mb}Mi"
        if first.gpu_count:
            known = catalogue.gpu_model(first.gpu_type) if first.gpu_type else None
            # Untyped GPUs (``Gres=gpu:N``) are named "untyped" in the report and in --gpu-model.
            model = models.get(first.gpu_type or "untyped") or (known.name if known else None)
            if model:
                pool["gpus"] = {"model": model, "count": first.gpu_count}
                if first.gpu_type:
                    labels[GPU_TYPE_LABEL] = first.gpu_type
            else:
                missing_models.add(first.gpu_type or "untyped")
        if labels:
            pool["labels"] = labels
        topology = {k: v for k, v in (("block", first.block), ("rack", first.rack)) if v}
        if topology:
            pool["topology"] = {k: _dns(v) for k, v in topology.items()}
        pool["hostnames"] = hostnames
        out.append(pool)
    for t in sorted(missing_models):
        names = ", ".join(catalogue.CATALOGUE)
        report.append(
            f'GPU type "{t}" is not a known model, so those GPUs are left out; name one with '
            f"--gpu-model {t}=MODEL (known: {names})"
        )
    return out


def _queue_objects(
    pools: list[Obj],
    parts: Mapping[str, PartitionMapping],
    cohort: str,
    namespace: str,
    qos: Mapping[str, int],
) -> list[Obj]:
    from kubehpc.api.quantity import parse_quantity

    objs: list[Obj] = []
    for part, pm in parts.items():
        label = PARTITION_LABEL_PREFIX + part
        members = [p for p in pools if label in p.get("labels", {})]
        cpu = sum(int(p["cpu"]) * p["count"] for p in members)
        mem_mi = sum(
            parse_quantity(p.get("memory", "16Gi")).value() // (1 << 20) * p["count"] for p in members
        )
        gpus = sum(p["gpus"]["count"] * p["count"] for p in members if "gpus" in p)
        flavor = _dns(f"slurm-{part}")
        resources = [{"name": "cpu", "nominalQuota": cpu}, {"name": "memory", "nominalQuota": f"{mem_mi}Mi"}]
        covered = ["cpu", "memory"]
        if gpus:
            resources.append({"name": "nvidia.com/gpu", "nominalQuota": gpus})
            covered.append("nvidia.com/gpu")
        queue = pm.local_queue or _dns(part)
        objs += [
            {
                "apiVersion": KUEUE,
                "kind": "ResourceFlavor",
                "metadata": {"name": flavor},
                "spec": {"nodeLabels": {label: "true"}},
            },
            {
                "apiVersion": KUEUE,
                "kind": "ClusterQueue",
                "metadata": {"name": queue},
                "spec": {
                    "cohortName": cohort,
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {"coveredResources": covered, "flavors": [{"name": flavor, "resources": resources}]}
                    ],
                },
            },
            {
                "apiVersion": KUEUE,
                "kind": "LocalQueue",
                "metadata": {"name": queue, "namespace": namespace},
                "spec": {"clusterQueue": queue},
            },
        ]
    for name, value in qos.items():
        objs.append(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": _dns(name)},
                "value": value,
                "description": f"Slurm QOS {name}",
            }
        )
    return objs


def parse_qos_table(text: str, source: str) -> dict[str, int]:
    """``sacctmgr show qos format=Name,Priority -P``: a ``Name|Priority`` header, then rows."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return {}
    header = [h.strip().lower() for h in lines[0].split("|")]
    if "name" not in header or "priority" not in header:
        raise ValueError(
            f"{source}: expected a Name|Priority header (sacctmgr show qos format=Name,Priority -P)"
        )
    ni, pi = header.index("name"), header.index("priority")
    out: dict[str, int] = {}
    for number, line in enumerate(lines[1:], start=2):
        cells = line.split("|")
        try:
            out[cells[ni]] = int(cells[pi] or 0)
        except (IndexError, ValueError):
            raise ValueError(f"{source}: line {number}: cannot read {line!r}") from None
    return out


def import_slurm(
    slurm: Conf,
    gres: Conf | None = None,
    topology: Conf | None = None,
    gpu_models: Mapping[str, str] | None = None,
    qos_priorities: Mapping[str, int] | None = None,
    namespace: str = "default",
) -> ImportResult:
    report: list[str] = []
    nodes = _nodes(slurm, report)
    if not nodes:
        raise ValueError(f"{slurm.source}: no NodeName lines; nothing to import")
    _apply_gres_conf(nodes, gres, report)
    _apply_topology(nodes, topology, report)
    parts, default, qos_names = _partitions(slurm, nodes, report)
    pools = _pools(nodes, gpu_models or {}, report)
    cluster = _dns(slurm.value("clustername", "slurm"))
    qos = {q: (qos_priorities or {}).get(q, 0) for q in qos_names}
    qos.update(qos_priorities or {})
    if qos_names and not qos_priorities:
        report.append(
            "QOS priorities live in the accounting database, not slurm.conf; the PriorityClasses get value 0 "
            "(give --qos with `sacctmgr show qos format=Name,Priority -P` output)"
        )
    daemon = [slurm.original_keys.get(k, k) for k in slurm.globals if _DAEMON_KEYS.match(k)]
    other = [
        slurm.original_keys.get(k, k)
        for k in slurm.globals
        if not _DAEMON_KEYS.match(k) and k not in _EXPLAINED and k not in _GLOBAL_KEYS_USED
    ]
    for key, why in _EXPLAINED.items():
        if key in slurm.globals:
            report.append(f"{slurm.source}: {slurm.original_keys.get(key, key)}={slurm.value(key)}: {why}")
    if daemon:
        report.append(f"{slurm.source}: daemon settings with no equivalent (not needed): {', '.join(daemon)}")
    if other:
        report.append(f"{slurm.source}: no equivalent for {', '.join(other)}")
    mapping = SlurmMapping(
        cluster_name=slurm.value("clustername", "kubehpc"),
        default_partition=default,
        partitions=parts,
        qos={q: QosMapping(priority_class_name=_dns(q)) for q in qos},
    )
    config = {
        "apiVersion": CLUSTER_API_VERSION,
        "kind": "ClusterConfig",
        "metadata": {"name": cluster},
        "spec": {"nodePools": pools},
    }
    return ImportResult(config, _queue_objects(pools, parts, cluster, namespace, qos), mapping, report)
