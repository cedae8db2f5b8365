"""The watching loop: Jobs and pods changed through the Store are reconciled without calls
to ``reconcile``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest
from jobkit import Cluster, job_manifest


def eventually(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.01)
    raise AssertionError("condition not reached")


@pytest.fixture
def running() -> Iterator[Cluster]:
    k = Cluster()
    stop = threading.Event()
    thread = threading.Thread(target=k.controller.run, args=(stop,), daemon=True)
    thread.start()
    yield k
    stop.set()
    thread.join(timeout=10)
    assert not thread.is_alive()
    k.store.close()


def test_run_loop_creates_pods_for_a_new_job_and_completes_it(running: Cluster) -> None:
    k = running
    k.create(job_manifest("loop", completions=2, parallelism=2))
    eventually(lambda: len(k.active("loop")) == 2)
    for pod in k.active("loop"):
        k.succeed(pod)
    eventually(lambda: k.condition("loop", "Complete") is not None)
    assert k.status("loop")["succeeded"] == 2


def test_run_loop_wakes_up_after_the_back_off(running: Cluster) -> None:
    k = running
    k.create(job_manifest("again", backoffLimit=3))
    eventually(lambda: len(k.active("again")) == 1)
    k.fail(k.active("again")[0])
    eventually(lambda: k.status("again").get("failed") == 1)
    k.clock.advance(10)  # the loop polls the fake clock and replaces the pod
    eventually(lambda: len(k.active("again")) == 1)


def test_run_loop_reacts_to_suspend(running: Cluster) -> None:
    k = running
    k.create(job_manifest("sus", parallelism=2, completions=2))
    eventually(lambda: len(k.active("sus")) == 2)
    k.patch_spec("sus", suspend=True)
    eventually(lambda: k.condition("sus", "Suspended") is not None and not k.active("sus"))


def test_pods_of_a_replaced_job_are_released_when_they_are_deleted(running: Cluster) -> None:
    k = running
    k.create(job_manifest("same", nodeName="node-1"))
    eventually(lambda: len(k.active("same")) == 1)
    (old,) = k.active("same")
    k.store.delete("batch/v1", "Job", "same", "default")
    k.create(job_manifest("same", nodeName="node-1"))
    k.store.delete("v1", "Pod", old["metadata"]["name"], "default")  # as the garbage collector would
    eventually(lambda: not k.pod(old["metadata"]["name"])["metadata"].get("finalizers"))
