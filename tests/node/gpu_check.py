"""Check the device plugin on a machine with real NVIDIA GPUs (not collected by pytest).

    .venv/bin/pip install nvidia-ml-py
    .venv/bin/python tests/node/gpu_check.py

1. NVML discovery: every GPU (and MIG instance) with UUID, product, memory, NUMA node.
2. The default node built from it: capacity and GPU Feature Discovery labels.
3. An embedded store plus node agent run pods that ask CUDA (driver API through ctypes, no
   CUDA toolkit needed) which devices they see: a 1-GPU pod must see exactly the UUID it was
   given, two such pods different GPUs (when there are two), and a pod without a GPU request
   none at all.

Prints one PASS/FAIL line per check and exits non-zero on any failure.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from kubehpc.api.cluster_config import resolve_nodes, this_machine_config
from kubehpc.api.devices import POD_DEVICES_ANNOTATION
from kubehpc.api.kinds import build_registry
from kubehpc.node.agent import NodeAgent
from kubehpc.node.devices import DevicePlugin
from kubehpc.node.nvml import discover, host_facts
from kubehpc.store.home import Home
from kubehpc.store.store import Store

# Run inside each pod: print the UUIDs of the devices CUDA enumerates, one per line.
CUDA_PROBE = r"""
import ctypes, sys
try:
    cuda = ctypes.CDLL("libcuda.so.1")
except OSError as e:
    print("NO-LIBCUDA", e); sys.exit(2)
rc = cuda.cuInit(0)
if rc == 100:  # CUDA_ERROR_NO_DEVICE
    sys.exit(0)
if rc != 0:
    print("cuInit failed", rc); sys.exit(3)
n = ctypes.c_int()
cuda.cuDeviceGetCount(ctypes.byref(n))
for i in range(n.value):
    dev = ctypes.c_int()
    cuda.cuDeviceGet(ctypes.byref(dev), i)
    raw = (ctypes.c_ubyte * 16)()
    cuda.cuDeviceGetUuid(raw, dev)
    h = bytes(raw).hex()
    print(f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}")
"""

failures = 0


def check(ok: bool, what: str, detail: str = "") -> None:
    global failures
    failures += not ok
    print(("PASS " if ok else "FAIL ") + what + (f": {detail}" if detail else ""))


def wait_phase(store: Store, name: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pod = store.get("v1", "Pod", name, "default")
        if pod.get("status", {}).get("phase") in ("Succeeded", "Failed"):
            return pod
        time.sleep(0.1)
    raise TimeoutError(name)


def main() -> int:
    found = discover()
    print(f"driver {found.driver_version or '-'}; {len(found.gpus)} GPU(s) {found.reason}")
    for g in found.gpus:
        mig = list(g.mig_devices)
        print(f"  [{g.index}] {g.uuid} {g.product} {g.memory_mib} MiB numa={g.numa_node} mig={mig}")
    check(bool(found.gpus), "NVML finds GPUs", found.reason)
    if not found.gpus:
        return 1

    config = this_machine_config("gpu-check")
    (node,) = resolve_nodes(config, host_facts())
    plugin = DevicePlugin(node, config.metadata.name)
    print("capacity:", plugin.capacity())
    print("labels:", json.dumps(plugin.labels(), indent=1))
    whole = [g for g in found.gpus if not g.mig_devices]
    advertised = int(plugin.capacity().get("nvidia.com/gpu", "0"))
    check(advertised == len(whole), "whole GPUs advertised as nvidia.com/gpu", f"{advertised}/{len(whole)}")

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(build_registry(("kubehpc.api.kinds.core",)), None)
        home = Home(Path(tmp))
        agent = NodeAgent(store, config, [node], home, heartbeat_s=5)
        agent.start()
        try:
            names = []
            for i in range(min(2, len(whole))):
                names.append(f"gpu-{i}")
                limits = {"nvidia.com/gpu": 1}
                store.create(_pod(f"gpu-{i}", node.name, limits))
            store.create(_pod("nogpu", node.name, {}))
            seen: list[str] = []
            for name in names:
                pod = wait_phase(store, name)
                given = json.loads(pod["metadata"]["annotations"][POD_DEVICES_ANNOTATION])["probe"]
                visible = home.pod_log_path("default", name, "probe").read_text().split()
                check(visible == given, f"{name} sees exactly its GPU", f"given {given}, CUDA sees {visible}")
                seen += visible
            if len(names) == 2:
                check(len(set(seen)) == 2, "two GPU pods see different GPUs", str(seen))
            wait_phase(store, "nogpu")
            visible = home.pod_log_path("default", "nogpu", "probe").read_text().split()
            check(visible == [], "a pod without a GPU request sees no GPU", str(visible))
        finally:
            agent.stop(kill_pods=True)
            store.close()
    return 1 if failures else 0


def _pod(name: str, node: str, limits: dict[str, int]) -> dict:
    container = {"name": "probe", "image": "python", "command": [sys.executable, "-c", CUDA_PROBE]}
    if limits:
        container["resources"] = {"limits": limits}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": node, "restartPolicy": "Never", "containers": [container]},
    }


if __name__ == "__main__":
    sys.exit(main())
