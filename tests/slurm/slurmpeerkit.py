"""Helpers for the side-by-side tests: a real Slurm started by scripts/slurm_peer.py, and an
embedded kubehpc built from that Slurm's own slurm.conf with ``kubehpc import slurm``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LAUNCHER = REPO / "scripts" / "slurm_peer.py"


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "KUBECONFIG", "KUBEHPC_HOME"))}


@dataclass
class SlurmPeer:
    """A running slurmctld + one slurmd per node, all under ``root``."""

    root: Path

    @property
    def conf(self) -> Path:
        return self.root / "etc" / "slurm.conf"

    @property
    def gres(self) -> Path:
        return self.root / "etc" / "gres.conf"

    def env(self) -> dict[str, str]:
        return {**_clean_env(), "SLURM_CONF": str(self.conf)}

    def run(self, *cmd: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(cmd), capture_output=True, text=True, env=self.env(), cwd=cwd, timeout=60, check=False
        )

    def sbatch(self, *args: str, cwd: Path) -> str:
        proc = self.run("sbatch", *args, cwd=cwd)
        assert proc.returncode == 0, f"real sbatch {args}: {proc.stderr}"
        return proc.stdout.split()[-1]

    @classmethod
    def start(cls, root: Path, *options: str) -> SlurmPeer:
        proc = subprocess.run(
            [sys.executable, str(LAUNCHER), "start", "--dir", str(root), *options],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if proc.returncode != 0:
            # Never a skip: the side-by-side check is part of the suite's promise.
            pytest.fail(f"could not start the real Slurm peer: {proc.stderr.strip()}", pytrace=False)
        return cls(root)

    def stop(self) -> None:
        subprocess.run(
            [sys.executable, str(LAUNCHER), "stop", "--dir", str(self.root)],
            capture_output=True,
            timeout=120,
            check=False,
        )


@dataclass
class Kubehpc:
    home: Path

    def run(
        self, *args: str, cwd: Path | None = None, timeout: float = 90
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kubehpc.cli", "--home", str(self.home), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=_clean_env(),
            cwd=cwd or self.home,
            check=False,
        )

    def ok(self, *args: str, cwd: Path | None = None) -> str:
        proc = self.run(*args, cwd=cwd)
        assert proc.returncode == 0, f"kubehpc {' '.join(args)}: {proc.stderr}"
        return proc.stdout

    def sbatch(self, *args: str, cwd: Path) -> str:
        return self.ok("sbatch", *args, cwd=cwd).split()[-1]

    @classmethod
    def from_slurm(cls, home: Path, peer: SlurmPeer, scratch: Path) -> Kubehpc:
        """``kubehpc import slurm`` the peer's configuration, then ``kubehpc up`` on it with the
        imported queues and Slurm mapping (cluster name, default partition)."""
        kh = cls(home)
        home.mkdir(parents=True, exist_ok=True)
        imported = scratch / "imported"
        kh.ok("import", "slurm", "--conf", str(peer.conf), "--gres", str(peer.gres), "-o", str(imported))
        (home / "slurm-mapping.yaml").write_text((imported / "slurm-mapping.yaml").read_text())
        kh.ok("up", "-d", "--port", "0", "--cluster", str(imported / "cluster.yaml"))
        kh.ok("apply", "-f", str(imported / "queues.yaml"))
        return kh

    def stop(self) -> None:
        self.run("down")


def wait_for_files(paths: list[Path], done: Callable[[str], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(p.exists() and done(p.read_text(errors="replace")) for p in paths):
            return
        time.sleep(0.3)
    missing = [str(p) for p in paths if not p.exists() or not done(p.read_text(errors="replace"))]
    raise AssertionError(f"output files missing or incomplete after {timeout:.0f} s: {missing}")


def slurm_env(text: str) -> dict[str, str]:
    """The ``SLURM_*`` lines a job printed with ``env``."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, eq, value = line.partition("=")
        if eq and key.startswith("SLURM_"):
            out[key] = value
    return out
