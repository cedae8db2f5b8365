"""Resource names resolve as kubectl resolves them: an exact plural, singular or Kind first, then
short names; core kinds win a tie."""

from __future__ import annotations

from kubehpc.api.kinds import build_registry


def test_an_exact_singular_beats_another_kinds_short_name() -> None:
    # "queue" is Volcano Queue's singular and a short name of Kueue's LocalQueue: kubectl picks Queue.
    rt = build_registry().resolve("queue")
    assert (rt.group, rt.kind) == ("scheduling.volcano.sh", "Queue")


def test_a_short_name_still_resolves_when_no_kind_is_called_so() -> None:
    assert build_registry().resolve("lq").kind == "LocalQueue"


def test_a_group_suffix_narrows_the_match_before_short_names_are_tried() -> None:
    assert build_registry().resolve("queue.kueue.x-k8s.io").kind == "LocalQueue"
