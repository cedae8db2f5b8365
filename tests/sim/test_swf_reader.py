"""SWF input: the replay conventions, and bad input counted by reason, never a crash."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from kubehpc.sim.traces.common import (
    MALFORMED,
    NO_RUNTIME,
    NO_SIZE,
    NO_SUBMIT,
    SIZE_FROM_ALLOCATED,
    SIZE_ROUNDED_UP,
    TOO_LARGE,
    TraceError,
)
from kubehpc.sim.traces.swf import parse_swf, read_swf

HEADER = "; Version: 2\n; MaxProcs: 16\n"


def line(job: int, submit: int, run: int, alloc: int, req_procs: int, req_time: int, user: int = 1) -> str:
    f = [job, submit, -1, run, alloc, -1, -1, req_procs, req_time, -1, 1, user, 1, -1, 1, -1, -1, -1]
    return " ".join(str(x) for x in f)


def test_size_is_requested_processors_or_allocated_when_requested_is_missing() -> None:
    t = parse_swf(HEADER + line(1, 0, 10, 4, 8, 100) + "\n" + line(2, 5, 10, 4, -1, 100) + "\n")
    assert t.sizes[:, 0].tolist() == [8, 4]
    assert t.adjusted[SIZE_FROM_ALLOCATED] == 1


def test_machine_size_comes_from_the_header() -> None:
    assert parse_swf(HEADER).machine.tolist() == [16]  # type: ignore[union-attr]


def test_missing_requested_time_is_nan_for_the_estimate_source_to_fill() -> None:
    t = parse_swf(HEADER + line(1, 0, 10, 4, 4, -1) + "\n")
    assert np.isnan(t.requested[0])


def test_jobs_are_ordered_by_submit_time_then_job_id() -> None:
    text = HEADER + "\n".join([line(3, 10, 5, 1, 1, 9), line(2, 10, 5, 1, 1, 9), line(1, 20, 5, 1, 1, 9)])
    assert parse_swf(text).ids.tolist() == [2, 3, 1]


def test_jobs_without_runtime_size_or_submit_are_skipped_and_counted_by_reason() -> None:
    text = HEADER + "\n".join(
        [
            line(1, 0, 10, 4, 4, 100),
            line(2, 0, 0, 4, 4, 100),  # run time 0
            line(3, 0, -1, 4, 4, 100),  # run time missing
            line(4, 0, 10, -1, -1, 100),  # no size at all
            line(5, 0, 10, 4, 0, 100),  # requested 0 processors
            line(6, -1, 10, 4, 4, 100),  # submit missing
        ]
    )
    t = parse_swf(text)
    assert t.ids.tolist() == [1]
    assert t.records == 6
    assert t.skipped == {NO_RUNTIME: 2, NO_SIZE: 2, NO_SUBMIT: 1}


def test_malformed_lines_are_skipped_and_counted() -> None:
    text = HEADER + "\n".join(
        [line(1, 0, 10, 4, 4, 100), "1 2 3", line(2, 0, 10, 4, 4, 100).replace("100", "ten"), "garbage"]
    )
    t = parse_swf(text)
    assert t.ids.tolist() == [1]
    assert t.skipped[MALFORMED] == 3


def test_nan_and_infinite_values_make_a_line_malformed_wherever_they_are() -> None:
    """Python's float() reads "nan" and "inf": they must not crash the reader (user and queue
    ids become codes) nor slip through as a job that never ends."""
    good = line(1, 0, 10, 4, 4, 100).split()
    bad = []
    for field, value in ((3, "inf"), (11, "nan"), (14, "inf"), (8, "-inf"), (1, "NaN")):
        f = list(good)
        f[0], f[field] = str(10 + field), value
        bad.append(" ".join(f))
    t = parse_swf(HEADER + "\n".join([" ".join(good), *bad]))
    assert t.ids.tolist() == [1]
    assert t.skipped == {MALFORMED: 5}


def test_a_fractional_processor_count_is_rounded_up_and_counted() -> None:
    t = parse_swf(HEADER + line(1, 0, 10, 4, 4, 100).replace(" 4 -1 -1 4 ", " 4 -1 -1 2.5 ", 1))
    assert t.sizes[:, 0].tolist() == [3]
    assert t.adjusted[SIZE_ROUNDED_UP] == 1


def test_a_requested_time_of_zero_or_below_counts_as_missing() -> None:
    t = parse_swf(HEADER + "\n".join([line(1, 0, 10, 4, 4, 0), line(2, 0, 10, 4, 4, -7)]))
    assert np.isnan(t.requested).all()


def test_an_absurd_size_is_larger_than_the_machine_not_a_wrapped_negative() -> None:
    t = parse_swf(HEADER + line(1, 0, 10, 4, 4, 100).replace(" 4 -1 -1 4 ", " 4 -1 -1 1e30 ", 1))
    assert t.skipped == {}
    assert t.fit_to(np.array([16])).skipped == {TOO_LARGE: 1}


def test_jobs_larger_than_the_machine_are_skipped_when_fitted_to_it() -> None:
    t = parse_swf(HEADER + line(1, 0, 10, 4, 4, 100) + "\n" + line(2, 0, 10, 32, 32, 100))
    fitted = t.fit_to(np.array([16]))
    assert fitted.ids.tolist() == [1]
    assert fitted.skipped[TOO_LARGE] == 1


def test_an_empty_trace_reads_as_zero_jobs() -> None:
    t = parse_swf(HEADER)
    assert len(t) == 0 and t.records == 0


def test_gzipped_and_plain_files_read_alike(tmp_path: Path) -> None:
    text = HEADER + line(1, 0, 10, 4, 4, 100) + "\n"
    (tmp_path / "a.swf").write_text(text)
    (tmp_path / "a.swf.gz").write_bytes(gzip.compress(text.encode()))
    assert read_swf(tmp_path / "a.swf").ids.tolist() == read_swf(tmp_path / "a.swf.gz").ids.tolist() == [1]


def test_a_missing_file_is_a_trace_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"nope\.swf"):
        read_swf(tmp_path / "nope.swf")
