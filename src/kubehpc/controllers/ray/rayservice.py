"""The RayService controller: KubeRay's ``RayServiceReconciler`` over the Client protocol.

A RayService owns up to two RayClusters: the *active* one that serves and, during an upgrade,
a *pending* one. Each pass:

* the cluster spec's hash (``rayClusterConfig``) is compared with the active cluster's: when
  it differs (or there is none) a pending cluster ``<service>-<suffix>`` is created; when only
  ``serveConfigV2`` changed, the new config is deployed to the active cluster in place;
* once a cluster is ready, ``serveConfigV2`` is deployed to it through Ray Serve's REST API
  (``PUT /api/serve/applications/``) and the applications' health is read back;
* a pending cluster whose applications all run takes over: the serve Service
  ``<service>-serve-svc`` now selects its head, it becomes active, and the old cluster is
  deleted ``rayClusterDeletionDelaySeconds`` later;
* status: ``serviceStatus`` Running when the active cluster's applications all run, the
  application and deployment statuses of both clusters, ``numServeEndpoints``, and the
  conditions Ready and UpgradeInProgress.

On the embedded cluster every Ray node shares the host's ports, so Serve's HTTP proxy runs on
the head only, on the port the head was given (``http_options``, ``proxy_location: HeadOnly``).
"""

from __future__ import annotations

import copy
import hashlib
import json
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

import yaml

from kubehpc.api.errors import AlreadyExists, Conflict, Invalid, NotFound
from kubehpc.controllers.ray import constants as c
from kubehpc.controllers.ray import objects as O
from kubehpc.controllers.ray.dashboard import DashboardClient, DashboardError
from kubehpc.controllers.ray.loop import OwnerLoop
from kubehpc.controllers.ray.validation import rayservice_spec_problems
from kubehpc.store.client import Client, DeleteOptions, ListOptions, Propagation
from kubehpc.store.events import EventRecorder, record_quietly
from kubehpc.store.strategy import rfc3339

Obj = dict[str, Any]
COMPONENT = "rayservice-controller"
POLL_S = 1.0
HEALTH_PERIOD_S = 5.0
HASH_ANNOTATION = "ray.io/hash-without-replicas-and-workers-to-delete"
SERVE_HASH_ANNOTATION = "kubehpc.io/serve-config-hash"
SERVE_LABEL = "ray.io/serve"
DEFAULT_DELETION_DELAY_S = 60
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

EventSink = Callable[[Obj, str, str, str], Any]
DashboardFactory = Callable[[str], DashboardClient]


def cluster_hash(spec: Obj) -> str:
    """The cluster spec's hash without what the autoscaler changes (KubeRay's rule: a change
    of replicas or workersToDelete is not an upgrade)."""
    spec = copy.deepcopy(spec)
    for group in spec.get("workerGroupSpecs") or ():
        group.pop("replicas", None)
        group.pop("scaleStrategy", None)
    return hashlib.sha1(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]


def serve_hash(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:16]


class RayServiceController:
    def __init__(
        self,
        client: Client,
        mode: O.HostMode | None = None,
        *,
        events: EventSink | None = None,
        dashboard: DashboardFactory = DashboardClient,
        clock: Callable[[], float] = time.time,
        resync_s: float = 10.0,
    ) -> None:
        self.client = client
        self.mode = mode or O.HostMode()
        self.events: EventSink = events or EventRecorder(client, COMPONENT).record
        self.dashboard = dashboard
        self.clock = clock
        self.resync_s = resync_s
        self._pending_deletes: dict[tuple[str, str], float] = {}

    def reconcile(self, namespace: str, name: str) -> float | None:
        try:
            svc = self.client.get(c.API_VERSION, c.SERVICE_KIND, name, namespace)
        except NotFound:
            return None
        if (svc.get("metadata") or {}).get("deletionTimestamp"):
            return None
        spec = svc.get("spec") or {}
        status: Obj = copy.deepcopy(svc.get("status") or {})
        before = copy.deepcopy(status)
        again: float | None = self._delete_due(namespace)
        if spec.get("suspend"):
            for cl in self._clusters(svc):
                self._delete_cluster(svc, cl["metadata"]["name"])
            status.pop("activeServiceStatus", None)
            status.pop("pendingServiceStatus", None)
            status["serviceStatus"] = ""
            status["conditions"] = _conditions(status, ready=False, upgrading=False, reason="Suspended")
            return self._write(svc, status, before, again)
        problems = rayservice_spec_problems(spec)
        if problems:  # no cluster is made from a spec KubeRay would refuse
            message = "; ".join(problems)
            if (status.get("conditions") or [{}])[0].get("reason") != "ValidationFailed":
                self._event(svc, "Warning", "InvalidRayServiceSpec", message)
            status["conditions"] = _conditions(
                status, ready=False, upgrading=False, reason="ValidationFailed"
            )
            try:
                return self._write(svc, status, before, again)
            except Invalid:
                # A v1alpha1 RayService without rayClusterConfig cannot be written back through
                # the v1 schema; the event is all that reports it.
                return None
        want = cluster_hash(spec.get("rayClusterConfig") or {})
        clusters = {cl["metadata"]["name"]: cl for cl in self._clusters(svc)}
        active_name = (status.get("activeServiceStatus") or {}).get("rayClusterName")
        pending_name = (status.get("pendingServiceStatus") or {}).get("rayClusterName")
        active = clusters.get(active_name or "")
        pending = clusters.get(pending_name or "")
        if pending is not None and _hash_of(pending) != want:
            self._delete_cluster(svc, pending["metadata"]["name"])  # the spec moved on again
            pending = None
        if active is None or _hash_of(active) != want:
            if pending is None:
                pending = self._create_cluster(svc, want)
        else:
            if pending is not None:  # the spec went back to the active cluster's
                self._delete_cluster(svc, pending["metadata"]["name"])
            pending = None
        active_apps = self._serve(svc, active) if active is not None else None
        pending_apps = self._serve(svc, pending) if pending is not None else None
        if pending is not None and pending_apps is not None and _all_running(pending_apps):
            # Switch-over: the pending cluster serves from now on.
            old = active
            self._ensure_serve_service(svc, pending)
            self._event(svc, "Normal", "Promoted", f"RayCluster {pending['metadata']['name']} serves now")
            if old is not None:
                delay = spec.get("rayClusterDeletionDelaySeconds")
                delay = DEFAULT_DELETION_DELAY_S if delay is None else int(delay)
                self._pending_deletes[(namespace, old["metadata"]["name"])] = self.clock() + delay
                again = _min(again, float(delay))
            active, active_apps, pending, pending_apps = pending, pending_apps, None, None
            status["activeServiceStatus"] = {"rayClusterName": active["metadata"]["name"]}
            status["activeServiceStatus"]["lastTrafficMigratedTime"] = rfc3339(self.clock())
        if active is not None:
            self._ensure_serve_service(svc, active)
            status["activeServiceStatus"] = {
                **(status.get("activeServiceStatus") or {}),
                "rayClusterName": active["metadata"]["name"],
                "rayClusterStatus": _cluster_status(active),
                "applicationStatuses": active_apps or {},
                "trafficRoutedPercent": 100,
            }
        if pending is not None:
            status["pendingServiceStatus"] = {
                "rayClusterName": pending["metadata"]["name"],
                "rayClusterStatus": _cluster_status(pending),
                "applicationStatuses": pending_apps or {},
                "trafficRoutedPercent": 0,
            }
        else:
            status.pop("pendingServiceStatus", None)
        ready = active is not None and active_apps is not None and _all_running(active_apps)
        status["serviceStatus"] = "Running" if ready else ""
        status["numServeEndpoints"] = 1 if ready else 0
        status["conditions"] = _conditions(
            status,
            ready=ready,
            upgrading=pending is not None,
            reason="" if ready else "WaitForServeDeploymentReady",
        )
        # Poll while something is on its way; otherwise keep the applications' health current.
        again = _min(again, POLL_S if not ready or pending is not None else HEALTH_PERIOD_S)
        return self._write(svc, status, before, again)

    # --- pieces ----------------------------------------------------------------------------

    def _write(self, svc: Obj, status: Obj, before: Obj, again: float | None) -> float | None:
        if status != before:
            status["observedGeneration"] = int((svc.get("metadata") or {}).get("generation") or 1)
            status["lastUpdateTime"] = rfc3339(self.clock())
            try:
                self.client.update_status({**svc, "status": status})
            except (Conflict, NotFound):
                return 0.2
        return again

    def _clusters(self, svc: Obj) -> list[Obj]:
        uid = svc["metadata"].get("uid")
        listed = self.client.list(
            c.API_VERSION,
            c.CLUSTER_KIND,
            ListOptions(
                namespace=svc["metadata"].get("namespace"),
                label_selector=f"{c.ORIGINATED_FROM_CR_NAME_LABEL}={svc['metadata']['name']}",
            ),
        )
        return [
            cl
            for cl in listed.items
            if not cl["metadata"].get("deletionTimestamp")
            and any(r.get("uid") == uid for r in cl["metadata"].get("ownerReferences") or ())
        ]

    def _create_cluster(self, svc: Obj, want: str) -> Obj:
        meta = svc["metadata"]
        name = f"{meta['name']}-{''.join(secrets.choice(_ALPHABET) for _ in range(5))}"
        cluster = {
            "apiVersion": c.API_VERSION,
            "kind": c.CLUSTER_KIND,
            "metadata": {
                "name": name,
                "namespace": meta.get("namespace", "default"),
                "labels": {
                    c.ORIGINATED_FROM_CR_NAME_LABEL: meta["name"],
                    c.ORIGINATED_FROM_CRD_LABEL: c.SERVICE_KIND,
                },
                "annotations": {HASH_ANNOTATION: want},
                "ownerReferences": [O.owner_reference(svc)],
            },
            "spec": copy.deepcopy((svc.get("spec") or {}).get("rayClusterConfig") or {}),
        }
        try:
            created = self.client.create(cluster)
        except AlreadyExists:
            return self.client.get(c.API_VERSION, c.CLUSTER_KIND, name, meta.get("namespace"))
        self._event(svc, "Normal", "CreatedRayCluster", f"Created RayCluster {name}")
        return created

    def _serve_config(self, svc: Obj, cluster: Obj) -> Obj:
        text = (svc.get("spec") or {}).get("serveConfigV2") or ""
        config = yaml.safe_load(text) if text else {}
        if not isinstance(config, dict):
            raise ValueError("spec.serveConfigV2: want a YAML mapping")
        if self.mode.host_processes:
            port = ((cluster.get("status") or {}).get("endpoints") or {}).get("serve")
            http = dict(config.get("http_options") or {})
            http.update({"host": "127.0.0.1", "port": int(port or c.SERVE_PORT)})
            config["http_options"] = http
            config["proxy_location"] = "HeadOnly"
        return config

    def _serve(self, svc: Obj, cluster: Obj) -> Obj | None:
        """Deploy the serve config to a ready cluster when it changed; its applications'
        statuses (None while it cannot be asked)."""
        if (cluster.get("status") or {}).get("state") != c.READY:
            return None
        endpoints = (cluster.get("status") or {}).get("endpoints") or {}
        if self.mode.host_processes:
            address = f"127.0.0.1:{endpoints.get('dashboard')}"
        else:
            address = O.dashboard_address(cluster, None)
        dash = self.dashboard(address)
        text = (svc.get("spec") or {}).get("serveConfigV2") or ""
        want = serve_hash(text)
        if (cluster["metadata"].get("annotations") or {}).get(SERVE_HASH_ANNOTATION) != want:
            try:
                config = self._serve_config(svc, cluster)
                dash.deploy_serve(config)
            except (DashboardError, ValueError, yaml.YAMLError) as err:
                self._event(svc, "Warning", "FailedToUpdateServeApplications", str(err))
                return None
            self._event(
                svc,
                "Normal",
                "UpdatedServeApplications",
                f"Deployed serveConfigV2 to {cluster['metadata']['name']}",
            )
            self._annotate(cluster, SERVE_HASH_ANNOTATION, want)
        try:
            details = dash.serve_details()
        except DashboardError:
            return None
        return _application_statuses(details, self.clock())

    def _annotate(self, cluster: Obj, key: str, value: str) -> None:
        for _ in range(3):
            try:
                current = self.client.get(
                    c.API_VERSION,
                    c.CLUSTER_KIND,
                    cluster["metadata"]["name"],
                    cluster["metadata"].get("namespace"),
                )
                current["metadata"].setdefault("annotations", {})[key] = value
                self.client.update(current)
                return
            except Conflict:
                continue
            except NotFound:
                return

    def _ensure_serve_service(self, svc: Obj, cluster: Obj) -> None:
        meta = svc["metadata"]
        name = f"{meta['name']}-serve-svc"
        port = int(((cluster.get("status") or {}).get("endpoints") or {}).get("serve") or c.SERVE_PORT)
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": name,
                "namespace": meta.get("namespace", "default"),
                "labels": {
                    c.ORIGINATED_FROM_CR_NAME_LABEL: meta["name"],
                    c.ORIGINATED_FROM_CRD_LABEL: c.SERVICE_KIND,
                },
                "ownerReferences": [O.owner_reference(svc)],
            },
            "spec": {
                "selector": {c.CLUSTER_LABEL: cluster["metadata"]["name"], c.NODE_TYPE_LABEL: "head"},
                "ports": [{"name": "serve", "port": port, "targetPort": port, "protocol": "TCP"}],
            },
        }
        try:
            current = self.client.get("v1", "Service", name, meta.get("namespace"))
        except NotFound:
            try:
                self.client.create(body)
            except AlreadyExists:
                pass
            return
        if (
            current["spec"].get("selector") != body["spec"]["selector"]
            or current["spec"].get("ports") != body["spec"]["ports"]
        ):
            current["spec"]["selector"] = body["spec"]["selector"]
            current["spec"]["ports"] = body["spec"]["ports"]
            try:
                self.client.update(current)
            except (Conflict, NotFound):
                pass

    def _delete_due(self, namespace: str) -> float | None:
        """Delete old clusters whose deletion delay passed; seconds until the next is due."""
        now = self.clock()
        nxt: float | None = None
        for (ns, name), due in list(self._pending_deletes.items()):
            if ns != namespace:
                continue
            if due <= now:
                try:
                    self.client.delete(
                        c.API_VERSION,
                        c.CLUSTER_KIND,
                        name,
                        ns,
                        DeleteOptions(propagation_policy=Propagation.BACKGROUND),
                    )
                except NotFound:
                    pass
                del self._pending_deletes[(ns, name)]
            else:
                nxt = _min(nxt, due - now)
        return nxt

    def _delete_cluster(self, svc: Obj, name: str) -> None:
        try:
            self.client.delete(
                c.API_VERSION,
                c.CLUSTER_KIND,
                name,
                svc["metadata"].get("namespace"),
                DeleteOptions(propagation_policy=Propagation.BACKGROUND),
            )
        except NotFound:
            return
        self._event(svc, "Normal", "DeletedRayCluster", f"Deleted RayCluster {name}")

    def _event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        record_quietly(self.events, obj, type_, reason, message)

    def run(self, stop: threading.Event) -> None:
        OwnerLoop(
            self.client,
            c.API_VERSION,
            c.SERVICE_KIND,
            self.reconcile,
            owned=((c.API_VERSION, c.CLUSTER_KIND),),
            resync_s=self.resync_s,
        ).run(stop)


def _min(a: float | None, b: float) -> float:
    return b if a is None else min(a, b)


def _hash_of(cluster: Obj) -> str:
    return str((cluster["metadata"].get("annotations") or {}).get(HASH_ANNOTATION) or "")


def _cluster_status(cluster: Obj) -> Obj:
    st = cluster.get("status") or {}
    return {k: st[k] for k in ("state", "desiredWorkerReplicas", "availableWorkerReplicas") if k in st}


def _all_running(apps: Obj) -> bool:
    return bool(apps) and all(a.get("status") == "RUNNING" for a in apps.values())


def _application_statuses(details: Obj, now: float) -> Obj:
    """Serve's ``applications`` in KubeRay's ``applicationStatuses`` shape."""
    out: Obj = {}
    for name, app in (details.get("applications") or {}).items():
        deployments = {
            d: {"status": str(info.get("status") or ""), "message": str(info.get("message") or "")}
            for d, info in (app.get("deployments") or {}).items()
        }
        out[name] = {
            "status": str(app.get("status") or ""),
            "message": str(app.get("message") or ""),
            "serveDeploymentStatuses": deployments,
        }
    return out


def _conditions(status: Obj, *, ready: bool, upgrading: bool, reason: str) -> list[Obj]:
    old = {c_.get("type"): c_ for c_ in status.get("conditions") or ()}
    out = []
    for type_, value, why in (
        ("Ready", ready, "NonZeroServeEndpoints" if ready else reason or "NotReady"),
        ("UpgradeInProgress", upgrading, "PendingClusterExists" if upgrading else "NoPendingCluster"),
    ):
        text = "True" if value else "False"
        prev = old.get(type_)
        if prev and prev.get("status") == text and prev.get("reason") == why:
            out.append(prev)
        else:
            out.append(
                {
                    "type": type_,
                    "status": text,
                    "reason": why,
                    "message": "",
                    "lastTransitionTime": rfc3339(time.time()),
                }
            )
    return out
