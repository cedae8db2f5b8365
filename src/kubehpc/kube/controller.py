"""Cluster mode: kubehpc's scheduler and Kueue controllers against a real Kubernetes API server.

``kubehpc controller --kubeconfig FILE`` runs this. It reuses the controller classes of the
embedded control plane (:mod:`kubehpc.runtime.controlplane`) over a :class:`RestClient`, and
leaves to the cluster what the cluster does itself: the Job controller (pods of Jobs), garbage
collection, namespaces. What it adds:

* the CustomResourceDefinitions of the kinds it owns, installed (or updated) at start;
* the scheduler for pods with ``spec.schedulerName: kubehpc`` (binding through ``pods/binding``),
  gated for Kueue admission (:mod:`kubehpc.kube.gate`);
* Kueue's Job reconciler and admission loop, with the 1.20-safe Job adapter
  (:mod:`kubehpc.kube.gatedjob`);
* leader election through a Lease: only the holder runs the loops above.

Nothing here gives up: an API server that cannot be reached, a kubeconfig it refuses, RBAC that
forbids a step — each is logged with what to fix and retried with back-off, never a crash loop.
"""

from __future__ import annotations

import gc
import logging
import os
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kubehpc.api.errors import ApiError, Forbidden, Unauthorized
from kubehpc.controllers.scheduler import SchedulerOptions
from kubehpc.kube.crds import CrdInstallError
from kubehpc.kube.gate import GatedScheduler
from kubehpc.kube.leader import LeaderElector, LeaseConfig
from kubehpc.kube.stopping import wait_until_set
from kubehpc.store.client import Client

if TYPE_CHECKING:
    from kubehpc.api.registry import Registry
    from kubehpc.sched.admission import AdmissionConfig

log = logging.getLogger(__name__)
SCHEDULER_NAME = "kubehpc"
COMPONENTS = ("scheduler", "admission")
# Run only when asked (--components): the MPI Operator's and KubeRay's controllers, as kubehpc's
# own stand-ins for those operators on a cluster that has neither.
OPTIONAL_COMPONENTS = ("mpijob", "ray")
Loop = Callable[[threading.Event], None]
YOUNG_GC_THRESHOLD = 50_000
"""Allocations between collections of the youngest generation (CPython's default: 700). The
scheduler decodes a watch event per pod it binds, about a hundred containers each, nearly all
freed at once by reference counting; at the default every few events set off a collection,
and now and then a full one that walks all the loop has built since start-up (a charge per pod
bound) — 40 ms each with 10,000 pods bound."""


def default_identity() -> str:
    return f"{socket.gethostname()}_{os.getpid()}"


@dataclass(frozen=True)
class ClusterOptions:
    scheduler_name: str = SCHEDULER_NAME
    components: tuple[str, ...] = COMPONENTS
    """``scheduler`` (binding pods), ``admission`` (Kueue: Workloads, quota, the Job gate); and
    on request ``mpijob`` (MPIJobs) and ``ray`` (RayCluster, RayJob, RayService)."""
    install_crds: bool = True
    leader_elect: bool = True
    lease: LeaseConfig = field(default_factory=lambda: LeaseConfig(identity=default_identity()))
    retry_initial_s: float = 1.0
    retry_max_s: float = 30.0
    bind_writers: int = 8
    kueue_config: AdmissionConfig | None = None
    """From Kueue's Configuration (``--kueue-config``): fair sharing; None is Kueue's defaults."""
    """Connections the Bindings and Events are pipelined on (:mod:`kubehpc.kube.pipeline`; for
    a Client that is not a RestClient, threads writing them)."""

    def __post_init__(self) -> None:
        unknown = set(self.components) - set(COMPONENTS) - set(OPTIONAL_COMPONENTS)
        if unknown:
            choices = ", ".join((*COMPONENTS, *OPTIONAL_COMPONENTS))
            raise ValueError(f"unknown components {sorted(unknown)}; choose from {choices}")


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off while the scheduler lists and caches every pod and node:
    each collection would walk all that was built so far, most of start-up's CPU at 10,000 pods.
    Pods and nodes form no reference cycles; the collector runs again afterwards."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def explain(err: BaseException) -> str:
    """One line saying what went wrong and what to check."""
    if isinstance(err, Unauthorized):
        return f"the API server refused our credentials ({err}): check the kubeconfig's user"
    if isinstance(err, Forbidden):
        return f"RBAC forbids it ({err}): grant kubehpc's service account this permission"
    return str(err)


class ClusterController:
    """Runs until ``stop``: CRDs, then leader election, then the loops while leading."""

    def __init__(
        self, client: Client, options: ClusterOptions | None = None, registry: Registry | None = None
    ) -> None:
        self.client = client
        self.options = options or ClusterOptions()
        self._registry = registry
        self.scheduler: GatedScheduler | None = None
        self.ready = threading.Event()
        """Set once the loops run (this replica leads); cleared when it steps down."""
        self._term: threading.Event | None = None
        self._threads: list[threading.Thread] = []

    # ----------------------------------------------------------------- start-up

    def _retrying(self, what: str, step: Callable[[], object], stop: threading.Event) -> bool:
        """Run ``step`` until it succeeds or ``stop``; back off, doubling, between failures."""
        delay = self.options.retry_initial_s
        while not stop.is_set():
            try:
                step()
                return True
            except (ApiError, CrdInstallError, OSError) as err:
                log.error("%s failed: %s; retrying in %.0fs", what, explain(err), delay)
            stop.wait(delay)
            delay = min(delay * 2, self.options.retry_max_s)
        return False

    def run(self, stop: threading.Event) -> None:
        if self.options.install_crds:
            # Imported here, as the Kueue controllers are in loops(): every kind's model is a
            # second of start-up CPU a scheduler-only replica does not need.
            from kubehpc.api.kinds import default_registry
            from kubehpc.kube.crds import install_crds, owned_crds

            # Built only here: generating every kind's schema is a second of CPU at start-up.
            crds = owned_crds(self._registry or default_registry())
            refused: dict[str, str] = {}

            def install() -> None:
                refused.update(install_crds(self.client, crds))

            if not self._retrying("installing CustomResourceDefinitions", install, stop):
                return
            for name, message in sorted(refused.items()):
                log.error(
                    "CustomResourceDefinition %s refused by the API server, not served: %s", name, message
                )
            log.info("CustomResourceDefinitions installed: %d of %d", len(crds) - len(refused), len(crds))
        if not self.options.leader_elect:
            self._start_term()
            wait_until_set(stop)  # timed waits: a signal handler sets it (kube/stopping.py)
            self._stop_term()
            return
        LeaderElector(self.client, self.options.lease).run(stop, self._start_term, self._stop_term)

    # ----------------------------------------------------------------- one term as leader

    def loops(self) -> dict[str, Loop]:
        loops: dict[str, Loop] = {}
        if "admission" in self.options.components:
            from kubehpc.controllers.kueue.admission import AdmissionLoop, AdmissionOptions
            from kubehpc.controllers.kueue.reconciler import JobReconciler
            from kubehpc.kube import gatedjob

            integrations = (gatedjob.integration(self.client),)
            loops["kueue-job-reconciler"] = JobReconciler(self.client, integrations).run
            from kubehpc.sched.admission import AdmissionConfig

            config = self.options.kueue_config or AdmissionConfig()
            loops["kueue-admission"] = AdmissionLoop(self.client, AdmissionOptions(config, batch_s=0.2)).run
        if "mpijob" in self.options.components:
            from kubehpc.controllers.mpijob import MPIJobController

            # No launch agent and no host check: pods are real containers, reached over ssh.
            loops["mpijob"] = MPIJobController(self.client).run
        if "ray" in self.options.components:
            from kubehpc.controllers.ray import RayClusterController, RayJobController
            from kubehpc.controllers.ray.rayservice import RayServiceController

            # KubeRay's own defaults: fixed ports, DNS names, `ray start` in each container.
            loops["raycluster"] = RayClusterController(self.client).run
            loops["rayjob"] = RayJobController(self.client).run
            loops["rayservice"] = RayServiceController(self.client).run
        return loops

    def _start_term(self) -> None:
        term = threading.Event()
        self._term = term
        if "scheduler" in self.options.components:
            thread = threading.Thread(target=self._run_scheduler, args=(term,), name="scheduler", daemon=True)
            thread.start()
            self._threads.append(thread)
        for name, loop in self.loops().items():
            thread = threading.Thread(target=self._guarded, args=(name, loop, term), name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        self.ready.set()

    def _run_scheduler(self, term: threading.Event) -> None:
        # The first lists may fail (API server away, RBAC): start afresh until they succeed;
        # after that the scheduler's informers relist and rewatch on their own.
        delay = self.options.retry_initial_s
        while not term.is_set():
            scheduler = GatedScheduler(
                self.client,
                SchedulerOptions(scheduler_names=(self.options.scheduler_name,)),
                writers=self.options.bind_writers,
            )
            try:
                with collector_paused():
                    scheduler.start()
                    # What the first lists built lives as long as the loop: out of the cyclic
                    # collector's sight, its collections walk only what changes afterwards.
                    gc.freeze()
                gc.set_threshold(YOUNG_GC_THRESHOLD, *gc.get_threshold()[1:])
            except Exception as err:
                scheduler.stop()
                log.error("starting the scheduler failed: %s; retrying in %.0fs", explain(err), delay)
                term.wait(delay)
                delay = min(delay * 2, self.options.retry_max_s)
                continue
            self.scheduler = scheduler
            term.wait()
            scheduler.stop()
            return

    def _guarded(self, name: str, loop: Loop, term: threading.Event) -> None:
        delay = self.options.retry_initial_s
        while not term.is_set():
            try:
                loop(term)
                return
            except Exception as err:
                log.error("controller %s failed: %s; restarting in %.0fs", name, explain(err), delay)
                term.wait(delay)
                delay = min(delay * 2, self.options.retry_max_s)

    def _stop_term(self) -> None:
        self.ready.clear()
        if self._term is not None:
            self._term.set()
        for thread in self._threads:
            thread.join(timeout=15)
        self._threads.clear()
        self.scheduler = None
