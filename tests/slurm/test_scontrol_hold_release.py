"""``scontrol hold`` / ``release`` on sbatch Jobs: comma lists of ids as in Slurm, and a released
job of a Kueue queue goes back to its queue still suspended (Kueue unsuspends it on admission; its
webhook refuses a queued job unsuspended by hand)."""

from __future__ import annotations

import argparse
import io
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from viewkit import sbatch_job

from kubehpc.api.kinds import build_registry
from kubehpc.cli.slurm_views import run_scontrol
from kubehpc.slurm import translate as T
from kubehpc.store.store import Store

Obj = dict[str, Any]


@pytest.fixture
def store() -> Iterator[Store]:
    with Store(build_registry(), None) as s:
        yield s


def submit(store: Store, job_id: int, *directives: str) -> None:
    job = sbatch_job(job_id, *directives)
    for key in ("uid", "creationTimestamp"):
        job["metadata"].pop(key, None)
    job.pop("status", None)
    store.create(job)


def scontrol(store: Store, verb: str, *words: str) -> int:
    session = SimpleNamespace(
        client=lambda: store, args=argparse.Namespace(namespace=None), stdout=io.StringIO()
    )
    return run_scontrol(session, argparse.Namespace(verb=verb, words=list(words)))  # type: ignore[arg-type]


def job(store: Store, job_id: int) -> Obj:
    return store.get("batch/v1", "Job", f"slurm-{job_id}", "default")


def test_release_takes_a_comma_list_of_job_ids(store: Store) -> None:
    submit(store, 7, "-H")
    submit(store, 8, "-H")
    assert scontrol(store, "release", "7,8") == 0
    for job_id in (7, 8):
        released = job(store, job_id)
        assert T.ANN_HOLD not in (released["metadata"].get("annotations") or {})
        assert released["spec"]["suspend"] is False


def test_hold_takes_a_comma_list_of_job_ids(store: Store) -> None:
    submit(store, 7)
    submit(store, 8)
    assert scontrol(store, "hold", "7,8") == 0
    assert all(job(store, j)["metadata"]["annotations"][T.ANN_HOLD] for j in (7, 8))


def test_a_released_job_of_a_kueue_queue_returns_to_its_queue_suspended(store: Store) -> None:
    submit(store, 7, "-H", "-p gpu")
    assert scontrol(store, "release", "7") == 0
    released = job(store, 7)
    assert released["metadata"]["labels"][T.QUEUE_LABEL] == "gpu"
    assert released["spec"]["suspend"] is True
