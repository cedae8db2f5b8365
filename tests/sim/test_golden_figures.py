"""The golden figures of ../shared/traces/README.md, reproduced to the printed decimals.

Each FCFS figure was obtained there by two independent replays (one of them AccaSim 1.1.3)
that agree exactly. The EASY figures on Lublin-256 (whose estimates are the run times, so
simulators cannot disagree about estimates) match the research note's independent replay
(../shared/research/traces-sim.md, B5).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kubehpc.sched.backfill import Policy
from kubehpc.sim.engine import SimOptions, simulate
from kubehpc.sim.metrics import summary
from kubehpc.sim.traces import read_trace


def _replay(shared_dir: Path, name: str, policy: Policy) -> dict[str, object]:
    trace = read_trace(shared_dir / "traces" / "swf" / name)
    assert trace.machine is not None
    return summary(simulate(trace, trace.machine, SimOptions(policy=policy)))


@pytest.mark.slow
def test_fcfs_on_kth_sp2_gives_the_golden_wait_and_bounded_slowdown(shared_dir: Path) -> None:
    s = _replay(shared_dir, "KTH-SP2-1996-2.1-cln.swf.gz", Policy.FCFS)
    assert s["jobs"] == 27_992
    assert s["skipped"] == 0
    assert f"{s['avg_wait_s']:.1f}" == "218832.1"
    assert f"{s['avg_bsld']:.2f}" == "4294.50"
    assert s["max_wait_s"] == 705_687


@pytest.mark.slow
def test_fcfs_on_lublin_256_gives_the_golden_wait_and_bounded_slowdown(shared_dir: Path) -> None:
    s = _replay(shared_dir, "lublin_256.swf", Policy.FCFS)
    assert s["jobs"] == 10_000
    assert f"{s['avg_wait_s']:.1f}" == "2388443.8"
    assert f"{s['avg_bsld']:.2f}" == "66502.48"
    assert s["max_wait_s"] == 4_759_976


@pytest.mark.slow
def test_easy_on_lublin_256_matches_the_independent_replay(shared_dir: Path) -> None:
    s = _replay(shared_dir, "lublin_256.swf", Policy.EASY)
    assert f"{s['avg_wait_s']:.1f}" == "97156.0"
    assert f"{s['avg_bsld']:.2f}" == "590.05"
    assert s["max_wait_s"] == 1_029_731
