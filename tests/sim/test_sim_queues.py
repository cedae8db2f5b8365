"""``kubehpc sim --queues FILE``: Kueue's queues and quotas drive the replay through the admission
core. Hand-built cases (8 cpus in all; every job runs its requested time):

- team-a submits two 4-cpu jobs at t=0, team-b one at t=10, each 100 s. One pool: both of a's
  start at 0, b's waits until 100. Quotas of 4 cpus per team: a's second waits until 100 and
  b's starts at 10. In one cohort, team-a borrows b's idle quota: the one-pool answer again.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kubehpc.cli.main import main

NO_BORROWING = ""


def workload(jobs: Sequence[tuple[str, float, int, float, str]]) -> str:
    """(name, submit, cpus, runtime, queue)"""
    lines = [
        "apiVersion: kubehpc.io/v1alpha1",
        "kind: SimWorkload",
        "metadata: {name: teams}",
        "spec:",
        "  jobs:",
    ]
    for name, submit, cpus, runtime, queue in jobs:
        lines.append(
            f"  - {{name: {name}, submit: {submit}, runtime: {runtime}, requestedTime: {runtime}, "
            f'queue: {queue}, podSets: [{{count: 1, requests: {{cpu: "{cpus}"}}}}]}}'
        )
    return "\n".join(lines) + "\n"


def queues(*teams: tuple[str, int], cohort: str = NO_BORROWING, backfill: str = "") -> str:
    docs = ["apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: default}"]
    for team, cpus in teams:
        note = f"\n  annotations: {{kubehpc.io/backfill: {backfill}}}" if backfill else ""
        docs.append(
            f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: {team}{note}
spec:
  namespaceSelector: {{}}
  {f"cohortName: {cohort}" if cohort else ""}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{{name: cpu, nominalQuota: {cpus}}}]"""
        )
        docs.append(
            f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\n"
            f"metadata: {{name: {team}}}\nspec: {{clusterQueue: {team}}}"
        )
    return "\n---\n".join(docs) + "\n"


TEAMS = [("a1", 0, 4, 100, "team-a"), ("a2", 0, 4, 100, "team-a"), ("b1", 10, 4, 100, "team-b")]


def sim(
    tmp_path: Path, jobs: Sequence[tuple[str, float, int, float, str]], *argv: str, queue_text: str = ""
) -> dict[str, Any]:
    (tmp_path / "w.yaml").write_text(workload(jobs))
    args = ["sim", "--trace", str(tmp_path / "w.yaml"), "--json", *argv]
    if queue_text:
        (tmp_path / "q.yaml").write_text(queue_text)
        args += ["--queues", str(tmp_path / "q.yaml")]
    out, err = io.StringIO(), io.StringIO()
    code = main(args, stdout=out, stderr=err)
    assert code == 0, err.getvalue()
    result: dict[str, Any] = json.loads(out.getvalue())
    return result


def starts(
    tmp_path: Path, jobs: Sequence[tuple[str, float, int, float, str]], *argv: str, queue_text: str = ""
) -> list[float]:
    (tmp_path / "w.yaml").write_text(workload(jobs))
    csv = tmp_path / "jobs.csv"
    args = ["sim", "--trace", str(tmp_path / "w.yaml"), "--csv", str(csv), *argv]
    if queue_text:
        (tmp_path / "q.yaml").write_text(queue_text)
        args += ["--queues", str(tmp_path / "q.yaml")]
    assert main(args, stdout=io.StringIO(), stderr=io.StringIO()) == 0
    rows = csv.read_text().splitlines()
    column = rows[0].split(",").index("start_s")
    return [float(r.split(",")[column]) for r in rows[1:]]


def test_one_pool_starts_both_of_team_as_jobs_and_makes_team_b_wait(tmp_path: Path) -> None:
    assert starts(tmp_path, TEAMS, "--procs", "8") == [0, 0, 100]


def test_quotas_hold_team_as_second_job_and_let_team_b_start_at_once(tmp_path: Path) -> None:
    text = queues(("team-a", 4), ("team-b", 4))
    assert starts(tmp_path, TEAMS, "--procs", "8", queue_text=text) == [0, 100, 10]
    s = sim(tmp_path, TEAMS, "--procs", "8", queue_text=text)
    assert s["avg_wait_s"] == 100 / 3
    assert s["queues"]["groups"]["team-a"]["avg_wait_s"] == 50


def test_borrowing_in_a_cohort_gives_the_one_pool_answer(tmp_path: Path) -> None:
    text = queues(("team-a", 4), ("team-b", 4), cohort="all")
    assert starts(tmp_path, TEAMS, "--procs", "8", queue_text=text) == [0, 0, 100]


# One queue of 10 cpus: r (6 cpus) runs [0, 100); big (8 cpus) waits for it; long (4 cpus, 200 s)
# fits at t=2 but would delay big. Kueue (fcfs: BestEffortFIFO) lets it pass, and big waits
# until long ends at 202; EASY holds long until big has run (150) — the single-pool EASY's
# answer, from the same rule.
BACKFILL = [("r", 0, 6, 100, "q"), ("big", 1, 8, 50, "q"), ("long", 2, 4, 200, "q")]


def test_kueue_order_lets_a_long_job_pass_the_blocked_head(tmp_path: Path) -> None:
    assert starts(tmp_path, BACKFILL, "--procs", "10", queue_text=queues(("q", 10))) == [0, 202, 2]


def test_easy_through_the_queues_gives_the_single_pool_easy_answer(tmp_path: Path) -> None:
    one_pool = starts(tmp_path, BACKFILL, "--procs", "10", "--policy", "easy")
    queued = starts(tmp_path, BACKFILL, "--procs", "10", "--policy", "easy", queue_text=queues(("q", 10)))
    assert queued == one_pool == [0, 100, 150]


def test_a_cluster_queue_annotation_chooses_its_own_backfill(tmp_path: Path) -> None:
    text = queues(("q", 10), backfill="conservative")
    assert starts(tmp_path, BACKFILL, "--procs", "10", queue_text=text) == [0, 100, 150]


def test_jobs_of_a_queue_without_a_local_queue_are_counted_as_skipped(tmp_path: Path) -> None:
    s = sim(
        tmp_path,
        (*TEAMS, ("c1", 0, 1, 10, "team-c")),
        "--procs",
        "8",
        queue_text=queues(("team-a", 4), ("team-b", 4)),
    )
    assert s["jobs"] == 3
    assert s["skipped_by_reason"] == {"its queue has no LocalQueue in --queues": 1}


def test_a_job_over_its_quota_is_counted_as_never_admitted(tmp_path: Path) -> None:
    s = sim(
        tmp_path,
        (*TEAMS, ("a3", 0, 6, 10, "team-a")),
        "--procs",
        "8",
        queue_text=queues(("team-a", 4), ("team-b", 4)),
    )
    assert s["jobs"] == 3
    assert s["skipped_by_reason"] == {"never admitted (does not fit its ClusterQueue's quota)": 1}


def test_a_manifest_of_another_kind_is_an_error_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_text(workload(TEAMS))
    (tmp_path / "q.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    err = io.StringIO()
    code = main(
        ["sim", "--trace", str(tmp_path / "w.yaml"), "--procs", "8", "--queues", str(tmp_path / "q.yaml")],
        stdout=io.StringIO(),
        stderr=err,
    )
    assert code != 0
    assert "q.yaml: document 1: kind 'ConfigMap'" in err.getvalue()


# Fair sharing: a lender owns the cohort's 4 cpus; team-a and team-b own none and borrow. At t=0
# team-a takes 3; at t=1 a4 (team-a, first in the file) and b1 (team-b) want the last cpu.
# Kueue's default order (priority, then creation time, then the file's order) admits a4; with
# fair sharing on in Kueue's Configuration, team-b's share (0) is below team-a's: b1 goes first.
SHARING = [
    *((f"a{i}", 0, 1, 100, "team-a") for i in (1, 2, 3)),
    ("a4", 1, 1, 100, "team-a"),
    ("b1", 1, 1, 100, "team-b"),
]
FAIR_SHARING_ON = """---
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
health: {healthProbeBindAddress: ":8081"}
fairSharing:
  enable: true
  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]
"""


def _sharing_queues() -> str:
    return queues(("lender", 4), ("team-a", 0), ("team-b", 0), cohort="co")


def test_without_fair_sharing_the_borrowers_are_admitted_in_kueues_order(tmp_path: Path) -> None:
    assert starts(tmp_path, SHARING, "--procs", "4", queue_text=_sharing_queues()) == [0, 0, 0, 1, 100]


def test_fair_sharing_in_kueues_configuration_admits_the_queue_with_the_lower_share(tmp_path: Path) -> None:
    text = _sharing_queues() + FAIR_SHARING_ON
    assert starts(tmp_path, SHARING, "--procs", "4", queue_text=text) == [0, 0, 0, 100, 1]


def test_a_configuration_setting_the_replay_does_not_model_is_an_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "w.yaml").write_text(workload(TEAMS))
    (tmp_path / "q.yaml").write_text(
        queues(("team-a", 8))
        + "---\napiVersion: config.kueue.x-k8s.io/v1beta1\nkind: Configuration\n"
        + "waitForPodsReady: {enable: true}\n"
    )
    err = io.StringIO()
    argv = ["sim", "--trace", str(tmp_path / "w.yaml"), "--procs", "8", "--queues", str(tmp_path / "q.yaml")]
    assert main(argv, stdout=io.StringIO(), stderr=err) != 0
    assert "(Configuration): waitForPodsReady is not simulated" in err.getvalue()
