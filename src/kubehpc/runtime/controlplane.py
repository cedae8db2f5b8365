"""The embedded control plane of one machine: the durable store and the controllers beside it.

The HTTP API (``kubehpc.server``) is started by the caller around a ``ControlPlane`` — the
server sits above this layer — so the same ControlPlane also serves tests and tools that talk
to the store in process.

Every controller and the node agent talk to the store only through the Client protocol, exactly
as they would talk to a real API server in cluster mode; here each runs in a thread of this
process.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from kubehpc.api.cluster_config import ClusterConfig, load_cluster_config, resolve_nodes, this_machine_config
from kubehpc.api.kinds import default_registry
from kubehpc.api.registry import Registry
from kubehpc.controllers.gc import GarbageCollector, kinds_of
from kubehpc.controllers.job import Clock, JobController, RealClock, ScaledClock
from kubehpc.controllers.kueue.admission import AdmissionLoop, AdmissionOptions
from kubehpc.controllers.kueue.configuration import admission_config, read_configuration
from kubehpc.controllers.kueue.estimates import EstimateLoop, EstimateOptions
from kubehpc.controllers.kueue.metrics import KueueMetrics
from kubehpc.controllers.kueue.reconciler import JobReconciler
from kubehpc.controllers.kueue.webhooks import JobWebhook, PodPriorityHook
from kubehpc.controllers.namespace import NamespaceController
from kubehpc.controllers.pvc import PvcBinder
from kubehpc.controllers.ray import embedded_controllers as ray_controllers
from kubehpc.controllers.scheduler import Scheduler, SchedulerOptions
from kubehpc.controllers.scheduling.gangs import SERVED_SCHEDULERS
from kubehpc.controllers.volcano import loops as volcano_loops
from kubehpc.node.agent import NodeAgent
from kubehpc.node.nvml import host_facts
from kubehpc.runtime.mpi import mpijob_controller
from kubehpc.sched.admission import AdmissionConfig
from kubehpc.slurm.allocation import record_allocations
from kubehpc.slurm.deps import reconcile_holds
from kubehpc.slurm.jobs import sbatch_objects
from kubehpc.store.admission import AdmissionHook
from kubehpc.store.home import Home
from kubehpc.store.store import Store

log = logging.getLogger(__name__)

Loop = Callable[[threading.Event], None]
SLURM_HOLD_PERIOD_S = 2.0
ADMISSION_BATCH_S = 0.2  # admission cycles per second at most, under a stream of changes
DEFAULT_EVENT_TTL_S = 3600.0  # kube-apiserver's --event-ttl default
EXPIRY_PERIOD_MAX_S = 60.0  # how often expired Events are looked for, at most


def cluster_config_of(home: Home) -> ClusterConfig:
    """The cluster ``kubehpc up --cluster`` kept in the home, else one node sized from this
    machine (with its real GPUs when NVML finds any)."""
    if home.cluster_path.exists():
        return load_cluster_config(home.cluster_path)
    return this_machine_config()


def kueue_config_of(home: Home) -> AdmissionConfig:
    """The admission core's config from the Kueue Configuration ``kubehpc up --kueue-config``
    kept in the home; Kueue's defaults without one."""
    if home.kueue_config_path.exists():
        return admission_config(read_configuration(home.kueue_config_path))
    return AdmissionConfig()


JOB_CLOCK_SPEED_ENV = "KUBEHPC_JOB_CLOCK_SPEED"


def job_clock() -> Clock:
    """The Job controller's clock: real time, unless ``$KUBEHPC_JOB_CLOCK_SPEED`` (a factor, for
    end-to-end tests and demos) speeds up its back-off, deadlines and TTLs."""
    raw = os.environ.get(JOB_CLOCK_SPEED_ENV, "")
    if not raw:
        return RealClock()
    try:
        return ScaledClock(float(raw))
    except ValueError:
        raise ValueError(f"{JOB_CLOCK_SPEED_ENV}: want a positive number, got {raw!r}") from None


@dataclass
class ControlPlane:
    """Opens the store under ``home`` and runs the controllers (and, with ``nodes``, the node
    agent of the cluster config) until :meth:`stop`."""

    home: Home
    registry: Registry = field(default_factory=default_registry)
    nodes: bool = True
    cluster: ClusterConfig | None = None
    metrics: CollectorRegistry = field(default_factory=CollectorRegistry)
    """The Prometheus registry the controllers report into; the API serves it at /metrics."""
    event_ttl_s: float = DEFAULT_EVENT_TTL_S
    """How long an Event is kept after its last write (kube-apiserver's ``--event-ttl``)."""
    store: Store = field(init=False)
    agent: NodeAgent | None = field(init=False, default=None)
    scheduler: Scheduler = field(init=False)
    admission: AdmissionLoop = field(init=False)
    kueue_config: AdmissionConfig = field(init=False)
    """From Kueue's Configuration in the home (fair sharing), else Kueue's defaults."""
    _stop: threading.Event = field(init=False, default_factory=threading.Event)
    _threads: list[threading.Thread] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self.home.ensure()
        # What the API server gets from admission plugins and Kueue's webhook: queued Jobs are
        # suspended on create, pods get their priority from their PriorityClass.
        hooks: list[AdmissionHook] = [JobWebhook(), PodPriorityHook(lambda: self.store)]
        self.store = Store(
            self.registry, self.home.db_path, admission=hooks, ttl={("v1", "Event"): self.event_ttl_s}
        )
        # kubehpc is the only scheduler here: it also serves pods written for Volcano's.
        self.scheduler = Scheduler(
            self.store, SchedulerOptions(scheduler_names=SERVED_SCHEDULERS, watch_pod_groups=True)
        )
        self.kueue_config = kueue_config_of(self.home)
        self.admission = AdmissionLoop(
            self.store,
            AdmissionOptions(config=self.kueue_config, batch_s=ADMISSION_BATCH_S),
            metrics=KueueMetrics(self.metrics),
        )

    def controllers(self) -> dict[str, Loop]:
        """The control loops this plane runs, by name."""
        kinds = kinds_of(self.registry)
        return {
            "garbage-collector": GarbageCollector(self.store, kinds).run,
            "namespace": NamespaceController(self.store, kinds).run,
            "pvc-binder": PvcBinder(self.store).run,
            "job": JobController(self.store, clock=job_clock()).run,
            "kueue-job-reconciler": JobReconciler(self.store).run,
            "kueue-admission": self.admission.run,
            **volcano_loops(self.store),  # Volcano Jobs, Queues and PodGroups; coscheduling PodGroups
            "kueue-estimated-starts": EstimateLoop(self.store, EstimateOptions(config=self.kueue_config)).run,
            "mpijob": mpijob_controller(self.store, self.home).run,
            **ray_controllers(self.store),
            "slurm-holds": self._release_slurm_holds,
            "event-expiry": self._expire_events,
        }

    def _expire_events(self, stop: threading.Event) -> None:
        """Delete Events that outlived ``event_ttl_s``, looked for a tenth of it apart (a
        minute at most): an Event lives its time to live and up to a tenth more."""
        period = min(self.event_ttl_s / 10, EXPIRY_PERIOD_MAX_S)
        while not stop.wait(period):
            expired = self.store.expire()
            if expired:
                log.debug("expired %d events", expired)

    def _release_slurm_holds(self, stop: threading.Event) -> None:
        """Release sbatch jobs whose --dependency or --begin is satisfied (and cancel those whose
        dependency can no longer be), checked every SLURM_HOLD_PERIOD_S, as slurmctld checks
        its pending jobs periodically; and record the nodes of multi-node jobs that got them."""
        while not stop.wait(SLURM_HOLD_PERIOD_S):
            # Read once for both passes, read-only: they only read them to write patches.
            objects = sbatch_objects(self.store, read_only=True)
            for action in reconcile_holds(self.store, time.time(), kueue_manages=True, objects=objects):
                log.info("slurm: %s", action)
            for action in record_allocations(self.store, objects=objects):
                log.debug("slurm: %s", action)

    def start(self) -> ControlPlane:
        for name, loop in self.controllers().items():
            thread = threading.Thread(target=self._guarded, args=(name, loop), name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        self.scheduler.start()
        if self.nodes:
            cluster = self.cluster or cluster_config_of(self.home)
            self.agent = NodeAgent(self.store, cluster, resolve_nodes(cluster, host_facts()), self.home)
            self.agent.start()
        return self

    def _guarded(self, name: str, loop: Loop) -> None:
        # A controller that crashes must not take the API down with it: log and restart it,
        # as a controller manager would restart a failed control loop.
        while not self._stop.is_set():
            try:
                loop(self._stop)
            except Exception:
                log.exception("controller %s crashed; restarting", name)
                self._stop.wait(1.0)
            else:
                return

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the controllers and close the store. Pods keep running, as when a kubelet
        restarts: the next start adopts them."""
        self._stop.set()
        self.scheduler.stop()
        if self.agent is not None:
            self.agent.stop()
        for thread in self._threads:
            thread.join(timeout)
        self._threads.clear()
        self.store.close()

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
