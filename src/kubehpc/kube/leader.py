"""Leader election through a ``coordination.k8s.io/v1`` Lease, as client-go's leaderelection.

Replicas of ``kubehpc controller`` campaign for one Lease; only its holder runs the scheduler and
the controllers. The holder renews every ``retry_period_s``; a candidate takes the Lease over
only when it has watched the same record unrenewed for ``lease_duration_s`` *by its own clock*
(client-go's rule, so clocks need not agree). Every write carries the resourceVersion it read,
so when two candidates race exactly one wins (409 for the other). A holder that cannot renew
for ``renew_deadline_s`` steps down before its Lease can expire, so two replicas never both
schedule — and a pod bound twice is refused by the API server anyway (409 on its Binding).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubehpc.api.errors import AlreadyExists, ApiError, Conflict, NotFound
from kubehpc.store.client import Client

log = logging.getLogger(__name__)
Obj = dict[str, Any]
LEASE_API = "coordination.k8s.io/v1"


@dataclass(frozen=True)
class LeaseConfig:
    name: str = "kubehpc-controller"
    namespace: str = "kube-system"
    identity: str = ""
    lease_duration_s: float = 15.0
    renew_deadline_s: float = 10.0
    retry_period_s: float = 2.0

    def __post_init__(self) -> None:
        if not self.identity:
            raise ValueError("leader election needs an identity")
        if not self.retry_period_s < self.renew_deadline_s < self.lease_duration_s:
            raise ValueError("want retry_period_s < renew_deadline_s < lease_duration_s")


def micro_time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self, client: Client, config: LeaseConfig, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.client = client
        self.config = config
        self.clock = clock
        self._observed: tuple[str, str] | None = None  # (holder, renewTime) last seen
        self._observed_at = 0.0
        self.leading = False

    def _record(self, lease: Obj) -> tuple[str, str]:
        spec = lease.get("spec") or {}
        return str(spec.get("holderIdentity") or ""), str(spec.get("renewTime") or "")

    def _spec(self, previous: Obj | None) -> Obj:
        now = micro_time(time.time())
        spec: Obj = {
            "holderIdentity": self.config.identity,
            "leaseDurationSeconds": int(self.config.lease_duration_s),
            "renewTime": now,
        }
        prev = previous or {}
        if prev.get("holderIdentity") == self.config.identity and prev.get("acquireTime"):
            spec["acquireTime"] = prev["acquireTime"]
            spec["leaseTransitions"] = int(prev.get("leaseTransitions") or 0)
        else:
            spec["acquireTime"] = now
            spec["leaseTransitions"] = int(prev.get("leaseTransitions") or 0) + (1 if previous else 0)
        return spec

    def try_acquire_or_renew(self) -> bool:
        """One attempt; whether this replica holds the Lease afterwards."""
        c = self.config
        try:
            lease = self.client.get(LEASE_API, "Lease", c.name, c.namespace)
        except NotFound:
            try:
                self.client.create(
                    {
                        "apiVersion": LEASE_API,
                        "kind": "Lease",
                        "metadata": {"name": c.name, "namespace": c.namespace},
                        "spec": self._spec(None),
                    }
                )
            except (AlreadyExists, Conflict):
                return False  # another candidate created it first
            self._observed = None
            return True
        record = self._record(lease)
        now = self.clock()
        if record != self._observed:
            self._observed, self._observed_at = record, now
        holder = record[0]
        if holder and holder != c.identity and now < self._observed_at + c.lease_duration_s:
            return False
        lease["spec"] = self._spec(lease.get("spec"))
        try:
            updated = self.client.update(lease)  # carries the resourceVersion read: 409 on a race
        except Conflict:
            return False
        self._observed, self._observed_at = self._record(updated), self.clock()
        return True

    def release(self) -> None:
        """Give the Lease up on a clean stop, so another replica need not wait it out."""
        c = self.config
        try:
            lease = self.client.get(LEASE_API, "Lease", c.name, c.namespace)
            if (lease.get("spec") or {}).get("holderIdentity") != c.identity:
                return
            lease["spec"] = {**lease["spec"], "holderIdentity": None, "leaseDurationSeconds": 1}
            self.client.update(lease)
        except ApiError as err:
            log.info("could not release the lease: %s", err)

    def run(
        self, stop: threading.Event, on_started: Callable[[], None], on_stopped: Callable[[], None]
    ) -> None:
        """Campaign until ``stop``; call ``on_started`` on winning and ``on_stopped`` on losing
        the Lease (or stopping while holding it)."""
        c = self.config
        last_renew = 0.0
        while not stop.is_set():
            try:
                held = self.try_acquire_or_renew()
            except ApiError as err:
                log.warning("leader election: %s", err)
                held = False
            except Exception as err:  # the API server unreachable, a dropped connection
                log.warning("leader election: %s", err)
                held = False
            now = self.clock()
            if held:
                last_renew = now
                if not self.leading:
                    self.leading = True
                    log.info("leader election: %s now holds lease %s/%s", c.identity, c.namespace, c.name)
                    on_started()
            elif self.leading and now - last_renew >= c.renew_deadline_s:
                self.leading = False
                log.warning(
                    "leader election: %s lost lease %s/%s; stepping down", c.identity, c.namespace, c.name
                )
                on_stopped()
            stop.wait(c.retry_period_s)
        if self.leading:
            self.leading = False
            on_stopped()
            self.release()
