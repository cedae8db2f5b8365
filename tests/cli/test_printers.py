"""Small formatting rules the verbs share."""

from __future__ import annotations

import pytest

from kubehpc.cli.describe import title
from kubehpc.cli.printers import human_duration
from kubehpc.cli.session import CliError
from kubehpc.cli.waiting import parse_duration


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (5, "5s"),
        (119, "119s"),
        (150, "2m30s"),
        (600, "10m"),
        (3 * 3600 + 120, "3h2m"),
        (30 * 3600, "30h"),
        (3 * 86400 + 3600, "3d1h"),
        (400 * 86400, "400d"),
        (3 * 365 * 86400, "3y0d"),
    ],
)
def test_ages_read_like_kubectls(seconds: int, shown: str) -> None:
    assert human_duration(seconds) == shown


@pytest.mark.parametrize(
    ("text", "seconds"), [("30s", 30), ("1m30s", 90), ("500ms", 0.5), ("2h", 7200), ("7", 7)]
)
def test_durations_take_go_syntax(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


def test_a_duration_without_a_known_unit_is_an_error() -> None:
    with pytest.raises(CliError, match='invalid duration "3 days"'):
        parse_duration("3 days")


@pytest.mark.parametrize(
    ("key", "shown"), [("backoffLimit", "Backoff Limit"), ("podIP", "Pod IP"), ("uid", "Uid")]
)
def test_describe_titles_split_camel_case(key: str, shown: str) -> None:
    assert title(key) == shown


def test_describe_shows_the_controller_and_conditions_as_a_table() -> None:
    from kubehpc.cli.describe import describe_lines

    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "pi-x",
            "namespace": "default",
            "ownerReferences": [{"kind": "Job", "name": "pi", "controller": True}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        },
    }
    lines = describe_lines(pod)
    assert "Controlled By: Job/pi" in [" ".join(line.split()) for line in lines]
    table = lines[lines.index("  Conditions:") + 1 :]
    assert table[0].split() == ["Type", "Status", "Reason", "Message", "Last", "Transition", "Time"]
    assert table[2].split() == ["Ready", "True", "2026-01-01T00:00:00Z"]
