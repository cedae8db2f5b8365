"""A trace that does not size its machine is refused with a message in the trace's own terms:
an SWF trace lacks its MaxProcs header, a GPU trace says nothing of the cluster's GPUs."""

from __future__ import annotations

import pytest

from kubehpc.sim.cluster import capacity_from_header
from kubehpc.sim.traces import TraceError
from kubehpc.sim.traces.philly import parse_philly
from kubehpc.sim.traces.swf import parse_swf

PHILLY = "timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:00:10,66.0,1,66.0,vc1\n"
SWF_WITHOUT_HEADER = "1 0 -1 10 2 -1 -1 2 10 -1 1 1 1 -1 1 -1 -1 -1\n"


def test_a_gpu_trace_without_a_size_asks_for_the_number_of_gpus() -> None:
    with pytest.raises(TraceError) as err:
        capacity_from_header(parse_philly(PHILLY))
    assert "nvidia.com/gpu" in str(err.value)
    assert "--procs N (GPUs)" in str(err.value)
    assert "MaxProcs" not in str(err.value)


def test_an_swf_trace_without_maxprocs_names_the_missing_header() -> None:
    with pytest.raises(TraceError) as err:
        capacity_from_header(parse_swf(SWF_WITHOUT_HEADER))
    assert "no MaxProcs header" in str(err.value)
    assert "--procs N (processors)" in str(err.value)
