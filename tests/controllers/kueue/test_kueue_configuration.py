"""Kueue's Configuration (``kubehpc up --kueue-config``): fair sharing turned on as Kueue users
turn it on, and every setting kubehpc does not carry out refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest
from kueuekit import KueueCluster, cluster_queue, flavor, local_queue, queued_job

from kubehpc.controllers.kueue.configuration import ConfigurationError, read_configuration
from kubehpc.runtime.controlplane import kueue_config_of
from kubehpc.sched.admission import AdmissionConfig, FairSharingStrategy
from kubehpc.store.home import Home

CONFIGURATION = """\
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
health:
  healthProbeBindAddress: :8081
metrics:
  bindAddress: :8080
webhook:
  port: 9443
leaderElection:
  leaderElect: true
fairSharing:
  enable: true
  preemptionStrategies: [LessThanOrEqualToFinalShare]
"""

# What Kueue's install manifests ship: the Configuration inside the manager's ConfigMap.
CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: kueue-manager-config
  namespace: kueue-system
data:
  controller_manager_config.yaml: |
    apiVersion: config.kueue.x-k8s.io/v1beta1
    kind: Configuration
    namespace: kueue-system
    fairSharing:
      enable: true
"""


def home_with(tmp_path: Path, text: str) -> Home:
    home = Home(tmp_path / "home").ensure()
    home.kueue_config_path.write_text(text)
    return home


def test_the_configurations_fair_sharing_and_its_strategies_reach_the_admission_core(tmp_path: Path) -> None:
    config = kueue_config_of(home_with(tmp_path, CONFIGURATION))
    assert config.fair_sharing is True
    assert config.fair_sharing_strategies == (FairSharingStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,)


def test_the_configuration_inside_kueues_manager_configmap_is_read_with_kueues_default_strategies(
    tmp_path: Path,
) -> None:
    config = kueue_config_of(home_with(tmp_path, CONFIGMAP))
    assert config.fair_sharing is True
    assert config.fair_sharing_strategies == AdmissionConfig().fair_sharing_strategies


def test_without_a_configuration_fair_sharing_is_off_as_in_kueue(tmp_path: Path) -> None:
    assert kueue_config_of(Home(tmp_path / "home").ensure()) == AdmissionConfig()


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            CONFIGURATION + "waitForPodsReady:\n  enable: true\n",
            "document 1: waitForPodsReady is not supported",
        ),
        (
            CONFIGURATION.replace("LessThanOrEqualToFinalShare", "Fairest"),
            "document 1: fairSharing.preemptionStrategies: each must be one of",
        ),
        (
            CONFIGURATION.replace("enable: true", "enable: yes please"),
            "fairSharing.enable: must be true or false",
        ),
        ("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n", "kind 'Namespace' is neither Kueue's"),
        (CONFIGURATION + "---\n" + CONFIGURATION, "want one Kueue Configuration, found 2"),
        (
            CONFIGMAP.replace("fairSharing:\n      enable: true", "admissionFairSharing: {}"),
            "(ConfigMap data.controller_manager_config.yaml): admissionFairSharing is not supported",
        ),
    ],
)
def test_a_setting_kubehpc_does_not_carry_out_is_refused_naming_the_file_and_field(
    tmp_path: Path, text: str, error: str
) -> None:
    path = tmp_path / "kueue.yaml"
    path.write_text(text)
    with pytest.raises(ConfigurationError) as info:
        read_configuration(path)
    assert str(info.value).startswith(str(path))
    assert error in str(info.value)


def borrowers(config: AdmissionConfig) -> KueueCluster:
    """A cohort whose 4 cpu all belong to a lender; team-a and team-b own nothing and borrow.
    team-a runs four 1-cpu Jobs on borrowed quota; then team-b asks for 2 cpu."""
    k = KueueCluster(config=config)
    reclaim = {"reclaimWithinCohort": "Any"}
    k.create(
        flavor("default-flavor"),
        cluster_queue("lender", {"default-flavor": {"cpu": 4}}, cohort="co"),
        cluster_queue("team-a", {"default-flavor": {"cpu": 0}}, cohort="co", preemption=reclaim),
        cluster_queue("team-b", {"default-flavor": {"cpu": 0}}, cohort="co", preemption=reclaim),
        local_queue("a-queue", "team-a"),
        local_queue("b-queue", "team-b"),
    )
    k.submit(*(queued_job(f"a{i}", "a-queue") for i in range(4)))
    k.submit(queued_job("b", "b-queue", parallelism=2))
    return k


def suspended(k: KueueCluster, name: str) -> bool:
    return bool(k.job(name)["spec"].get("suspend"))


def test_with_fair_sharing_on_a_borrower_reclaims_from_the_queue_with_the_higher_share(
    tmp_path: Path,
) -> None:
    k = borrowers(kueue_config_of(home_with(tmp_path, CONFIGMAP)))
    assert not suspended(k, "b")
    assert sorted(suspended(k, f"a{i}") for i in range(4)) == [False, False, True, True]


def test_with_kueues_defaults_a_borrower_cannot_take_from_another_borrower(tmp_path: Path) -> None:
    k = borrowers(kueue_config_of(Home(tmp_path / "home").ensure()))
    assert suspended(k, "b")
    assert not any(suspended(k, f"a{i}") for i in range(4))
