"""sbatch options -> Kubernetes objects, one behaviour per test (tables where the rule is one)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from slurmkit import annotations, container, env, job, kind, pod_spec, requests, script, submit

from kubehpc.slurm.mapping import parse_mapping
from kubehpc.slurm.request import SbatchError
from kubehpc.slurm.translate import QUEUE_LABEL, release_patch

Obj = dict[str, Any]


def test_a_plain_job_is_one_indexed_pod_that_is_not_retried() -> None:
    spec = job(submit(script()))["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 1, 1)
    assert spec["backoffLimit"] == 0
    assert spec["template"]["spec"]["restartPolicy"] == "Never"


def test_objects_are_named_after_the_job_id_and_labelled_with_it() -> None:
    objs = submit(script())
    assert [o["metadata"]["name"] for o in objs] == ["slurm-100", "slurm-100"]
    assert job(objs)["metadata"]["labels"]["slurm.kubehpc.io/job-id"] == "100"
    assert (
        pod_spec(objs)
        and job(objs)["spec"]["template"]["metadata"]["labels"]["slurm.kubehpc.io/job-id"] == "100"
    )


def test_the_script_travels_in_a_config_map_mounted_into_the_pod() -> None:
    objs = submit(script(body="echo from-the-script"))
    cm = kind(objs, "ConfigMap")
    assert "echo from-the-script" in cm["data"]["script"]
    assert cm["data"]["run"].startswith("#!/bin/bash")
    assert pod_spec(objs)["volumes"][0]["configMap"]["name"] == "slurm-100"


@pytest.mark.parametrize(
    ("directives", "expected"),
    [
        (("-n 4",), {"cpu": "4"}),
        (("-n 4", "-c 2"), {"cpu": "8"}),
        (("--ntasks-per-node=2", "-N 3", "--cpus-per-task=5"), {"cpu": "10"}),
        (("-n 8", "--ntasks-per-node=4"), {"cpu": "4"}),
        (("--mem=32G",), {"cpu": "1", "memory": "32Gi"}),
        (("--mem=1500",), {"cpu": "1", "memory": "1500Mi"}),
        (("-n 2", "--mem-per-cpu=1G"), {"cpu": "2", "memory": "2Gi"}),
        (("--gres=gpu:2", "--mem-per-gpu=10G"), {"cpu": "1", "memory": "20Gi", "nvidia.com/gpu": "2"}),
        (("--gres=gpu:4",), {"cpu": "1", "nvidia.com/gpu": "4"}),
        (("--gres=gpu",), {"cpu": "1", "nvidia.com/gpu": "1"}),
        (("--gres=gpu:v100:4",), {"cpu": "1", "nvidia.com/gpu": "4"}),
        (("--gpus-per-node=2",), {"cpu": "1", "nvidia.com/gpu": "2"}),
        (("--gpus-per-task=1", "--ntasks-per-node=4"), {"cpu": "4", "nvidia.com/gpu": "4"}),
        (("-G 4", "-N 2"), {"cpu": "1", "nvidia.com/gpu": "2"}),
        (("--gres=gpu:2", "--cpus-per-gpu=4"), {"cpu": "8", "nvidia.com/gpu": "2"}),
        (("--tmp=10G",), {"cpu": "1", "ephemeral-storage": "10Gi"}),
    ],
)
def test_resources_per_pod_follow_slurm_arithmetic(
    directives: tuple[str, ...], expected: dict[str, str]
) -> None:
    assert requests(submit(script(*directives))) == expected


def test_limits_equal_requests_as_slurm_confines_a_job_to_its_allocation() -> None:
    res = container(submit(script("-c 4", "--mem=8G", "--gres=gpu:1")))["resources"]
    assert res["limits"] == res["requests"]


def test_memory_options_are_mutually_exclusive() -> None:
    with pytest.raises(SbatchError, match="mutually exclusive"):
        submit(script("--mem=1G", "--mem-per-cpu=1G"))


def test_a_gpu_type_selects_nodes_by_the_gpu_type_label() -> None:
    assert pod_spec(submit(script("--gres=gpu:v100:4")))["nodeSelector"] == {
        "slurm.kubehpc.io/gpu-type": "v100"
    }


def test_a_gpu_type_may_map_to_the_gpu_product_label() -> None:
    mapping = parse_mapping({"gpuTypes": {"a100": {"key": "nvidia.com/gpu.product", "value": "A100"}}}, "m")
    spec = pod_spec(submit(script("--gpus-per-node=a100:2"), mapping=mapping))
    assert spec["nodeSelector"] == {"nvidia.com/gpu.product": "A100"}


@pytest.mark.parametrize(
    ("text", "seconds"), [("15", 900), ("1:30", 120), ("02:00:00", 7200), ("1-00", 86400)]
)
def test_time_limit_sets_the_deadline_and_the_runtime_estimate(text: str, seconds: int) -> None:
    objs = submit(script(f"-t {text}"))
    assert job(objs)["spec"]["activeDeadlineSeconds"] == seconds
    assert annotations(objs)["kubehpc.io/runtime-estimate-seconds"] == str(seconds)


def test_an_unlimited_job_has_no_deadline() -> None:
    assert "activeDeadlineSeconds" not in job(submit(script("-t UNLIMITED")))["spec"]


def test_a_partition_is_the_local_queue_of_the_same_name_by_default() -> None:
    assert job(submit(script("-p gpu")))["metadata"]["labels"][QUEUE_LABEL] == "gpu"


def test_the_mapping_names_a_partitions_queue_default_time_and_memory() -> None:
    mapping = parse_mapping(
        {
            "defaultPartition": "batch",
            "partitions": {"batch": {"localQueue": "lq-batch", "defaultTime": 30, "defMemPerCpu": 2048}},
        },
        "m",
    )
    objs = submit(script("-n 2"), mapping=mapping)
    assert job(objs)["metadata"]["labels"][QUEUE_LABEL] == "lq-batch"
    assert job(objs)["spec"]["activeDeadlineSeconds"] == 1800
    assert requests(objs)["memory"] == "4Gi"
    assert env(objs)["SLURM_JOB_PARTITION"] == "batch"


def test_qos_is_a_priority_class_by_default_or_as_mapped() -> None:
    assert pod_spec(submit(script("-q high")))["priorityClassName"] == "high"
    mapping = parse_mapping({"qos": {"high": {"workloadPriorityClass": "wpc-high"}}}, "m")
    objs = submit(script("-q high"), mapping=mapping)
    assert job(objs)["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == "wpc-high"
    assert "priorityClassName" not in pod_spec(objs)


def test_account_is_recorded_and_exported() -> None:
    objs = submit(script("-A proj1"))
    assert annotations(objs)["slurm.kubehpc.io/account"] == "proj1"
    assert env(objs)["SLURM_JOB_ACCOUNT"] == "proj1"


@pytest.mark.parametrize("directive", ["--exclusive", "--mem=0"])
def test_exclusive_and_all_memory_request_the_whole_node(directive: str) -> None:
    objs = submit(script(directive))
    anti = pod_spec(objs)["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti == [{"labelSelector": {}, "namespaceSelector": {}, "topologyKey": "kubernetes.io/hostname"}]
    assert "memory" not in requests(objs)


def _terms(objs: list[Obj]) -> list[list[tuple[str, str, tuple[str, ...]]]]:
    affinity = pod_spec(objs)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    return [
        [(e["key"], e["operator"], tuple(e["values"])) for e in t["matchExpressions"]]
        for t in affinity["nodeSelectorTerms"]
    ]


F = "feature.slurm.kubehpc.io/"


@pytest.mark.parametrize(
    ("constraint", "terms"),
    [
        ("gpu", [[(F + "gpu", "In", ("true",))]]),
        ("a&b", [[(F + "a", "In", ("true",)), (F + "b", "In", ("true",))]]),
        ("a|b", [[(F + "a", "In", ("true",))], [(F + "b", "In", ("true",))]]),
        (
            "(a|b)&c",
            [
                [(F + "a", "In", ("true",)), (F + "c", "In", ("true",))],
                [(F + "b", "In", ("true",)), (F + "c", "In", ("true",))],
            ],
        ),
        ("[v100|a100]", [[(F + "v100", "In", ("true",))], [(F + "a100", "In", ("true",))]]),
    ],
)
def test_constraints_become_node_affinity_with_and_within_and_or_across_terms(
    constraint: str, terms: list[list[tuple[str, str, tuple[str, ...]]]]
) -> None:
    assert _terms(submit(script(f"-C '{constraint}'"))) == terms


def test_a_feature_count_in_a_constraint_is_an_error_naming_the_line() -> None:
    with pytest.raises(SbatchError, match=r"line 2: --constraint: .*counts"):
        submit(script("-C 'a*2'"))


def test_nodelist_and_exclude_pin_and_avoid_host_names() -> None:
    terms = _terms(submit(script("-w node[1-2]", "-x node3", "-C a")))
    assert terms == [
        [
            ("kubernetes.io/hostname", "In", ("node1", "node2")),
            ("kubernetes.io/hostname", "NotIn", ("node3",)),
            (F + "a", "In", ("true",)),
        ]
    ]


def test_a_multi_node_job_is_a_gang_of_pods_with_a_headless_service() -> None:
    objs = submit(script("-N 3", "--ntasks-per-node=2"))
    spec = job(objs)["spec"]
    assert (spec["completions"], spec["parallelism"]) == (3, 3)
    assert spec["successPolicy"] == {"rules": [{"succeededIndexes": "0"}]}
    assert spec["template"]["spec"]["subdomain"] == "slurm-100"
    svc = kind(objs, "Service")
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["selector"] == {
        "slurm.kubehpc.io/job-id": "100"
    }
    e = env(objs)
    assert (e["SLURM_JOB_NODELIST"], e["SLURM_NNODES"], e["SLURM_NTASKS"]) == ("slurm-100-[0-2]", "3", "6")
    assert (e["SLURM_TASKS_PER_NODE"], e["SLURM_NTASKS_PER_NODE"]) == ("2(x3)", "2")


def test_a_node_range_uses_the_minimum_and_says_so() -> None:
    from slurmkit import request

    req = request(script("-N 2-4"))
    assert req.nodes == 2 and any("2-4" in w for w in req.warnings)


@pytest.mark.parametrize(
    ("array", "completions", "parallelism", "runs", "env_expect"),
    [
        ("0-2", 3, 3, "0:3:1", {"SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "2"}),
        ("1-5", 5, 5, "1:5:1", {"SLURM_ARRAY_TASK_COUNT": "5"}),
        ("0-15:4", 4, 4, "0:4:4", {"SLURM_ARRAY_TASK_STEP": "4", "SLURM_ARRAY_TASK_MAX": "12"}),
        ("0-15%4", 16, 4, "0:16:1", {"SLURM_ARRAY_TASK_COUNT": "16"}),
        ("500-17000:1000%26", 17, 17, "500:17:1000", {"SLURM_ARRAY_TASK_MAX": "16500"}),
        ("1,3,5-6", 4, 4, "1:3:2,6:1:1", {"SLURM_ARRAY_TASK_MIN": "1"}),
        ("7", 1, 1, "7:1:1", {"SLURM_ARRAY_TASK_COUNT": "1"}),
    ],
)
def test_arrays_are_indexed_jobs_with_the_throttle_as_parallelism(
    array: str, completions: int, parallelism: int, runs: str, env_expect: dict[str, str]
) -> None:
    objs = submit(script(f"--array={array}"))
    spec = job(objs)["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimitPerIndex"]) == (
        completions,
        parallelism,
        0,
    )
    e = env(objs)
    assert e["KUBEHPC_SLURM_ARRAY_TASKS"] == runs
    assert e["SLURM_ARRAY_JOB_ID"] == "100"
    assert env_expect.items() <= e.items()
    assert "SLURM_JOB_NODELIST" not in e  # per task, set by the runner


@pytest.mark.parametrize("array", ["5-1", "a-b", "1-5%0", "0-10:0", ""])
def test_a_bad_array_is_an_error_naming_the_line(array: str) -> None:
    with pytest.raises(SbatchError, match=r"line 2: --array: invalid array"):
        submit(script(f"--array={array}"))


@pytest.mark.parametrize(
    ("dependency", "normalised"),
    [
        ("afterok:5", "afterok:5"),
        ("afterany:5:6", "afterany:5:6"),
        ("afternotok:5", "afternotok:5"),
        ("after:5", "after:5"),
        ("after:5+10", "after:5+10"),
        ("afterok:5_3", "afterok:5_3"),
        ("singleton", "singleton"),
        ("aftercorr:5", "aftercorr:5"),
        ("afterok:5,afterany:6", "afterok:5,afterany:6"),
        ("afterok:5?afternotok:6", "afterok:5?afternotok:6"),
        ("5", "afterany:5"),
    ],
)
def test_a_dependency_holds_the_job_outside_any_queue(dependency: str, normalised: str) -> None:
    objs = submit(script("-p batch", f"--dependency={dependency}"))
    meta = job(objs)["metadata"]
    assert job(objs)["spec"]["suspend"] is True
    assert QUEUE_LABEL not in meta["labels"]
    assert meta["annotations"]["slurm.kubehpc.io/queue-name"] == "batch"
    assert meta["annotations"]["slurm.kubehpc.io/hold"] == "Dependency"
    assert meta["annotations"]["slurm.kubehpc.io/dependency"] == normalised


@pytest.mark.parametrize(
    "dependency", ["afterwards:5", "afterok:x", "afterok:5,afterok:6?afterok:7", "afterok:5+3"]
)
def test_a_bad_dependency_is_an_error_naming_the_line(dependency: str) -> None:
    with pytest.raises(SbatchError, match=r"line 2: --dependency: invalid dependency"):
        submit(script(f"--dependency={dependency}"))


def test_hold_creates_the_job_suspended_with_the_user_hold_reason() -> None:
    objs = submit(script("--hold"))
    assert job(objs)["spec"]["suspend"] is True
    assert annotations(objs)["slurm.kubehpc.io/hold"] == "JobHeldUser"


def test_a_future_begin_time_holds_the_job_and_a_past_one_does_not() -> None:
    later = submit(script("--begin=now+1hour"))
    assert annotations(later)["slurm.kubehpc.io/begin"] == "2026-12-02T13:00:00Z"
    assert annotations(later)["slurm.kubehpc.io/hold"] == "BeginTime"
    assert "suspend" not in job(submit(script("--begin=now")))["spec"]


def test_releasing_a_held_job_restores_its_queue_and_resumes_it_where_no_kueue_runs() -> None:
    held = job(submit(script("-p batch", "--hold")))
    patch = release_patch(held, kueue_manages=False)
    assert patch["metadata"]["labels"] == {QUEUE_LABEL: "batch"}
    assert patch["spec"] == {"suspend": False}
    assert "spec" not in release_patch(held, kueue_manages=True)


def test_nice_is_recorded_with_slurms_default_of_100() -> None:
    assert annotations(submit(script("--nice")))["slurm.kubehpc.io/nice"] == "100"
    assert annotations(submit(script("--nice=-5")))["slurm.kubehpc.io/nice"] == "-5"


def test_chdir_sets_the_working_directory_absolute_or_relative_to_the_submit_dir() -> None:
    assert container(submit(script("-D /scratch/x")))["workingDir"] == "/scratch/x"
    assert container(submit(script("-D .")))["workingDir"] == "/home/alice/run"
    assert container(submit(script("-D sub/dir")))["workingDir"] == "/home/alice/run/sub/dir"
    assert env(submit(script("-D /x")))["SLURM_SUBMIT_DIR"] == "/home/alice/run"


def test_output_error_input_and_open_mode_reach_the_runner() -> None:
    e = env(submit(script("-o out-%j.txt", "-e err-%j.txt", "-i in.txt", "--open-mode=append")))
    assert (e["KUBEHPC_SLURM_OUTPUT"], e["KUBEHPC_SLURM_ERROR"]) == ("out-%j.txt", "err-%j.txt")
    assert (e["KUBEHPC_SLURM_INPUT"], e["KUBEHPC_SLURM_OPEN_MODE"]) == ("in.txt", "append")


def test_default_output_names_are_slurms() -> None:
    assert env(submit(script()))["KUBEHPC_SLURM_OUTPUT"] == "slurm-%j.out"
    assert env(submit(script("-a 1-2")))["KUBEHPC_SLURM_OUTPUT"] == "slurm-%A_%a.out"


SUBMIT_ENV = {"HOME": "/home/alice", "FOO": "1", "BAR": "2", "SLURM_JOB_ID": "999", "KUBECONFIG": "/k"}


@pytest.mark.parametrize(
    ("export", "present", "absent"),
    [
        (None, {"HOME": "/home/alice", "FOO": "1", "BAR": "2"}, ["KUBECONFIG"]),
        ("ALL", {"FOO": "1"}, ["KUBECONFIG"]),
        ("NONE", {}, ["FOO", "HOME", "BAR"]),
        ("FOO", {"FOO": "1"}, ["BAR", "HOME"]),
        ("ALL,FOO=x,NEW=y", {"FOO": "x", "NEW": "y", "BAR": "2"}, []),
        ("NONE,BAR", {"BAR": "2"}, ["FOO"]),
    ],
)
def test_export_chooses_what_the_job_gets_from_the_submit_environment(
    export: str | None, present: dict[str, str], absent: list[str]
) -> None:
    directives = (f"--export={export}",) if export else ()
    e = env(submit(script(*directives), env=SUBMIT_ENV))
    assert present.items() <= e.items()
    assert not set(absent) & set(e)
    assert e["SLURM_JOB_ID"] == "100"  # never the submitting shell's


@pytest.mark.parametrize(
    ("directives", "expected"),
    [
        (
            (),
            {
                "SLURM_JOB_ID": "100",
                "SLURM_JOB_NAME": "job.sh",
                "SLURM_NNODES": "1",
                "SLURM_TASKS_PER_NODE": "1",
            },
        ),
        (("-n 3",), {"SLURM_NTASKS": "3", "SLURM_NPROCS": "3"}),
        (("-c 4",), {"SLURM_CPUS_PER_TASK": "4", "SLURM_CPUS_ON_NODE": "4"}),
        (("--gres=gpu:2",), {"SLURM_GPUS_ON_NODE": "2"}),
        (("--mem=2G",), {"SLURM_MEM_PER_NODE": "2048"}),
        (("-n 5", "-N 2"), {"SLURM_TASKS_PER_NODE": "3,2", "SLURM_NTASKS": "5"}),
        (
            (),
            {"SLURM_SUBMIT_DIR": "/home/alice/run", "SLURM_SUBMIT_HOST": "login1", "SLURM_JOB_USER": "alice"},
        ),
        ((), {"SLURM_JOB_NODELIST": "slurm-100-0", "SLURM_CLUSTER_NAME": "kubehpc"}),
    ],
)
def test_the_slurm_environment_is_set_in_the_pod(
    directives: tuple[str, ...], expected: dict[str, str]
) -> None:
    assert expected.items() <= env(submit(script(*directives))).items()


def test_the_task_count_is_in_the_environment_only_when_asked_for_as_in_sbatch() -> None:
    assert "SLURM_NTASKS" not in env(submit(script("-N 2")))
    assert env(submit(script("-N 2", "--ntasks-per-node=3")))["SLURM_NTASKS"] == "6"


def test_recorded_options_are_kept_on_the_job() -> None:
    recorded = json.loads(
        annotations(submit(script("--mail-type=ALL")))["slurm.kubehpc.io/unsupported-options"]
    )
    assert recorded == [
        {"option": "mail-type", "value": "ALL", "where": "job.sh: line 2", "why": "no mail is sent"}
    ]


def test_arrays_of_multi_node_jobs_are_refused_clearly() -> None:
    with pytest.raises(SbatchError, match="arrays of multi-node jobs"):
        submit(script("-N 2", "-a 1-3"))


def test_a_job_without_a_partition_runs_in_the_default_one_as_its_environment_says() -> None:
    assert env(submit(script("-n 2")))["SLURM_JOB_PARTITION"] == "default"
