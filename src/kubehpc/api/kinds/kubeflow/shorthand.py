"""The seed's MPIJob shorthand: ``spec.worker`` / ``spec.launcher`` instead of ``mpiReplicaSpecs``.

No MPI Operator schema (v1 or v2beta1) has those fields; the intent is plain, so they are moved
to ``spec.mpiReplicaSpecs.Worker`` / ``.Launcher`` (keeping ``replicas``, ``restartPolicy`` and
``template``) with a warning that says so. Called by :func:`kubehpc.api.shorthands.expand_shorthands`.
"""

from __future__ import annotations

from kubehpc.api.kinds.kubeflow.mpijob import GROUP, LAUNCHER, WORKER
from kubehpc.api.loader import Document

_ROLES = (("launcher", LAUNCHER), ("worker", WORKER))


def expand_mpijob_shorthands(docs: list[Document]) -> list[str]:
    warnings = []
    for doc in docs:
        obj = doc.obj
        if obj.get("kind") != "MPIJob" or not str(obj.get("apiVersion", "")).startswith(GROUP + "/"):
            continue
        spec = obj.get("spec")
        if not isinstance(spec, dict) or not any(isinstance(spec.get(k), dict) for k, _ in _ROLES):
            continue
        replicas = spec.setdefault("mpiReplicaSpecs", {})
        if not isinstance(replicas, dict):
            continue
        moved = []
        for key, role in _ROLES:
            value = spec.get(key)
            if not isinstance(value, dict) or role in replicas:
                continue
            replicas[role] = spec.pop(key)
            moved.append(f"spec.{key} -> spec.mpiReplicaSpecs.{role}")
        if moved:
            warnings.append(
                f"{doc.source} doc {doc.index}: MPIJob: {', '.join(moved)}: the MPI Operator has no "
                "spec.worker/spec.launcher; read as its mpiReplicaSpecs (write them so for a real cluster)"
            )
    return warnings
