"""ClusterConfig: validation names the field; resolution gives the nodes the agent registers."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubehpc.api.cluster_config import (
    LABEL_BLOCK,
    LABEL_HOSTNAME,
    LABEL_RACK,
    ClusterConfigError,
    HostFacts,
    HostGpu,
    load_cluster_config,
    parse_cluster_config,
    resolve_nodes,
    this_machine_config,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "clusters"


def config(*pools: dict, **spec) -> dict:
    return {
        "apiVersion": "kubehpc.io/v1alpha1",
        "kind": "ClusterConfig",
        "spec": {"nodePools": list(pools), **spec},
    }


def error_of(data: dict) -> str:
    with pytest.raises(ClusterConfigError) as exc:
        parse_cluster_config(data, "cluster.yaml")
    return str(exc.value)


def test_unknown_gpu_model_names_the_field_and_lists_known_models():
    msg = error_of(config({"name": "a"}, {"name": "b", "gpus": {"model": "H300"}}))
    assert msg.startswith(
        'cluster.yaml: spec.nodePools[1].gpus.model: unknown GPU model "H300"; known: A100-40GB'
    )


def test_unknown_field_is_reported_by_path():
    assert "cluster.yaml: spec.nodePools[0].cpus: unknown field" in error_of(config({"name": "a", "cpus": 4}))


def test_wrong_api_version_is_rejected():
    data = config({"name": "a"})
    data["apiVersion"] = "kubehpc.io/v1"
    assert "apiVersion:" in error_of(data)


def test_invalid_quantity_names_the_field():
    assert 'spec.nodePools[0].memory: invalid quantity "8Gx"' in error_of(
        config({"name": "a", "memory": "8Gx"})
    )


def test_impossible_mig_layout_names_the_gpu():
    gpus = {"model": "A100-80GB", "count": 2, "mig": {"layout": {"1": ["4g.40gb", "4g.40gb"]}}}
    assert "spec.nodePools[0].gpus.mig.layout.1: A100-80GB allows at most 1 4g.40gb" in error_of(
        config({"name": "a", "gpus": gpus})
    )


def test_mig_profile_the_model_lacks_names_the_entry():
    gpus = {"model": "H100-80GB", "count": 1, "mig": {"layout": {"0": ["1g.10gb", "1g.5gb"]}}}
    assert 'spec.nodePools[0].gpus.mig.layout.0[1]: H100-80GB has no MIG profile "1g.5gb"' in error_of(
        config({"name": "a", "gpus": gpus})
    )


def test_mig_layout_for_a_gpu_index_the_node_lacks_is_rejected():
    gpus = {"model": "H100-80GB", "count": 2, "mig": {"layout": {"2": ["7g.80gb"]}}}
    assert 'gpus.mig.layout.2: must be a GPU index 0..1 or "all"' in error_of(
        config({"name": "a", "gpus": gpus})
    )


def test_strategy_none_with_a_layout_is_rejected():
    gpus = {"model": "H100-80GB", "count": 1, "mig": {"strategy": "none", "layout": {"0": ["7g.80gb"]}}}
    assert "gpus.mig.strategy: strategy none ignores MIG" in error_of(config({"name": "a", "gpus": gpus}))


def test_single_strategy_needs_one_profile_on_every_gpu():
    gpus = {"model": "H100-80GB", "count": 2, "mig": {"strategy": "single", "layout": {"0": ["7g.80gb"]}}}
    assert "strategy single needs every GPU" in error_of(config({"name": "a", "gpus": gpus}))


def test_nvlink_group_with_a_missing_gpu_names_the_entry():
    gpus = {"model": "H100-80GB", "count": 2, "nvlinkGroups": [[0, 1, 2]]}
    assert "gpus.nvlinkGroups[0][2]: GPU index 2 is out of range 0..1" in error_of(
        config({"name": "a", "gpus": gpus})
    )


def test_numa_nodes_need_one_entry_per_gpu():
    gpus = {"model": "H100-80GB", "count": 4, "numaNodes": [0, 1]}
    assert "gpus.numaNodes: has 2 entries for 4 GPUs" in error_of(config({"name": "a", "gpus": gpus}))


def test_time_slicing_of_a_resource_the_gpu_lacks_is_rejected():
    gpus = {
        "model": "L4",
        "count": 1,
        "sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/mig-1g.10gb", "replicas": 2}]}},
    }
    assert "gpus.sharing.timeSlicing.resources[0].name" in error_of(config({"name": "a", "gpus": gpus}))


def test_node_names_must_be_unique_across_pools():
    msg = error_of(config({"name": "a", "hostnames": ["n1"]}, {"name": "b", "hostnames": ["n1"]}))
    assert 'spec.nodePools[1].hostnames: node name "n1" is used twice' in msg


def test_every_problem_is_reported_at_once():
    msg = error_of(config({"name": "a", "memory": "1Q"}, {"name": "b", "gpus": {"model": "X"}}))
    assert len(msg.splitlines()) == 2


def test_a_file_error_names_the_file(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(
        "apiVersion: kubehpc.io/v1alpha1\nkind: ClusterConfig\n"
        "spec: {nodePools: [{name: a, gpus: {model: Z}}]}\n"
    )
    with pytest.raises(ClusterConfigError, match=r"^mine.yaml: spec.nodePools\[0\].gpus.model"):
        load_cluster_config(path)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_examples_are_valid(path):
    assert resolve_nodes(load_cluster_config(path))


def test_h100_example_is_4_nodes_of_8_nvlinked_gpus_on_2_numa_nodes():
    nodes = resolve_nodes(load_cluster_config(EXAMPLES / "h100-4x8.yaml"))
    assert len(nodes) == 4
    for node in nodes:
        assert [g.model.name for g in node.gpus] == ["H100-80GB"] * 8
        assert {g.nvlink_group for g in node.gpus} == {0}
        assert [g.numa_node for g in node.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]


def test_a100_example_is_2_racks_of_4_nodes_with_some_mig_gpus():
    nodes = resolve_nodes(load_cluster_config(EXAMPLES / "a100-2racks.yaml"))
    racks = {}
    for n in nodes:
        racks.setdefault(n.labels[LABEL_RACK], []).append(n)
    assert {r: len(ns) for r, ns in racks.items()} == {"rack-1": 4, "rack-2": 4}
    mig_nodes = [n for n in nodes if any(g.mig for g in n.gpus)]
    assert len(mig_nodes) == 2
    assert all(n.mig_strategy == "mixed" for n in mig_nodes)


def test_nodes_get_hostname_and_topology_labels():
    cfg = parse_cluster_config(config({"name": "gpu", "count": 2, "topology": {"block": "b1", "rack": "r2"}}))
    nodes = resolve_nodes(cfg)
    assert [n.name for n in nodes] == ["gpu-0", "gpu-1"]
    assert nodes[1].labels[LABEL_HOSTNAME] == "gpu-1"
    assert (nodes[1].labels[LABEL_BLOCK], nodes[1].labels[LABEL_RACK]) == ("b1", "r2")


def test_gpu_memory_defaults_from_the_catalogue_and_can_be_given():
    default, given = resolve_nodes(
        parse_cluster_config(
            config(
                {"name": "a", "gpus": {"model": "L4"}},
                {"name": "b", "gpus": {"model": "L4", "memory": "16Gi"}},
            )
        )
    )
    assert default.gpus[0].memory_mib == 23034
    assert given.gpus[0].memory_mib == 16384


def test_auto_fields_take_this_machines_cpus_memory_and_gpus():
    host = HostFacts(
        cpu_count=6, memory_bytes=8 << 30, gpus=(HostGpu(0, "GPU-abc", "NVIDIA H100 80GB HBM3", 81559),)
    )
    (node,) = resolve_nodes(this_machine_config(), host)
    assert (node.cpu_millis, node.memory_bytes) == (6000, 8 << 30)
    assert node.real_gpus and node.gpus[0].uuid == "GPU-abc" and node.gpus[0].model.name == "H100-80GB"


def test_image_prefix_rules_match_first_and_fill_in_the_image():
    cfg = parse_cluster_config(
        config(
            {"name": "a"},
            imagePrefixes=[
                {"image": "*.sif", "prefix": ["apptainer", "exec", "{image}"]},
                {"image": "*", "prefix": ["podman", "run", "--rm", "{image}"]},
            ],
        )
    )
    assert cfg.command_prefix("/images/app.sif") == ["apptainer", "exec", "/images/app.sif"]
    assert cfg.command_prefix("python:3.11") == ["podman", "run", "--rm", "python:3.11"]
