"""kubehpc import slurm: slurm.conf / gres.conf / topology.conf -> ClusterConfig, Kueue queues,
PriorityClasses and a SlurmMapping, with a report of what has no equivalent."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import yaml
from slurmkit import job, pod_spec, script, submit

from kubehpc.api.cluster_config import parse_cluster_config, resolve_nodes
from kubehpc.api.kinds import default_registry
from kubehpc.api.loader import Document, check_document
from kubehpc.api.registry import FieldValidation
from kubehpc.cli.main import main
from kubehpc.slurm.conf import ConfError, parse_conf
from kubehpc.slurm.importer import ImportResult, import_slurm, parse_qos_table
from kubehpc.slurm.mapping import mapping_document, parse_mapping


def conf_dir(shared_dir: Path) -> Path:
    return shared_dir / "samples" / "slurm-config"


def sample(shared_dir: Path, name: str) -> str:
    return (conf_dir(shared_dir) / name).read_text()


def imported(text: str, gres: str = "", topology: str = "", **kw: object) -> ImportResult:
    return import_slurm(
        parse_conf(text, "slurm.conf"),
        parse_conf(gres, "gres.conf") if gres else None,
        parse_conf(topology, "topology.conf") if topology else None,
        **kw,  # type: ignore[arg-type]
    )


def assert_valid(result: ImportResult) -> None:
    parse_cluster_config(result.cluster_config, "cluster.yaml")
    registry = default_registry()
    for i, obj in enumerate(result.queues, start=1):
        check_document(Document("queues.yaml", i, obj), registry, FieldValidation.STRICT)
    assert parse_mapping(mapping_document(result.mapping), "mapping") == result.mapping


def pools(result: ImportResult) -> list[dict]:
    return result.cluster_config["spec"]["nodePools"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("gres", "topology"),
    [
        ("", ""),
        ("schedmd-docs-gres.conf", ""),
        ("", "schedmd-testsuite-topology-tree.conf"),
        ("schedmd-docs-gres.conf", "schedmd-testsuite-topology-block.conf"),
    ],
)
def test_the_sample_configs_import_to_valid_objects(shared_dir: Path, gres: str, topology: str) -> None:
    result = imported(
        sample(shared_dir, "schedmd-slurm.conf.example"),
        sample(shared_dir, gres) if gres else "",
        sample(shared_dir, topology) if topology else "",
    )
    assert_valid(result)
    assert sum(p["count"] for p in pools(result)) == 32
    assert result.mapping.default_partition == "debug"
    assert result.mapping.cluster_name == "cluster"


def test_the_example_reports_what_has_no_equivalent(shared_dir: Path) -> None:
    result = imported(
        sample(shared_dir, "schedmd-slurm.conf.example"), sample(shared_dir, "schedmd-docs-gres.conf")
    )
    report = "\n".join(result.report)
    assert "no RealMemory" in report
    assert "Name=mps has no equivalent" in report and "Name=bandwidth" in report
    assert "GPUs of several types (gp100 x2, p6000 x2)" in report
    assert 'GPU type "gp100" is not a known model' in report
    assert "SchedulerType=sched/backfill" in report
    assert "SlurmctldPort" in report  # among the daemon settings


def test_a_gpu_model_option_keeps_the_gpus_of_an_unknown_type(shared_dir: Path) -> None:
    result = imported(
        sample(shared_dir, "schedmd-slurm.conf.example"),
        sample(shared_dir, "schedmd-docs-gres.conf"),
        gpu_models={"gp100": "A10"},
    )
    assert_valid(result)
    pool = pools(result)[0]
    assert pool["gpus"] == {"model": "A10", "count": 2}
    assert pool["labels"]["slurm.kubehpc.io/gpu-type"] == "gp100"
    cq = next(o for o in result.queues if o["kind"] == "ClusterQueue")
    quotas = {
        r["name"]: r["nominalQuota"] for r in cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    }
    assert quotas["nvidia.com/gpu"] == 64 and quotas["cpu"] == 32


TREE_NODES = (
    "NodeName=peta[10000-10399] CPUs=64 RealMemory=256000 Gres=gpu:h100:8\n"
    "PartitionName=all Nodes=ALL Default=YES\n"
)


def test_a_switch_tree_becomes_rack_and_block_levels(shared_dir: Path) -> None:
    result = imported(TREE_NODES, topology=sample(shared_dir, "schedmd-testsuite-topology-tree.conf"))
    assert_valid(result)
    by_rack = {p["topology"]["rack"]: p for p in pools(result)}
    assert len(by_rack) == 20
    assert by_rack["leaf100"]["topology"] == {"rack": "leaf100", "block": "grp10"}
    assert by_rack["leaf119"]["topology"]["block"] == "grp11"
    assert by_rack["leaf100"]["hostnames"][0] == "peta10000" and by_rack["leaf100"]["count"] == 20
    assert by_rack["leaf100"]["gpus"] == {"model": "H100-80GB", "count": 8}
    assert any("3 levels" in line for line in result.report)


def test_blocks_become_block_labels_and_block_sizes_are_reported(shared_dir: Path) -> None:
    text = "NodeName=node[01-32] CPUs=8 RealMemory=32000\nPartitionName=p Nodes=node[01-32]\n"
    result = imported(text, topology=sample(shared_dir, "schedmd-testsuite-topology-block.conf"))
    assert_valid(result)
    assert [p["topology"]["block"] for p in pools(result)] == [f"b{i}" for i in range(1, 9)]
    nodes = resolve_nodes(parse_cluster_config(result.cluster_config))
    assert nodes[0].labels["topology.kubehpc.io/block"] == "b1"
    assert any("BlockSizes=4,8,16,32,64" in line for line in result.report)


CONF = """\
ClusterName=hpc
# defaults for what follows
NodeName=DEFAULT CPUs=16 RealMemory=64000
NodeName=cpu[01-04] Features=intel,avx512
NodeName=gpu[1-2] CPUs=32 RealMemory=128000 \\
   Gres=gpu:a100:4 Features=a100
PartitionName=DEFAULT MaxTime=2-00:00:00
PartitionName=batch Nodes=cpu[01-04] Default=YES DefaultTime=30 DefMemPerCPU=2000
PartitionName=gpu Nodes=gpu[1-2],cpu01 MaxTime=12:00:00 QOS=high PriorityTier=10
"""


def test_node_lines_with_defaults_and_continuations_become_pools_with_labels() -> None:
    result = imported(CONF)
    assert_valid(result)
    by_name = {p["name"]: p for p in pools(result)}
    assert sorted(by_name) == ["cpu", "cpu-2", "gpu"]
    gpu = by_name["gpu"]
    assert (gpu["count"], gpu["cpu"], gpu["memory"], gpu["gpus"]) == (
        2,
        "32",
        "128000Mi",
        {"model": "A100-40GB", "count": 4},
    )
    assert gpu["labels"]["feature.slurm.kubehpc.io/a100"] == "true"
    # cpu01 is in both partitions, so it is a pool of its own
    assert by_name["cpu"]["hostnames"] == ["cpu01"]
    assert set(by_name["cpu"]["labels"]) >= {
        "partition.slurm.kubehpc.io/batch",
        "partition.slurm.kubehpc.io/gpu",
    }
    assert by_name["cpu-2"]["hostnames"] == ["cpu02", "cpu03", "cpu04"]


def test_partitions_become_queues_and_mapping_entries() -> None:
    result = imported(CONF)
    m = result.mapping
    assert (m.cluster_name, m.default_partition) == ("hpc", "batch")
    assert m.partitions["batch"].default_time == 30 and m.partitions["batch"].def_mem_per_cpu == 2000
    assert m.partitions["gpu"].max_time == 12 * 60 and m.partitions["batch"].max_time == 2 * 24 * 60
    kinds = [(o["kind"], o["metadata"]["name"]) for o in result.queues]
    assert ("ClusterQueue", "gpu") in kinds and ("LocalQueue", "batch") in kinds
    assert ("PriorityClass", "high") in kinds
    cq = next(o for o in result.queues if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == "gpu")
    quotas = {
        r["name"]: r["nominalQuota"] for r in cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    }
    assert quotas == {"cpu": 80, "memory": f"{2 * 128000 + 64000}Mi", "nvidia.com/gpu": 8}
    assert any("PriorityTier" in line for line in result.report)


def test_qos_priorities_come_from_sacctmgr_output() -> None:
    table = parse_qos_table("Name|Priority\nnormal|0\nhigh|100\n", "qos.txt")
    result = imported(CONF, qos_priorities=table)
    values = {o["metadata"]["name"]: o["value"] for o in result.queues if o["kind"] == "PriorityClass"}
    assert values == {"high": 100, "normal": 0}


def test_a_bad_qos_table_names_its_line() -> None:
    with pytest.raises(ValueError, match="line 2"):
        parse_qos_table("Name|Priority\nhigh|lots\n", "qos.txt")


def test_sbatch_on_an_imported_cluster_selects_the_imported_labels() -> None:
    result = imported(CONF)
    nodes = resolve_nodes(parse_cluster_config(result.cluster_config))
    objs = submit(script("-p gpu", "--gres=gpu:a100:2", "-C a100"), mapping=result.mapping)
    selector = pod_spec(objs)["nodeSelector"]
    terms = pod_spec(objs)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    exprs = terms["nodeSelectorTerms"][0]["matchExpressions"]

    def fits(labels: dict[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in selector.items()) and all(
            labels.get(e["key"]) in e["values"] for e in exprs
        )

    assert sorted(n.name for n in nodes if fits(n.labels)) == ["gpu1", "gpu2"]
    assert job(objs)["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "gpu"
    assert job(objs)["spec"]["activeDeadlineSeconds"] == 12 * 3600  # no DefaultTime: the MaxTime


def test_a_line_that_is_not_key_value_pairs_is_an_error_naming_the_line() -> None:
    with pytest.raises(ConfError, match=r"slurm.conf: line 2: cannot read"):
        parse_conf("ClusterName=x\nthis is wrong\n", "slurm.conf")


def test_a_config_without_nodes_is_refused() -> None:
    with pytest.raises(ValueError, match="no NodeName lines"):
        imported("ClusterName=x\n")


def test_the_import_command_writes_the_four_files(shared_dir: Path, tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = main(
        [
            "import",
            "slurm",
            "--conf",
            str(conf_dir(shared_dir) / "schedmd-slurm.conf.example"),
            "--gres",
            str(conf_dir(shared_dir) / "schedmd-docs-gres.conf"),
            "-o",
            str(tmp_path / "imp"),
        ],
        stdout=out,
        stderr=err,
    )
    assert code == 0, err.getvalue()
    assert "Imported 32 nodes in 1 pools and 1 partitions" in out.getvalue()
    assert "import: " in err.getvalue()
    files = sorted(p.name for p in (tmp_path / "imp").iterdir())
    assert files == ["cluster.yaml", "import-report.txt", "queues.yaml", "slurm-mapping.yaml"]
    parse_cluster_config(yaml.safe_load((tmp_path / "imp" / "cluster.yaml").read_text()))
