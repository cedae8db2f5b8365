"""Running the ``kubehpc`` command in tests: as a subprocess, or in process via ``main()``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Result:
    code: int
    out: str
    err: str


def run_subprocess(home: Path, *args: str, timeout: float = 90) -> Result:
    """``kubehpc --home HOME ARGS...`` as its own process, without the caller's KUBECONFIG."""
    env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBEHPC_HOME")}
    proc = subprocess.run(
        [sys.executable, "-m", "kubehpc.cli", "--home", str(home), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


Kubehpc = Callable[..., Result]
