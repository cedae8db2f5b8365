"""Ray's job submission and Serve REST APIs on the head's dashboard, as KubeRay's
``RayDashboardClient`` uses them (``/api/jobs/``, ``/api/serve/applications/``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

TERMINAL_JOB_STATUSES = ("SUCCEEDED", "FAILED", "STOPPED")
# The first deploy starts Serve's controller and HTTP proxy before the dashboard answers: tens
# of seconds on a loaded machine. Cut short, the deploy still goes on in Ray, and the retry
# then queues behind it, so a short timeout can keep a RayService from ever seeing it done.
DEPLOY_TIMEOUT_S = 90.0


class DashboardError(Exception):
    pass


@dataclass
class JobInfo:
    status: str
    message: str
    start_time_ms: int | None
    end_time_ms: int | None
    raw: dict[str, Any]


class DashboardClient:
    def __init__(self, address: str, timeout_s: float = 5.0) -> None:
        self.base = address if address.startswith("http") else f"http://{address}"
        self.timeout_s = timeout_s

    def _call(
        self, method: str, path: str, json: Any = None, timeout_s: float | None = None
    ) -> httpx.Response:
        try:
            return httpx.request(method, self.base + path, json=json, timeout=timeout_s or self.timeout_s)
        except httpx.HTTPError as err:
            raise DashboardError(f"{method} {path}: {err}") from err

    def job_info(self, submission_id: str) -> JobInfo | None:
        r = self._call("GET", f"/api/jobs/{submission_id}")
        if r.status_code == 404:
            return None
        if r.status_code != 200:
            raise DashboardError(f"job {submission_id}: HTTP {r.status_code} {r.text[:200]}")
        data = r.json()
        return JobInfo(
            status=str(data.get("status") or ""),
            message=str(data.get("message") or ""),
            start_time_ms=data.get("start_time"),
            end_time_ms=data.get("end_time"),
            raw=data,
        )

    def submit_job(self, request: dict[str, Any]) -> None:
        r = self._call("POST", "/api/jobs/", json=request)
        if r.status_code == 200:
            return
        if "already exists" in r.text:
            return  # submitted by an earlier pass: submission ids make this idempotent
        raise DashboardError(f"submitting job: HTTP {r.status_code} {r.text[:300]}")

    def stop_job(self, submission_id: str) -> None:
        self._call("POST", f"/api/jobs/{submission_id}/stop")

    def job_logs(self, submission_id: str) -> str:
        r = self._call("GET", f"/api/jobs/{submission_id}/logs")
        return str(r.json().get("logs") or "") if r.status_code == 200 else ""

    def deploy_serve(self, config: dict[str, Any]) -> None:
        r = self._call(
            "PUT", "/api/serve/applications/", json=config, timeout_s=max(self.timeout_s, DEPLOY_TIMEOUT_S)
        )
        if r.status_code != 200:
            raise DashboardError(f"deploying Serve applications: HTTP {r.status_code} {r.text[:300]}")

    def serve_details(self) -> dict[str, Any]:
        r = self._call("GET", "/api/serve/applications/")
        if r.status_code != 200:
            raise DashboardError(f"Serve status: HTTP {r.status_code} {r.text[:300]}")
        data: dict[str, Any] = r.json()
        return data
