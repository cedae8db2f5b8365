"""Per-object rules of the API server that the store applies on writes.

Small pure functions: server-set metadata, the generation rule, what a delete does to an
object (graceful pod termination, finalizers, propagation), and the namespace lifecycle.
"""

from __future__ import annotations

import functools
import os
import random
import time
from datetime import UTC, datetime
from typing import Any

from kubehpc.api import fields as F
from kubehpc.api.errors import Conflict
from kubehpc.api.registry import ResourceType
from kubehpc.store.client import DeleteOptions, Propagation

Obj = dict[str, Any]

# The alphabet of generateName suffixes: no vowels (no accidental words) and no look-alikes.
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
NAME_SUFFIX_LEN = 5

ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
NAMESPACE_FINALIZER = "kubernetes"
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
DEFAULT_POD_GRACE_SECONDS = 30
TERMINAL_POD_PHASES = ("Succeeded", "Failed")


def rfc3339(epoch: float) -> str:
    """Kubernetes timestamps: RFC 3339, whole seconds, UTC with a Z."""
    return _stamp(int(epoch))


@functools.lru_cache(maxsize=64)
def _stamp(second: int) -> str:
    # Formatted once per second: every create, condition and Event stamps the current second,
    # and strftime is a measurable part of a write.
    return datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_rfc3339() -> str:
    """The current time as a Kubernetes timestamp."""
    return _stamp(int(time.time()))


# Suffixes there are: one draw of random bits picks one, uniformly (a draw at or above this is
# drawn again, as client-go's generator draws again a value outside its alphabet).
_SUFFIXES = len(NAME_ALPHABET) ** NAME_SUFFIX_LEN
_SUFFIX_BITS = (_SUFFIXES - 1).bit_length()


def generated_name(prefix: str, rng: random.Random) -> str:
    """``prefix`` and five characters from client-go's alphabet, as ``generateName`` gets:
    the digits of one random number in base 27. (``random.choices``, which this replaced, runs
    interpreted: it took about a tenth of a pod create's instructions.)"""
    n = rng.getrandbits(_SUFFIX_BITS)
    while n >= _SUFFIXES:
        n = rng.getrandbits(_SUFFIX_BITS)
    base = len(NAME_ALPHABET)
    chars = []
    for _ in range(NAME_SUFFIX_LEN):
        n, digit = divmod(n, base)
        chars.append(NAME_ALPHABET[digit])
    return prefix + "".join(chars)


# The RFC 4122 variant's hexadecimal digit for the low two bits of a random one (8, 9, a, b).
_VARIANT_DIGIT = {f"{i:x}": "89ab"[i & 3] for i in range(16)}


class _UidPool:
    """Random (version 4) UUIDs formatted a read of the system's random source at a time.

    Each os.urandom call lets go of the interpreter lock for its system call, and the store asks
    for a uid while holding its own lock: with many threads waiting for the interpreter, getting
    it back stalled every create behind them, so the source is read 4 KiB at a time. Taking a
    uid is one ``list.pop``, atomic under the interpreter lock: no lock of its own. Two threads
    that find the pool empty at once both refill it, which only reads the source once more."""

    PER_READ = 256  # 16 random bytes each

    def __init__(self) -> None:
        self._ready: list[str] = []

    def take(self) -> str:
        while True:
            try:
                return self._ready.pop()
            except IndexError:
                self._ready.extend(self._fresh())

    def _fresh(self) -> list[str]:
        raw = os.urandom(16 * self.PER_READ).hex()
        out: list[str] = []
        for at in range(0, len(raw), 32):
            h = raw[at : at + 32]
            # Digit 12 is the version (4), digit 16 carries the variant in its top two bits.
            out.append(f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT_DIGIT[h[16]]}{h[17:20]}-{h[20:]}")
        return out


_uid_pool = _UidPool()


def new_uid() -> str:
    """A random (version 4) UUID, as the API server gives each object; formatted by hand from
    hexadecimal digits, a read of the random source at a time (:class:`_UidPool`)."""
    return _uid_pool.take()


def resource_ref(rt: ResourceType) -> str:
    """How the API server names a resource in messages: ``pods``, ``jobs.batch``."""
    return rt.key


def spec_part(obj: Obj) -> Obj:
    """Everything outside metadata and status: a change here bumps ``metadata.generation``."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def check_delete_preconditions(rt: ResourceType, obj: Obj, options: DeleteOptions) -> None:
    meta = F.metadata(obj)
    uid = str(meta.get("uid", ""))
    rv = str(meta.get("resourceVersion", ""))
    name = str(meta.get("name", ""))
    if options.preconditions_uid and options.preconditions_uid != uid:
        raise Conflict(
            f'Operation cannot be fulfilled on {resource_ref(rt)} "{name}": Precondition failed: '
            f"UID in precondition: {options.preconditions_uid}, UID in object meta: {uid}",
            name=name,
            kind=rt.plural,
            group=rt.group,
        )
    if options.preconditions_resource_version and options.preconditions_resource_version != rv:
        raise Conflict(
            f'Operation cannot be fulfilled on {resource_ref(rt)} "{name}": Precondition failed: '
            f"ResourceVersion in precondition: {options.preconditions_resource_version}, "
            f"ResourceVersion in object meta: {rv}",
            name=name,
            kind=rt.plural,
            group=rt.group,
        )


def is_pod(rt: ResourceType) -> bool:
    return rt.group == "" and rt.kind == "Pod"


def clears_status_on_create(rt: ResourceType) -> bool:
    """Kinds with a status subresource ignore a status sent on create, except Nodes: the
    kubelet registers its node with capacity and allocatable already filled in."""
    return rt.status_subresource and not (rt.group == "" and rt.kind == "Node")


def is_namespace(rt: ResourceType) -> bool:
    return rt.group == "" and rt.kind == "Namespace"


def pod_grace_seconds(obj: Obj, options: DeleteOptions) -> int:
    """Grace period of a pod deletion: 0 for pods no node runs (nothing to stop), else the
    options' period or the pod's terminationGracePeriodSeconds."""
    spec = F.spec(obj)
    status = F.status(obj)
    if not spec.get("nodeName") or status.get("phase") in TERMINAL_POD_PHASES:
        return 0
    if options.grace_period_seconds is not None:
        return max(0, int(options.grace_period_seconds))
    grace = spec.get("terminationGracePeriodSeconds")
    return DEFAULT_POD_GRACE_SECONDS if grace is None else max(0, int(grace))


def propagation_finalizer(policy: Propagation | None) -> str:
    if policy == Propagation.ORPHAN:
        return ORPHAN_FINALIZER
    if policy == Propagation.FOREGROUND:
        return FOREGROUND_FINALIZER
    return ""


def should_delete_on_update(obj: Obj) -> bool:
    """An object marked for deletion goes once its finalizers are gone and its grace period is
    over (as ``ShouldDeleteDuringUpdate``); namespaces also wait for ``spec.finalizers``."""
    meta = F.metadata(obj)
    if not meta.get("deletionTimestamp") or meta.get("finalizers"):
        return False
    if obj.get("kind") == "Namespace" and F.spec(obj).get("finalizers"):
        return False
    return int(meta.get("deletionGracePeriodSeconds") or 0) == 0


def prepare_namespace_create(obj: Obj) -> None:
    """A new namespace is Active and carries the ``kubernetes`` finalizer the namespace
    controller removes once it has emptied the namespace."""
    spec = obj.setdefault("spec", {})
    if "finalizers" not in spec:
        spec["finalizers"] = [NAMESPACE_FINALIZER]
    obj["status"] = {"phase": "Active"}


def namespace_terminating(obj: Obj) -> bool:
    return bool(F.metadata(obj).get("deletionTimestamp")) or F.status(obj).get("phase") == "Terminating"
