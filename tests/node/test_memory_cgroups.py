"""Memory limits through cgroup v2 where the host delegates it, checked against a cgroup2-shaped
directory tree (the files the kernel provides are plain files here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubehpc.node.cgroups import MemoryCgroups
from kubehpc.node.runner import CpuPool, LaunchSpec, Runner

MIB = 1024 * 1024
LIMIT = 64 * MIB


class FakeCgroup2:
    """<root> with the agent in /user.slice/agent.scope; user.slice offers memory to children."""

    def __init__(self, tmp_path: Path, subtree: str = "cpu memory", unified: bool = True):
        self.root = tmp_path / "cgroup"
        self.parent = self.root / "user.slice"
        (self.parent / "agent.scope").mkdir(parents=True)
        if unified:
            (self.root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
        (self.root / "cgroup.subtree_control").write_text("cpu memory\n")
        (self.parent / "cgroup.controllers").write_text("cpu memory\n")
        (self.parent / "cgroup.subtree_control").write_text(subtree + "\n")
        (self.parent / "cgroup.procs").write_text("")
        self.self_cgroup = tmp_path / "self_cgroup"
        self.self_cgroup.write_text("0::/user.slice/agent.scope\n")

    def probe(self) -> MemoryCgroups | None:
        return MemoryCgroups.probe(self.root, self.self_cgroup)

    def container_dir(self, cid: str) -> Path:
        return self.parent / "kubehpc" / cid.replace("/", "-")


@pytest.fixture
def fake(tmp_path) -> FakeCgroup2:
    return FakeCgroup2(tmp_path)


@pytest.fixture
def runner(tmp_path, fake) -> Runner:
    cgroups = fake.probe()
    assert cgroups is not None
    return Runner(tmp_path / "state", CpuPool(), cgroups)


def launch(tmp_path: Path, cid: str, script: str, *args: str, memory: int | None = LIMIT) -> LaunchSpec:
    return LaunchSpec(
        cid,
        ["sh", "-c", script, "sh", *args],
        {"PATH": "/usr/bin:/bin"},
        tmp_path,
        tmp_path / "logs" / f"{cid.replace('/', '_')}.log",
        memory_bytes=memory,
    )


def test_a_delegated_cgroup2_parent_gets_a_kubehpc_group_beside_the_agent_with_memory_enabled(fake):
    cgroups = fake.probe()
    assert cgroups is not None and cgroups.base == fake.parent / "kubehpc"
    assert (fake.parent / "kubehpc" / "cgroup.subtree_control").read_text() == "+memory"


def test_without_a_cgroup2_root_memory_cgroups_are_not_used(tmp_path):
    assert FakeCgroup2(tmp_path, unified=False).probe() is None


def test_a_parent_that_does_not_offer_memory_to_its_children_is_not_used(tmp_path):
    assert FakeCgroup2(tmp_path, subtree="cpu pids").probe() is None


def test_a_process_without_a_unified_cgroup_entry_does_not_use_cgroups(fake):
    fake.self_cgroup.write_text("9:memory:/user.slice\n1:name=systemd:/\n")
    assert fake.probe() is None


def test_a_container_with_a_memory_limit_joins_its_own_cgroup_with_memory_max_before_exec(
    runner, tmp_path, fake
):
    cg = fake.container_dir("u/a")
    s = launch(tmp_path, "u/a", 'cat "$1/memory.max"; echo; cat "$1/cgroup.procs"', str(cg))
    runner.wait(runner.start(s), 10)
    assert s.log_path.read_text() == f"{LIMIT}\n0"


def test_swap_is_turned_off_where_the_cgroup_accounts_swap(runner, tmp_path, fake):
    cg = fake.container_dir("u/a")
    cg.mkdir(parents=True)
    (cg / "memory.swap.max").write_text("max")
    s = launch(tmp_path, "u/a", 'cat "$1/memory.swap.max"', str(cg))
    runner.wait(runner.start(s), 10)
    assert s.log_path.read_text() == "0"


def test_a_container_in_a_memory_cgroup_gets_no_data_rlimit(runner, tmp_path):
    s = launch(tmp_path, "u/a", "grep 'Max data size' /proc/self/limits")
    runner.wait(runner.start(s), 10)
    assert str(LIMIT) not in s.log_path.read_text()


def test_a_container_without_a_memory_limit_gets_no_cgroup(runner, tmp_path, fake):
    proc = runner.start(launch(tmp_path, "u/a", "true", memory=None))
    runner.wait(proc, 10)
    assert proc.cgroup == "" and not fake.container_dir("u/a").exists()


def test_the_cgroup_is_removed_after_the_container_ends(runner, tmp_path, fake):
    proc = runner.start(launch(tmp_path, "u/a", "true"))
    assert proc.cgroup == str(fake.container_dir("u/a"))
    runner.wait(proc, 10)
    assert not fake.container_dir("u/a").exists()


def test_an_oom_kill_recorded_in_memory_events_ends_the_container_as_oom_killed(runner, tmp_path, fake):
    # The kernel's part, played by the container: count an OOM kill, then die of SIGKILL.
    cg = fake.container_dir("u/a")
    script = 'printf "low 0\\nhigh 0\\nmax 3\\noom 1\\noom_kill 1\\n" > "$1/memory.events"; kill -9 $$'
    ex = runner.wait(runner.start(launch(tmp_path, "u/a", script, str(cg))), 10)
    assert ex is not None and (ex.exit_code, ex.reason) == (137, "OOMKilled")


def test_a_failure_without_an_oom_kill_stays_an_error(runner, tmp_path, fake):
    cg = fake.container_dir("u/a")
    script = 'printf "oom 0\\noom_kill 0\\n" > "$1/memory.events"; exit 1'
    ex = runner.wait(runner.start(launch(tmp_path, "u/a", script, str(cg))), 10)
    assert ex is not None and (ex.exit_code, ex.reason) == (1, "Error")
