"""Node-level replay versus the pool: pods must fit on nodes, not only in the cluster's total.

Every case runs on two nodes of 8 cpu (16 in all), so the pool replay sees 16 free cpu.
"""

from __future__ import annotations

from pathlib import Path

from simnodekit import cluster, cpu_nodes, job, pods, replay, replay_pool, row, starts

from kubehpc.sim.nodes import NEVER_FITS


def test_a_gang_that_fits_one_pod_per_node_starts_at_once_as_on_the_pool(tmp_path: Path) -> None:
    # 2 x 6 cpu: one pod on each 8-cpu node; the pool's 12 <= 16 agrees.
    nodes = cluster(tmp_path, cpu_nodes("n", 2, 8))
    jobs = [job("pair", 0, 100, pods(2, 6))]
    result = replay(nodes, jobs)
    assert starts(result) == {"pair": 0.0}
    assert result.job_nodes is not None and result.job_nodes.tolist() == [2]
    assert starts(replay_pool(nodes, jobs)) == {"pair": 0.0}


def test_a_gang_whose_pods_fit_no_set_of_nodes_is_dropped_and_counted(tmp_path: Path) -> None:
    # 3 x 5 cpu = 15 <= 16 fits the pool, but a node holds one 5-cpu pod (5 + 5 > 8): three
    # pods need three nodes and there are two, so the job could never start.
    nodes = cluster(tmp_path, cpu_nodes("n", 2, 8))
    jobs = [job("three", 0, 100, pods(3, 5)), job("small", 0, 10, pods(1, 1))]
    assert starts(replay_pool(nodes, jobs)) == {"three": 0.0, "small": 0.0}
    result = replay(nodes, jobs)
    assert starts(result) == {"small": 0.0}
    assert result.trace.skipped == {NEVER_FITS: 1}


def test_a_gang_waits_for_a_node_level_hole_that_the_pool_does_not_see(tmp_path: Path) -> None:
    # "one" takes 6 cpu of one node (2 left there, 8 on the other): 10 free in the pool, so the
    # pool starts 2 x 5 cpu at once; on nodes only one node has 5 free until "one" ends at 100.
    nodes = cluster(tmp_path, cpu_nodes("n", 2, 8))
    jobs = [job("one", 0, 100, pods(1, 6)), job("pair", 0, 50, pods(2, 5))]
    assert starts(replay_pool(nodes, jobs)) == {"one": 0.0, "pair": 0.0}
    result = replay(nodes, jobs)
    assert starts(result) == {"one": 0.0, "pair": 100.0}
    # Never both at once: at most the pair's 10 cpu were busy (the pool had 16 busy at 0).
    assert result.event_used[:, 0].max() == 10_000
    assert result.job_nodes is not None and result.job_nodes[row(result, "pair")] == 2
