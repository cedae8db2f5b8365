"""restartCount as Kubernetes counts it: restarts that happened, not exits."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from test_node_agent import Cluster


@pytest.fixture
def slow_backoff(tmp_path) -> Iterator[Cluster]:
    # The first restart is immediate; the second waits a minute, long enough to look at.
    c = Cluster(tmp_path, backoff_base=60.0)
    yield c
    c.agent.stop(kill_pods=True)
    c.store.close()


def _waiting_reason(pod: dict) -> str:
    statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
    return str(statuses[0].get("state", {}).get("waiting", {}).get("message", ""))


def test_restart_count_counts_launches_after_the_first_not_exits(slow_backoff):
    # Two runs (the first and one immediate restart), then the container waits in back-off:
    # it has been restarted once, whatever the number of exits.
    slow_backoff.pod("twice", ["sh", "-c", "exit 1"], restartPolicy="OnFailure")
    pod = slow_backoff.wait("twice", lambda p: _waiting_reason(p).startswith("back-off 60s"))
    (cs,) = pod["status"]["containerStatuses"]
    assert cs["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert cs["lastState"]["terminated"]["exitCode"] == 1
    assert cs["restartCount"] == 1
