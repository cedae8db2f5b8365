"""Leader election through a Lease: one holder at a time; a candidate takes over only after it
has seen the Lease unrenewed for its whole duration by its own clock."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from kubehpc.api.kinds import build_registry
from kubehpc.kube.leader import LeaderElector, LeaseConfig
from kubehpc.kube.ratelimit import TokenBucket
from kubehpc.kube.rest import RestClient
from kubehpc.store.store import Store


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store() -> Iterator[Store]:
    with Store(build_registry(), None) as s:
        yield s


def elector(store: Store, identity: str, clock: Clock) -> LeaderElector:
    return LeaderElector(store, LeaseConfig(identity=identity), clock)


def test_the_first_candidate_creates_and_holds_the_lease(store: Store) -> None:
    clock = Clock()
    a = elector(store, "a", clock)
    assert a.try_acquire_or_renew()
    lease = store.get("coordination.k8s.io/v1", "Lease", "kubehpc-controller", "kube-system")
    assert lease["spec"]["holderIdentity"] == "a"


def test_a_second_candidate_waits_while_the_holder_renews(store: Store) -> None:
    clock = Clock()
    a, b = elector(store, "a", clock), elector(store, "b", clock)
    assert a.try_acquire_or_renew()
    for _ in range(10):
        clock.now += 5
        assert a.try_acquire_or_renew()
        assert not b.try_acquire_or_renew()


def test_a_lease_left_unrenewed_for_its_duration_is_taken_over(store: Store) -> None:
    clock = Clock()
    a, b = elector(store, "a", clock), elector(store, "b", clock)
    assert a.try_acquire_or_renew()
    assert not b.try_acquire_or_renew()  # b starts watching the record now
    clock.now += 14
    assert not b.try_acquire_or_renew()
    clock.now += 2
    assert b.try_acquire_or_renew()
    lease = store.get("coordination.k8s.io/v1", "Lease", "kubehpc-controller", "kube-system")
    assert lease["spec"]["holderIdentity"] == "b"
    assert lease["spec"]["leaseTransitions"] == 1
    assert not a.try_acquire_or_renew()  # a's next look sees b's fresh record


def test_release_hands_over_without_waiting(store: Store) -> None:
    clock = Clock()
    a = elector(store, "a", clock)
    stop = threading.Event()
    started = threading.Event()
    thread = threading.Thread(target=a.run, args=(stop, started.set, lambda: None))
    thread.start()
    assert started.wait(5)
    stop.set()
    thread.join(5)
    lease = store.get("coordination.k8s.io/v1", "Lease", "kubehpc-controller", "kube-system")
    assert not lease["spec"].get("holderIdentity")
    assert elector(store, "b", clock).try_acquire_or_renew()  # no holder: no need to wait it out


def test_lease_timings_must_nest() -> None:
    with pytest.raises(ValueError, match="retry_period_s < renew_deadline_s < lease_duration_s"):
        LeaseConfig(identity="x", lease_duration_s=5, renew_deadline_s=10)


def test_token_bucket_lets_a_burst_through_then_paces() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    bucket = TokenBucket(qps=100, burst=10, clock=lambda: now[0], sleep=sleep)
    for _ in range(10):
        bucket.acquire()
    assert slept == []
    for _ in range(5):
        bucket.acquire()
    assert slept == pytest.approx([0.01] * 5)


def test_token_bucket_with_no_rate_never_waits() -> None:
    bucket = TokenBucket(qps=0, burst=0, sleep=lambda s: pytest.fail("slept"))
    for _ in range(1000):
        bucket.acquire()


def test_the_rest_client_paces_its_requests_by_its_token_bucket(client: RestClient) -> None:
    with RestClient(client.config, qps=10, burst=1) as paced:
        start = time.monotonic()
        for _ in range(6):
            paced.server_version()
        # One token to start with, then one every 100 ms: never faster than 5 x 100 ms, and a
        # request would have to take longer than that (a heavily loaded machine) not to wait.
        assert time.monotonic() - start >= 5 * 0.1
        assert paced.limiter.waited_s > 0
    with RestClient(client.config) as unpaced:
        for _ in range(11):
            unpaced.server_version()
        assert unpaced.limiter.waited_s == 0
