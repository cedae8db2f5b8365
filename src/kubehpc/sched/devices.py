"""Device choice as part of the decision, so two decisions never hand out the same device.

The core does not know how GPUs, MIG instances or time-sliced replicas are chosen; the caller
hands in a pure allocator (the node agent's, ``kubehpc.api.devices.allocate_pod``) together
with each node's inventory and the devices already held there. While deciding, the core keeps
its own running count of holders, so every pod placed in the same decision sees the devices
the pods before it took.

A node without an inventory (a real cluster, where the kubelet's device plugin chooses) gets
no device choice: the pod is bound by counts alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubehpc.sched.model import PodShape

# (inventory, holders per device id, pod) -> {container: [device ids]}; raises ValueError
# saying why when the node's free devices cannot meet the pod's requests.
Allocate = Callable[[Any, Mapping[str, int], dict[str, Any]], dict[str, list[str]]]


@dataclass(frozen=True)
class DeviceState:
    allocate: Allocate
    inventories: dict[str, Any]
    """Node name -> the allocator's inventory of that node (nodes without one are absent)."""
    holders: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Node name -> device id -> how many containers hold it now."""


def _pod_stub(shape: PodShape) -> dict[str, Any]:
    """The part of a pod spec an allocator reads: containers and their device limits."""
    init: list[dict[str, Any]] = []
    app: list[dict[str, Any]] = []
    for c in shape.devices:
        entry = {"name": c.container, "resources": {"limits": {r: str(n) for r, n in c.requests}}}
        (init if c.init else app).append(entry)
    return {"spec": {"initContainers": init, "containers": app}}


def holders_of(allocation: Mapping[str, list[str]], shape: PodShape) -> Counter[str]:
    """How many holders a pod's allocation adds per device: app containers add up, an init
    container's devices are reused by the containers after it (the device manager's rule)."""
    inits = {c.container for c in shape.devices if c.init}
    app: Counter[str] = Counter()
    init_max: Counter[str] = Counter()
    for container, ids in allocation.items():
        if container in inits:
            for dev, k in Counter(ids).items():
                init_max[dev] = max(init_max[dev], k)
        else:
            app.update(ids)
    return Counter({dev: max(app[dev], init_max[dev]) for dev in set(app) | set(init_max)})


class DeviceBook:
    """The running device holders of one decision."""

    def __init__(self, state: DeviceState | None) -> None:
        self._state = state
        self._holders: dict[str, Counter[str]] = {}

    def choose(self, node: str, shape: PodShape) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """Devices for one pod of ``shape`` on ``node`` (empty when nothing to choose), taken
        from the book. Raises ValueError when the node's free devices do not fit."""
        if self._state is None or not shape.devices:
            return ()
        inventory = self._state.inventories.get(node)
        if inventory is None:
            return ()
        holders = self._holders.get(node)
        if holders is None:
            holders = self._holders[node] = Counter(self._state.holders.get(node, {}))
        allocation = self._state.allocate(inventory, holders, _pod_stub(shape))
        holders.update(holders_of(allocation, shape))
        return tuple((container, tuple(ids)) for container, ids in sorted(allocation.items()))

    def release(self, node: str, shape: PodShape, devices: tuple[tuple[str, tuple[str, ...]], ...]) -> None:
        """Give back what :meth:`choose` handed out (a gang's tentative placement rolled back)."""
        holders = self._holders.get(node)
        if holders is not None and devices:
            holders.subtract(holders_of({c: list(ids) for c, ids in devices}, shape))

    def holders(self) -> dict[str, dict[str, int]]:
        """Node -> device -> holders, as the book stands now (for a later decision's state)."""
        out: dict[str, dict[str, int]] = {}
        if self._state is not None:
            out = {node: dict(held) for node, held in self._state.holders.items()}
        for node, held in self._holders.items():
            out[node] = {dev: k for dev, k in held.items() if k > 0}
        return out
