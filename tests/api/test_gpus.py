"""The GPU catalogue and MIG geometry (NVIDIA MIG user guide, Supported MIG Profiles)."""

from __future__ import annotations

import pytest

from kubehpc.api.gpus import CATALOGUE, MigLayoutError, gpu_model, model_from_product, plan_mig_layout


def model(name: str):
    m = gpu_model(name)
    assert m is not None
    return m


@pytest.mark.parametrize(
    ("name", "profiles"),
    [
        ("A100-40GB", ["1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"]),
        ("A100-80GB", ["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]),
        ("H100-80GB", ["1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]),
        ("H200-141GB", ["1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"]),
    ],
)
def test_each_mig_model_has_the_profiles_of_the_user_guide(name, profiles):
    assert [p.name for p in model(name).mig_profiles] == profiles


@pytest.mark.parametrize(
    ("profile", "max_instances", "starts"),
    [
        ("1g.10gb", 7, (0, 1, 2, 3, 4, 5, 6)),
        ("1g.10gb+me", 1, (0, 1, 2, 3, 4, 5, 6)),
        ("1g.20gb", 4, (0, 2, 4, 6)),
        ("2g.20gb", 3, (0, 2, 4)),
        ("3g.40gb", 2, (0, 4)),
        ("4g.40gb", 1, (0,)),
        ("7g.80gb", 1, (0,)),
    ],
)
def test_h100_profiles_have_the_instance_limits_and_placements_of_nvidia_smi(profile, max_instances, starts):
    p = model("H100-80GB").mig_profile(profile)
    assert p is not None
    assert (p.max_instances, p.starts) == (max_instances, starts)


def test_plain_gpus_are_in_the_catalogue_without_mig():
    for name in ("L4", "L40S", "T4", "V100-16GB"):
        assert not CATALOGUE[name].mig_capable


@pytest.mark.parametrize("name", ["A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB"])
def test_seven_smallest_slices_fill_a_gpu(name):
    smallest = model(name).mig_profiles[0].name
    placed = plan_mig_layout(model(name), [smallest] * 7)
    assert [p.start for p in placed] == [0, 1, 2, 3, 4, 5, 6]


def test_an_eighth_small_slice_is_one_too_many():
    with pytest.raises(MigLayoutError, match=r"at most 7 1g\.10gb"):
        plan_mig_layout(model("A100-80GB"), ["1g.10gb"] * 8)


def test_more_compute_slices_than_the_gpu_has_is_rejected():
    with pytest.raises(MigLayoutError, match="needs 8 compute slices; one A100-80GB has 7"):
        plan_mig_layout(model("A100-80GB"), ["4g.40gb", "3g.40gb", "1g.10gb"])


def test_a_profile_of_another_model_is_rejected():
    with pytest.raises(MigLayoutError, match=r'A100-80GB has no MIG profile "1g\.5gb"'):
        plan_mig_layout(model("A100-80GB"), ["1g.5gb"])


def test_a_gpu_without_mig_takes_no_layout():
    with pytest.raises(MigLayoutError, match="does not support MIG"):
        plan_mig_layout(model("L40S"), ["1g.10gb"])


def test_two_3g_instances_leave_no_memory_slice_for_a_1g():
    # 3 + 3 + 1 compute slices fit in 7, but two 3g instances hold all 8 memory slices.
    with pytest.raises(MigLayoutError, match="do not fit"):
        plan_mig_layout(model("H100-80GB"), ["3g.40gb", "3g.40gb", "1g.10gb"])


def test_4g_and_3g_share_a_gpu():
    placed = plan_mig_layout(model("A100-40GB"), ["3g.20gb", "4g.20gb"])
    assert [(p.profile.name, p.start) for p in placed] == [("4g.20gb", 0), ("3g.20gb", 4)]


def test_the_planner_backtracks_to_find_a_placement():
    # Largest first puts 3g at slice 0, leaving 2g only slice 4; it must move 3g to slice 4.
    placed = plan_mig_layout(model("A100-80GB"), ["2g.20gb", "3g.40gb", "2g.20gb"])
    assert [(p.profile.name, p.start) for p in placed] == [("2g.20gb", 0), ("2g.20gb", 2), ("3g.40gb", 4)]


def test_overlapping_explicit_placements_are_rejected():
    with pytest.raises(MigLayoutError, match="overlaps"):
        plan_mig_layout(model("A100-80GB"), ["1g.20gb@0", "1g.10gb@1"])


def test_a_placement_the_profile_cannot_start_at_is_rejected():
    with pytest.raises(MigLayoutError, match=r"3g.40gb can start only at memory slice \{0,4\}"):
        plan_mig_layout(model("A100-80GB"), ["3g.40gb@2"])


def test_double_memory_1g_profile_holds_two_memory_slices():
    assert len(plan_mig_layout(model("A100-80GB"), ["1g.20gb"] * 4)) == 4
    with pytest.raises(MigLayoutError):
        plan_mig_layout(model("A100-80GB"), ["1g.20gb"] * 4 + ["1g.10gb"])


@pytest.mark.parametrize(
    ("product", "memory_mib", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", 81559, "H100-80GB"),
        ("NVIDIA A100-SXM4-40GB", 40536, "A100-40GB"),
        ("NVIDIA A100-SXM4-80GB", 81920, "A100-80GB"),
        ("NVIDIA H200", 143771, "H200-141GB"),
        ("NVIDIA L40S", 46068, "L40S"),
        ("NVIDIA L4", 23034, "L4"),
    ],
)
def test_nvml_product_names_map_to_catalogue_models(product, memory_mib, expected):
    found = model_from_product(product, memory_mib)
    assert found is not None and found.name == expected


def test_an_unknown_product_has_no_catalogue_model():
    assert model_from_product("Some Future GPU", 1024) is None
