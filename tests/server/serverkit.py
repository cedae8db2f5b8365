"""Helpers shared by the HTTP API tests."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import httpx

from kubehpc.store.home import Home
from kubehpc.store.store import Store

TOKEN = "test-token"
REPO = Path(__file__).resolve().parents[2]


@dataclass
class LiveServer:
    url: str
    store: Store
    home: Home

    def client(self, token: str | None = TOKEN, **kwargs: object) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=10, **kwargs)  # type: ignore[arg-type]


def pod(name: str, namespace: str = "default", labels: dict[str, str] | None = None, **spec: object) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec},
    }


@dataclass
class ControlPlane:
    """`python -m kubehpc.server` running as a subprocess, and how to reach it."""

    home: Path
    kubeconfig: Path
    url: str
    process: subprocess.Popen[bytes]

    def kubectl(
        self,
        *args: str,
        check: bool = True,
        timeout: float = 30,
        stdin: str | None = None,
        stderr: bool = False,
    ) -> str:
        """kubectl's stdout (and stderr when it failed or ``stderr=True``)."""
        result = subprocess.run(
            ["/usr/bin/kubectl", "--cache-dir", str(self.home / "kubectl-cache"), *args],
            env={**os.environ, "KUBECONFIG": str(self.kubeconfig), "HOME": str(self.home)},
            capture_output=True,
            text=True,
            timeout=timeout,
            input=stdin,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        return result.stdout + (result.stderr if stderr or result.returncode else "")
