"""sinfo and ``scontrol show node|partition``: Nodes and the pods on them, as Slurm shows them.

A node belongs to partition P when it carries the label ``partition.slurm.kubehpc.io/P``
(``kubehpc import slurm`` puts them on the node pools); nodes without such a label belong to
the mapping's default partition (``default`` when it names none). Node states: ``down``
(Ready is not True), ``drain`` / ``drng`` (cordoned, without / with pods), ``alloc`` (all CPUs
requested), ``mix`` (some), ``idle`` (none).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kubehpc.slurm import hostlist
from kubehpc.slurm.columns import Column, percent_format, render
from kubehpc.slurm.mapping import FALLBACK_PARTITION, FEATURE_LABEL_PREFIX, GPU_TYPE_LABEL, SlurmMapping
from kubehpc.slurm.timefmt import format_scontrol_time, format_time_limit

Obj = dict[str, Any]
PARTITION_LABEL_PREFIX = "partition.slurm.kubehpc.io/"
SINFO_DEFAULT = "%#P %.5a %.10l %.6D %.6t %N"
SINFO_NODES = "%#N %.6D %.#P %6t"
SINFO_NODES_LONG = "%#N %.6D %.#P %.11T %4c %.8z %.6m %.8d %.6w %.8f %20E"  # as Slurm 22.05 prints it
SINFO_LONG = "%#P %.5a %.10l %.10s %.4r %.8h %.10g %.6D %.11T %N"


def _cpu_millis(value: Any) -> int:
    text = str(value or "0")
    if text.endswith("m"):
        return int(text[:-1])
    return int(float(text) * 1000)


def _mem_mb(value: Any) -> int:
    from kubehpc.api.quantity import parse_quantity

    try:
        return int(parse_quantity(str(value or "0")).value() // (1024 * 1024))
    except ValueError:
        return 0


@dataclass
class NodeRecord:
    name: str
    state: str
    cpus: int
    cpus_alloc: float
    memory_mb: int
    gpus: int
    gpu_type: str
    features: list[str]
    partitions: list[str]
    reason: str = ""
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def gres(self) -> str:
        if not self.gpus:
            return "(null)"
        return f"gpu:{self.gpu_type}:{self.gpus}" if self.gpu_type else f"gpu:{self.gpus}"


@dataclass
class Group:
    """One sinfo row: the nodes of a partition in one state."""

    partition: str
    default: bool
    state: str
    nodes: list[NodeRecord]
    time_limit_s: int | None

    @property
    def nodelist(self) -> str:
        return hostlist.compress([n.name for n in self.nodes])


def node_records(
    nodes: list[Obj], pods: list[Obj], mapping: SlurmMapping, gpu_resource: str = "nvidia.com/gpu"
) -> list[NodeRecord]:
    used: dict[str, int] = {}
    busy: set[str] = set()
    for p in pods:
        node = (p.get("spec") or {}).get("nodeName")
        if not node or (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        busy.add(node)
        for c in (p.get("spec") or {}).get("containers") or []:
            req = (c.get("resources") or {}).get("requests") or {}
            used[node] = used.get(node, 0) + _cpu_millis(req.get("cpu", 0))
    default = mapping.default_partition or FALLBACK_PARTITION
    out = []
    for n in nodes:
        meta = n.get("metadata") or {}
        name = meta.get("name", "")
        labels = dict(meta.get("labels") or {})
        alloc = (n.get("status") or {}).get("allocatable") or (n.get("status") or {}).get("capacity") or {}
        cpus = _cpu_millis(alloc.get("cpu", 0)) // 1000
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (n.get("status") or {}).get("conditions") or []
        )
        cpu_used = used.get(name, 0) / 1000
        if not ready:
            state, reason = "down*", "Not responding"
        elif (n.get("spec") or {}).get("unschedulable"):
            state, reason = ("drng" if name in busy else "drain"), "Cordoned"
        elif cpus and cpu_used >= cpus:
            state, reason = "alloc", ""
        elif cpu_used > 0 or name in busy:
            state, reason = "mix", ""
        else:
            state, reason = "idle", ""
        parts = [k[len(PARTITION_LABEL_PREFIX) :] for k in labels if k.startswith(PARTITION_LABEL_PREFIX)]
        out.append(
            NodeRecord(
                name=name,
                state=state,
                cpus=cpus,
                cpus_alloc=cpu_used,
                memory_mb=_mem_mb(alloc.get("memory")),
                gpus=int(str(alloc.get(gpu_resource, "0") or 0)),
                gpu_type=labels.get(GPU_TYPE_LABEL, ""),
                features=sorted(
                    k[len(FEATURE_LABEL_PREFIX) :] for k in labels if k.startswith(FEATURE_LABEL_PREFIX)
                ),
                partitions=sorted(parts) or [default],
                reason=reason,
                labels=labels,
            )
        )
    out.sort(key=lambda r: hostlist.natural_key(r.name))
    return out


def partition_names(records: Sequence[NodeRecord], mapping: SlurmMapping) -> list[str]:
    """Partitions in the mapping's order, then any others the nodes name."""
    names = list(mapping.partitions)
    for r in records:
        for p in r.partitions:
            if p not in names:
                names.append(p)
    return names


def groups(records: Sequence[NodeRecord], mapping: SlurmMapping, node_oriented: bool = False) -> list[Group]:
    default = mapping.default_partition or FALLBACK_PARTITION
    out: list[Group] = []
    for part in partition_names(records, mapping):
        members = [r for r in records if part in r.partitions]
        limit = mapping.partition(part).max_time
        if node_oriented:
            out += [
                Group(part, part == default, r.state, [r], limit * 60 if limit else None) for r in members
            ]
            continue
        by_state: dict[str, list[NodeRecord]] = {}
        for r in members:  # states in the order their first node appears, as sinfo lists them
            by_state.setdefault(r.state, []).append(r)
        out += [
            Group(part, part == default, s, ns, limit * 60 if limit else None) for s, ns in by_state.items()
        ]
    return out


def sinfo_text(
    records: Sequence[NodeRecord],
    mapping: SlurmMapping,
    fmt: str = SINFO_DEFAULT,
    node_oriented: bool = False,
    header: bool = True,
) -> str:
    rows = groups(records, mapping, node_oriented)
    part_width = max([9, *(len(g.partition) + (1 if g.default else 0) for g in rows)])
    node_width = max([8, *(len(g.nodelist) for g in rows)]) + 1
    fmt = fmt.replace("%.#P", f"%.{part_width}P").replace("%#P", f"%{part_width}P")
    fmt = fmt.replace("%#N", f"%{node_width}N")

    def first(g: Group) -> NodeRecord:
        return g.nodes[0]

    letters: dict[str, Column[Group]] = {
        "P": Column("PARTITION", lambda g: g.partition + ("*" if g.default else "")),
        "R": Column("PARTITION", lambda g: g.partition),
        "a": Column("AVAIL", lambda g: "up"),
        # sinfo says "infinite" where squeue says "UNLIMITED".
        "l": Column(
            "TIMELIMIT", lambda g: format_time_limit(g.time_limit_s) if g.time_limit_s else "infinite"
        ),
        "D": Column("NODES", lambda g: str(len(g.nodes))),
        "t": Column("STATE", lambda g: g.state),
        "T": Column("STATE", lambda g: _long_state(g.state)),
        "N": Column("NODELIST", lambda g: g.nodelist),
        "c": Column("CPUS", lambda g: str(first(g).cpus)),
        "z": Column("S:C:T", lambda g: f"1:{first(g).cpus}:1"),
        "m": Column("MEMORY", lambda g: str(first(g).memory_mb)),
        "d": Column("TMP_DISK", lambda g: "0"),
        "w": Column("WEIGHT", lambda g: "1"),
        "f": Column("AVAIL_FEATURES", lambda g: ",".join(first(g).features) or "(null)"),
        "G": Column("GRES", lambda g: first(g).gres),
        "E": Column("REASON", lambda g: first(g).reason or "none"),
        "s": Column("JOB_SIZE", lambda g: "1-infinite"),
        "r": Column("ROOT", lambda g: "no"),
        "h": Column("OVERSUBS", lambda g: "NO"),
        "g": Column("GROUPS", lambda g: "all"),
        "C": Column(
            "CPUS(A/I/O/T)",
            lambda g: "{}/{}/0/{}".format(
                int(sum(n.cpus_alloc for n in g.nodes)),
                int(sum(n.cpus - n.cpus_alloc for n in g.nodes if not n.state.startswith("down"))),
                sum(n.cpus for n in g.nodes),
            ),
        ),
    }
    return render(percent_format(fmt, letters, "sinfo"), rows, header)


_LONG_STATES = {
    "idle": "idle",
    "mix": "mixed",
    "alloc": "allocated",
    "down": "down",
    "drain": "drained",
    "drng": "draining",
}


def _long_state(state: str) -> str:
    return _LONG_STATES.get(state, state)


def scontrol_node(r: NodeRecord) -> str:
    lines = [
        [f"NodeName={r.name}", "Arch=x86_64", f"CoresPerSocket={r.cpus}"],
        [f"CPUAlloc={int(r.cpus_alloc)}", f"CPUTot={r.cpus}"],
        [f"AvailableFeatures={','.join(r.features) or '(null)'}"],
        [f"Gres={r.gres}"],
        [f"RealMemory={r.memory_mb}"],
        [f"State={_long_state(r.state).upper()}"],
        [f"Partitions={','.join(r.partitions)}"],
        [f"Reason={r.reason or '(null)'}"],
    ]
    return "".join(("   " if i else "") + " ".join(p) + "\n" for i, p in enumerate(lines)) + "\n"


def scontrol_partition(name: str, records: Sequence[NodeRecord], mapping: SlurmMapping) -> str:
    members = [r for r in records if name in r.partitions]
    pm = mapping.partition(name)
    default = name == (mapping.default_partition or FALLBACK_PARTITION)
    lines = [
        [f"PartitionName={name}"],
        ["AllowGroups=ALL", "AllowAccounts=ALL", "AllowQos=ALL"],
        [f"Default={'YES' if default else 'NO'}", "QoS=N/A"],
        [
            f"DefaultTime={format_scontrol_time(pm.default_time * 60) if pm.default_time else 'NONE'}",
            f"MaxTime={format_scontrol_time(pm.max_time * 60 if pm.max_time else None)}",
        ],
        [f"Nodes={hostlist.compress([r.name for r in members]) or '(null)'}"],
        ["State=UP", f"TotalCPUs={sum(r.cpus for r in members)}", f"TotalNodes={len(members)}"],
        [f"DefMemPerCPU={pm.def_mem_per_cpu or 'UNLIMITED'}"],
        [f"LocalQueue={mapping.queue_for(name)}"],
    ]
    return "".join(("   " if i else "") + " ".join(p) + "\n" for i, p in enumerate(lines)) + "\n"
