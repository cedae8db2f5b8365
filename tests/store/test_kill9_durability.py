"""kill -9 of a process writing to the store loses no acknowledged write."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from storekit import small_registry

from kubehpc.store.store import Store

HERE = Path(__file__).resolve().parent

WRITER = r"""
import sys
sys.path.insert(0, sys.argv[2])
from pathlib import Path
from storekit import small_registry
from kubehpc.store.store import Store

store = Store(small_registry(), Path(sys.argv[1]))
i = 0
while True:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"cm-{i}", "namespace": "default"},
           "data": {"i": str(i)}}
    out = store.create(obj)
    # acknowledged: the call returned, so the write is committed
    print(out["metadata"]["name"], out["metadata"]["resourceVersion"], flush=True)
    i += 1
"""


@pytest.mark.slow
@pytest.mark.parametrize("round_", range(3))
def test_kill_9_mid_stream_loses_no_acknowledged_write(tmp_path: Path, round_: int) -> None:
    db = tmp_path / "store.db"
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db), str(HERE)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    target = random.Random(round_).randint(50, 1500)
    acknowledged: list[tuple[str, int]] = []
    deadline = time.monotonic() + 60
    while len(acknowledged) < target and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        name, rv = line.split()
        acknowledged.append((name, int(rv)))
    os.kill(proc.pid, signal.SIGKILL)
    # lines the child printed before dying were acknowledged too
    for line in proc.stdout:
        name, _, rv = line.strip().partition(" ")
        if rv:
            acknowledged.append((name, int(rv)))
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert len(acknowledged) >= min(target, 50)

    with Store(small_registry(), db) as reopened:
        stored = {c["metadata"]["name"] for c in reopened.list("v1", "ConfigMap").items}
        missing = [name for name, _ in acknowledged if name not in stored]
        assert missing == []
        assert reopened.resource_version >= acknowledged[-1][1]
        after = reopened.create(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after", "namespace": "default"}}
        )
        assert int(after["metadata"]["resourceVersion"]) > acknowledged[-1][1]
