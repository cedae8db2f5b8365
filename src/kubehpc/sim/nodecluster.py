"""The cluster a node-level replay runs on: a cluster config's nodes and its topology levels.

The nodes are those ``kubehpc up`` registers for the same file (``api.cluster_config``), with
the allocatable the node agent advertises, as a ``sched.NodeTable``. The topology levels are a
Kueue ``Topology``'s: by default the block and rack labels the cluster config puts on its nodes,
or those of a ``Topology`` manifest (``--topology FILE``), as the live scheduler reads them from
its Topology objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from kubehpc.api.cluster_config import (
    LABEL_BLOCK,
    LABEL_RACK,
    ClusterConfigError,
    load_cluster_config,
    resolve_nodes,
)
from kubehpc.api.devices import node_devices
from kubehpc.api.names import qualified_name
from kubehpc.sched.model import PODS, NodeInfo, Taint
from kubehpc.sched.nodetable import NodeTable
from kubehpc.sched.topology import HOSTNAME_LABEL
from kubehpc.sim.traces.common import IntArray, TraceError


@dataclass(frozen=True)
class NodeCluster:
    """A cluster config's nodes as the scheduling core sees them, and its topology levels."""

    source: str
    table: NodeTable
    levels: tuple[str, ...]
    """Kueue Topology levels (node labels), coarse to fine; by default the cluster config's
    block and rack, then ``kubernetes.io/hostname``."""

    def capacity(self, resources: tuple[str, ...]) -> IntArray:
        """Per resource of a trace, the sum of the nodes' allocatable (0 where none has it)."""
        out = []
        for r in resources:
            col = self.table.resource_index.get(r)
            out.append(int(self.table.allocatable[:, col].sum()) if col is not None else 0)
        return np.array(out, dtype=np.int64)


def read_topology(path: str | Path) -> tuple[str, ...]:
    """The levels (node labels, coarse to fine) of the one Kueue ``Topology`` in ``path``."""
    p = Path(path)
    try:
        docs = [d for d in yaml.safe_load_all(p.read_text()) if d is not None]
    except OSError as exc:
        raise TraceError(f"--topology {p}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise TraceError(f"--topology {p}: not YAML: {exc}") from None
    if len(docs) != 1:
        raise TraceError(f"--topology {p}: needs exactly one Kueue Topology, found {len(docs)} documents")
    doc = docs[0]
    api = str(doc.get("apiVersion", "")) if isinstance(doc, dict) else ""
    if not isinstance(doc, dict) or doc.get("kind") != "Topology" or not api.startswith("kueue.x-k8s.io/"):
        raise TraceError(
            f"--topology {p}: not a Kueue Topology (kind: Topology, apiVersion: kueue.x-k8s.io/...)"
        )
    levels = (doc.get("spec") or {}).get("levels") if isinstance(doc.get("spec"), dict) else None
    if not isinstance(levels, list) or not levels:
        raise TraceError(f"--topology {p}: spec.levels: a non-empty list of {{nodeLabel: ...}} is required")
    out: list[str] = []
    for i, level in enumerate(levels):
        label = level.get("nodeLabel") if isinstance(level, dict) else None
        problems = qualified_name(label) if isinstance(label, str) and label else ["a node label is required"]
        if label in out:
            problems = [f"{label!r} appears twice"]
        if problems:
            raise TraceError(f"--topology {p}: spec.levels[{i}].nodeLabel: {'; '.join(problems)}")
        out.append(str(label))
    return tuple(out)


def load_node_cluster(path: str | Path, levels: tuple[str, ...] | None = None) -> NodeCluster:
    """The nodes of a cluster config: allocatable as the node agent advertises it (cpu,
    memory, pods, and each device resource: whole GPUs, MIG profiles, shared replicas).

    ``levels``: a Kueue Topology's; by default the cluster config's block and rack labels."""
    try:
        config = load_cluster_config(path)
        nodes = resolve_nodes(config)
    except ClusterConfigError as exc:
        raise TraceError(str(exc)) from None
    infos = []
    for node in nodes:
        allocatable = {
            "cpu": node.cpu_millis,
            "memory": node.memory_bytes,
            PODS: node.pods,
            **node_devices(node, config.metadata.name).capacity(),
        }
        taints = tuple(Taint(t.key, t.value, t.effect) for t in node.taints)
        infos.append(NodeInfo(node.name, allocatable, labels=dict(node.labels), taints=taints))
    if levels is None:
        found = tuple(k for k in (LABEL_BLOCK, LABEL_RACK) if any(k in n.labels for n in nodes))
        levels = (*found, HOSTNAME_LABEL)
    return NodeCluster(str(path), NodeTable.build(infos), levels)
