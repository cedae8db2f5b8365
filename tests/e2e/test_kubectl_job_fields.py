"""Job fields that play out over time, through kubectl against `kubehpc up`. The Job
controller's clock runs 10x faster (KUBEHPC_JOB_CLOCK_SPEED), so deadlines and TTLs of tens of
seconds pass in a few; everything else is as in production."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2ekit import Plane

pytestmark = pytest.mark.kubectl


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KUBEHPC_JOB_CLOCK_SPEED", "10")
        p = Plane(tmp_path_factory.mktemp("jobfields") / "home").start()
    try:
        yield p
    finally:
        p.stop()


def job(name: str, command: str, **spec: object) -> str:
    extra = "".join(f"  {k}: {json.dumps(v)}\n" for k, v in spec.items())
    return (
        textwrap.dedent(
            f"""\
        apiVersion: batch/v1
        kind: Job
        metadata:
          name: {name}
        spec:
        """
        )
        + extra
        + textwrap.indent(
            textwrap.dedent(
                f"""\
            template:
              spec:
                restartPolicy: Never
                containers:
                - name: main
                  image: busybox
                  command: ["sh", "-c", {json.dumps(command)}]
            """
            ),
            "  ",
        )
    )


def conditions(plane: Plane, name: str) -> dict[str, dict[str, str]]:
    status = json.loads(plane.kubectl("get", "job", name, "-o", "json"))["status"]
    return {c["type"]: c for c in status.get("conditions") or []}


def pods(plane: Plane, name: str) -> list[dict[str, object]]:
    return json.loads(plane.kubectl("get", "pods", "-l", f"job-name={name}", "-o", "json"))["items"]


def test_a_suspended_job_starts_no_pod_until_resumed_and_suspending_again_removes_them(
    plane: Plane, tmp_path: Path
) -> None:
    plane.kubectl("apply", "-f", "-", stdin=job("held", "sleep 60", suspend=True))
    plane.kubectl("wait", "job/held", "--for=condition=Suspended", "--timeout=30s")
    assert pods(plane, "held") == []
    plane.kubectl("patch", "job", "held", "--type=merge", "-p", '{"spec":{"suspend":false}}')
    # `kubectl wait -l` fails at once while nothing matches: wait for the Job to count its pod first.
    plane.kubectl("wait", "job/held", "--for=jsonpath={.status.active}=1", "--timeout=60s")
    plane.kubectl("wait", "pod", "-l", "job-name=held", "--for=condition=Ready", "--timeout=60s")
    plane.kubectl("patch", "job", "held", "--type=merge", "-p", '{"spec":{"suspend":true}}')
    plane.kubectl("wait", "pod", "-l", "job-name=held", "--for=delete", "--timeout=60s")
    assert conditions(plane, "held")["Suspended"]["status"] == "True"


def test_active_deadline_seconds_fails_the_job_and_stops_its_pods(plane: Plane) -> None:
    plane.kubectl("apply", "-f", "-", stdin=job("late", "sleep 120", activeDeadlineSeconds=20))
    plane.kubectl("wait", "job/late", "--for=condition=Failed", "--timeout=60s")
    assert conditions(plane, "late")["Failed"]["reason"] == "DeadlineExceeded"
    plane.kubectl("wait", "pod", "-l", "job-name=late", "--for=delete", "--timeout=60s")


def test_ttl_seconds_after_finished_deletes_the_job_with_its_pods(plane: Plane) -> None:
    plane.kubectl("apply", "-f", "-", stdin=job("brief", "true", ttlSecondsAfterFinished=30))
    plane.kubectl("wait", "job/brief", "--for=condition=Complete", "--timeout=60s")
    plane.kubectl("wait", "job/brief", "--for=delete", "--timeout=60s")
    plane.kubectl("wait", "pod", "-l", "job-name=brief", "--for=delete", "--timeout=60s")
