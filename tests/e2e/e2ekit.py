"""End-to-end helpers: the real `kubehpc up` as a subprocess, driven by the real kubectl."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml

REPO = Path(__file__).resolve().parents[2]
KUBECTL = "/usr/bin/kubectl"

# Two small CPU nodes are enough for these tests and keep pod start-up independent of how many
# cores the test machine has.
CLUSTER = """\
apiVersion: kubehpc.io/v1alpha1
kind: ClusterConfig
metadata: {name: e2e}
spec:
  nodePools:
    - name: cpu
      count: 2
      cpu: "4"
      memory: 8Gi
"""


@dataclass
class Plane:
    """A `kubehpc up` process in the foreground and how to reach it."""

    home: Path
    process: subprocess.Popen[bytes] | None = None
    url: str = ""
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.home.parent / f"{self.home.name}.out"

    @property
    def kubeconfig(self) -> Path:
        return self.home / "kubeconfig"

    def start(self, cluster: str | None = CLUSTER) -> Plane:
        args = [sys.executable, "-m", "kubehpc.cli", "--home", str(self.home), "up", "--port", "0"]
        if cluster is not None:
            cfg = self.home.parent / f"{self.home.name}-cluster.yaml"
            cfg.write_text(cluster)
            args += ["--cluster", str(cfg)]
        self.kubeconfig.unlink(missing_ok=True)
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"kubehpc up exited: {self.log.read_text()[-3000:]}")
            if self.kubeconfig.exists():
                self.url = yaml.safe_load(self.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
                try:
                    if httpx.get(self.url + "/readyz", verify=False, timeout=1).text == "ok":
                        return self
                except httpx.HTTPError:
                    pass
            time.sleep(0.05)
        raise AssertionError(f"kubehpc up did not become ready in 60 s: {self.log.read_text()[-3000:]}")

    def kill9(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def kubectl(self, *args: str, check: bool = True, timeout: float = 60, stdin: str | None = None) -> str:
        """kubectl's stdout; its stderr too when it fails (and then AssertionError if ``check``)."""
        result = subprocess.run(
            [KUBECTL, "--cache-dir", str(self.home / "kubectl-cache"), *args],
            env={**os.environ, "KUBECONFIG": str(self.kubeconfig)},
            capture_output=True,
            text=True,
            timeout=timeout,
            input=stdin,
        )
        if result.returncode != 0:
            if check:
                raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
            return result.stdout + result.stderr
        return result.stdout
